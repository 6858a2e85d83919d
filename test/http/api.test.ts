import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { rawRequest } from '../support/raw-http.js'

// Expected bodies are byte-for-byte the reference's (test/fixtures/cnri_hdlproxy_9.2.0_probe.txt, first probe).
const ADMIN =
  '{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}'
const PLAIN_URL =
  '{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}'
const JSON_TYPE = 'application/json;charset=utf-8'

describe('/api/handles (behaviour.md §7)', () => {
  it.each([
    ['/api/handles/10.5555/plain', 200, `{"responseCode":1,"handle":"10.5555/plain","values":[${ADMIN},${PLAIN_URL}]}`],
    [
      '/api/handles/10.5555/PLAIN?type=URL',
      200,
      '{"responseCode":1,"handle":"10.5555/PLAIN","values":[{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
    ],
    [
      '/api/handles/10.5555/multi?index=2',
      200,
      '{"responseCode":1,"handle":"10.5555/multi","values":[{"index":2,"type":"URL","data":{"format":"string","value":"http://example.org/second"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
    ],
    ['/api/handles/10.5555/nonexistent', 404, '{"responseCode":100,"handle":"10.5555/nonexistent"}'],
    [
      '/api/handles/10.5555/alias',
      200,
      `{"responseCode":1,"handle":"10.5555/alias","values":[${ADMIN},{"index":1,"type":"HS_ALIAS","data":{"format":"string","value":"10.5555/plain"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}`
    ],
    ['/api/handles/10.5555%2Fplain', 200, `{"responseCode":1,"handle":"10.5555/plain","values":[${ADMIN},${PLAIN_URL}]}`],
    [
      '/api/handles/10.5555/plain?index=1&type=HS_ADMIN',
      200,
      `{"responseCode":1,"handle":"10.5555/plain","values":[${ADMIN},${PLAIN_URL}]}`
    ],
    ['/api/handles/10.5555/plain?index=999', 200, '{"responseCode":200,"values":[],"handle":"10.5555/plain"}'],
    ['/api/handles/10.5555/plain?type=EMAIL', 200, '{"responseCode":200,"values":[],"handle":"10.5555/plain"}'],
    ['/api/handles/', 400, '{"responseCode":102,"message":"Empty handle invalid"}'],
    ['/api/handles/10.5555/plain?index=x', 400, '{"responseCode":4,"message":"java.lang.NumberFormatException: For input string: \\"x\\""}']
  ])('%s answers %i with the reference JSON', async (url, status, body) => {
    const { app } = await setup()
    const res = await app.inject({ url })
    expect(res.statusCode).toBe(status)
    expect(res.headers['content-type']).toBe(JSON_TYPE)
    expect(res.body).toBe(body)
  })

  it('type and index combine as a union', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555/multi?type=URL&type=EMAIL' })
    expect(res.json().values.map((v: { index: number }) => v.index)).toEqual([1, 2, 3])
  })

  it('a trailing dot in type is a prefix match', async () => {
    const { app } = await setup({
      records: { '10.1/t': [str(1, 'URL', 'http://a'), str(2, 'URL.mobile', 'http://m'), str(3, 'EMAIL', 'x@y')] }
    })
    const res = await app.inject({ url: '/api/handles/10.1/t?type=URL.' })
    expect(res.json().values.map((v: { index: number }) => v.index)).toEqual([1, 2])
  })

  it('?pretty indents by two spaces as the reference does', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555/hash%23frag?pretty' })
    expect(res.body).toBe(
      JSON.stringify(
        {
          responseCode: 1,
          handle: '10.5555/hash#frag',
          values: [
            JSON.parse(ADMIN),
            {
              index: 1,
              type: 'URL',
              data: { format: 'string', value: 'http://example.org/hash' },
              ttl: 86400,
              timestamp: '2026-11-22T10:39:19Z'
            }
          ]
        },
        null,
        2
      )
    )
  })

  it('?callback answers JSONP as application/javascript', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555/plain?callback=cb' })
    expect(res.headers['content-type']).toBe('application/javascript;charset=utf-8')
    expect(res.body).toBe(`cb({"responseCode":1,"handle":"10.5555/plain","values":[${ADMIN},${PLAIN_URL}]});`)
  })

  it('a hostile callback name is sanitised', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555/plain?callback=alert(document.cookie);x' })
    expect(res.body.startsWith('alert_document_cookie__x({')).toBe(true)
  })

  it('the API does not follow aliases and does not strip doi:', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/api/handles/doi:10.5555/plain' })
    expect(upstream.seen.at(-1)?.handle).toBe('doi:10.5555/plain')
  })

  it('a prefix alone returns the prefix record', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555' })
    expect(res.statusCode).toBe(200)
    expect(res.json().values.some((v: { type: string }) => v.type === 'HS_SERV')).toBe(true)
  })

  it('answers from the same cache as the redirects', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/plain' })
    const res = await app.inject({ url: '/api/handles/10.5555/plain' })
    expect(res.headers['x-cache']).toBe('HIT')
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('auth=true bypasses the cache; auth=no does not', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/api/handles/10.5555/plain' })
    expect((await app.inject({ url: '/api/handles/10.5555/plain?auth=no' })).headers['x-cache']).toBe('HIT')
    expect((await app.inject({ url: '/api/handles/10.5555/plain?auth=true' })).headers['x-cache']).toBe('BYPASS')
    expect(upstream.count('10.5555/plain')).toBe(2)
  })

  it('cert bypasses the cache too, and is passed on upstream; cert=false does not', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/api/handles/10.5555/plain' })
    expect((await app.inject({ url: '/api/handles/10.5555/plain?cert=false' })).headers['x-cache']).toBe('HIT')
    expect((await app.inject({ url: '/api/handles/10.5555/plain?cert' })).headers['x-cache']).toBe('BYPASS')
    expect(upstream.count('10.5555/plain')).toBe(2)
    expect(upstream.requestsFor('10.5555/plain').at(-1)?.path).toBe('/api/handles/10.5555/plain?cert=true')
  })

  it('fields the upstream sends that we do not know pass through untouched', async () => {
    const value = {
      index: 1,
      type: 'URL',
      data: { format: 'string', value: 'http://a' },
      ttl: 86400,
      timestamp: '2026-01-01T00:00:00Z',
      futureField: { x: [1, 2] }
    }
    const { app } = await setup({ records: { '10.1/f': [value] } })
    const res = await app.inject({ url: '/api/handles/10.1/f' })
    expect(res.json().values[0].futureField).toEqual({ x: [1, 2] })
  })

  it('an upstream failure is responseCode 2 with a clear message and 502', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 500 }
    const res = await app.inject({ url: '/api/handles/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toEqual({
      responseCode: 2,
      message:
        'The DOI registry is having trouble right now and answered with an error. This is usually brief: please try again in a minute.',
      handle: '10.5555/plain'
    })
  })

  it('an upstream timeout is responseCode 2 and 504', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 200 } })
    upstream.mode = { kind: 'hang' }
    const res = await app.inject({ url: '/api/handles/10.5555/plain' })
    expect(res.statusCode).toBe(504)
    expect(res.json().responseCode).toBe(2)
  })

  it('HEAD answers like GET without a body', async () => {
    const { app } = await setup()
    const res = await app.inject({ method: 'HEAD', url: '/api/handles/10.5555/plain' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe('')
  })

  it('a path that is not valid UTF-8 is a 400 in JSON', async () => {
    const { app } = await setup()
    const res = await rawRequest(app, '/api/handles/10.5555/%C3%28')
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body).responseCode).toBe(102)
  })

  it('any other /api/ path is 404 with responseCode 4', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/xyz' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toBe('{"responseCode":4,"message":"Unknown HTTP API endpoint GET /api/xyz"}')
  })

  it('CORS is open on the API', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555/plain', headers: { origin: 'https://x.example' } })
    expect(res.headers['access-control-allow-origin']).toBe('*')
  })

  it('/api/openapi.json describes the API', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/openapi.json' })
    expect(res.statusCode).toBe(200)
    const doc = res.json()
    expect(doc.openapi).toBe('3.1.0')
    expect(Object.keys(doc.paths)).toEqual(['/api/handles/{handle}', '/api/batch', '/doiRA/{dois}', '/api/cache/{doi}'])
  })
})

describe('Which RA? (behaviour.md R8)', () => {
  const records = {
    '10.5555/plain': [str(1, 'URL', 'http://example.org/plain')],
    10.5555: [admin(), str(2, 'HS_SERV', '10.SERV/CROSSREF')],
    '10.5281/zenodo.1': [str(1, 'URL', 'https://zenodo.org/record/1')],
    10.5281: [
      admin(),
      str(1, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA>10.SERV/DATACITE</DOI.RA></HS_NAMESPACE>'),
      str(2, 'HS_SERV', '10.SERV/DEFAULT')
    ],
    '10.7777/x': [str(1, 'URL', 'http://example.org/x')],
    10.7777: [admin(), str(2, 'HS_SERV', '10.SERV/NEWRA')]
  }

  it("answers each DOI's RA in input order, pretty-printed", async () => {
    const { app } = await setup({ records })
    const res = await app.inject({ url: '/doiRA/10.5555/plain,10.5281/zenodo.1,notADoi,10.5555/missing,10.7777/x' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.json()).toEqual([
      { DOI: '10.5555/plain', RA: 'Crossref' },
      { DOI: '10.5281/zenodo.1', RA: 'DataCite' },
      { DOI: 'notADoi', status: 'Invalid DOI' },
      { DOI: '10.5555/missing', status: 'DOI does not exist' },
      { DOI: '10.7777/x', status: 'Unknown' }
    ])
    expect(res.body).toContain('\n  {\n    "DOI": "10.5555/plain",\n    "RA": "Crossref"\n  }')
  })

  it('/ra/ is a synonym, and a prefix alone works', async () => {
    const { app } = await setup({ records })
    expect((await app.inject({ url: '/ra/10.5555' })).json()).toEqual([{ DOI: '10.5555', RA: 'Crossref' }])
  })

  it('a configured name table names other RAs', async () => {
    const { app } = await setup({ records, overrides: { raNames: { NEWRA: 'New Agency' } } })
    expect((await app.inject({ url: '/ra/10.7777/x' })).json()).toEqual([{ DOI: '10.7777/x', RA: 'New Agency' }])
  })

  it('each DOI is percent-decoded after the split, so %2C stays inside a DOI', async () => {
    const { app, upstream } = await setup({ records })
    await app.inject({ url: '/doiRA/10.5555/a%2Cb' })
    expect(upstream.seen.some((r) => r.handle === '10.5555/a,b')).toBe(true)
  })

  it('more DOIs than the maximum is a 400', async () => {
    const { app } = await setup({ records, overrides: { raMaxDois: 3 } })
    const res = await app.inject({ url: '/doiRA/10.1/a,10.1/b,10.1/c,10.1/d' })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toContain('At most 3')
  })

  it('an upstream failure for one DOI makes that entry Unknown, not the whole answer', async () => {
    const { app, upstream } = await setup({ records })
    await app.inject({ url: '/doiRA/10.5555/plain' })
    upstream.mode = { kind: 'status', status: 500 }
    const res = await app.inject({ url: '/doiRA/10.5555/plain,10.5281/zenodo.1' })
    expect(res.json()).toEqual([
      { DOI: '10.5555/plain', RA: 'Crossref' },
      { DOI: '10.5281/zenodo.1', status: 'Unknown' }
    ])
  })

  it('CORS is open on Which RA?', async () => {
    const { app } = await setup({ records })
    const res = await app.inject({ url: '/doiRA/10.5555/plain', headers: { origin: 'https://x.example' } })
    expect(res.headers['access-control-allow-origin']).toBe('*')
  })
})
