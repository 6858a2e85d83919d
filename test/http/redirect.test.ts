import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { rawRequest } from '../support/raw-http.js'

// Expected answers come from the reference transcript (test/fixtures/cnri_hdlproxy_9.2.0_probe.txt)
// unless a comment names behaviour.md, where we deliberately differ.

const redirectBody = (url: string) => `<html><head><title>Handle Redirect</title></head>\n<body><a href="${url}">${url}</a></body></html>`

describe('redirects', () => {
  it.each([
    // [request path, expected Location]
    ['/10.5555/plain', 'http://example.org/plain'],
    ['/10.5555/multi', 'http://example.org/first'], // first URL value in record order
    ['/10.5555/multi?index=2', 'http://example.org/second'],
    ['/10.5555/multi?urlappend=%3Fa%3Db', 'http://example.org/first?a=b'],
    ['/10.5555/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-0', 'http://example.org/sici'],
    ['/10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0', 'http://example.org/sici'],
    ['/10.5555/hash%23frag', 'http://example.org/hash'],
    ['/10.5555/percent%2520x', 'http://example.org/percent'],
    ['/10.5555/with%20space', 'http://example.org/space'],
    ['/10.5555/caf%C3%A9', 'http://example.org/unicode'],
    ['/10.5555/trailing/', 'http://example.org/trailing'],
    ['/10.5555/query%3Fx=1', 'http://example.org/query'],
    ['/10.5555%2Fplain', 'http://example.org/plain'],
    ['/urn:doi:10.5555:plain', 'http://example.org/plain'],
    ['/doi:10.5555/plain', 'http://example.org/plain'],
    ['/hdl:10.5555/plain', 'http://example.org/plain'],
    ['/10.5555/plain?', 'http://example.org/plain'],
    ['/https://doi.org/10.5555/plain', 'http://example.org/plain'], // behaviour.md §2.4: a pasted doi.org URL
    ['/info:doi/10.5555/plain', 'http://example.org/plain']
  ])('%s redirects with 302 to %s', async (url, location) => {
    const { app } = await setup()
    const res = await app.inject({ url })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(location)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.body).toBe(redirectBody(location.replace(/&/g, '&amp;')))
  })

  // Matching a handle in another ASCII case is the registry's job (the fake upstream folds case like
  // it); ours is to keep one cache entry for every such spelling, so the upstream is asked only once.
  it('a DOI typed in another ASCII case redirects from the same cache entry, asking the upstream once', async () => {
    const { app, upstream } = await setup()
    expect((await app.inject({ url: '/10.5555/PLAIN' })).headers['x-cache']).toBe('MISS')
    for (const url of ['/10.5555/plain', '/10.5555/Plain']) {
      const res = await app.inject({ url })
      expect(res.statusCode).toBe(302)
      expect(res.headers.location).toBe('http://example.org/plain')
      expect(res.headers['x-cache']).toBe('HIT')
    }
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('a redirect carries Expires one TTL after now', async () => {
    const now = Date.parse('2026-11-22T10:39:28Z')
    const { app } = await setup({ deps: { now: () => now } })
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.headers.expires).toBe('Mon, 23 Nov 2026 10:39:28 GMT')
  })

  it('HEAD answers exactly as GET, without a body', async () => {
    const { app } = await setup()
    const get = await app.inject({ url: '/10.5555/plain' })
    const head = await app.inject({ method: 'HEAD', url: '/10.5555/plain' })
    expect(head.statusCode).toBe(302)
    expect(head.headers.location).toBe(get.headers.location)
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.body)))
    expect(head.body).toBe('')
  })

  it('a raw #fragment in the path becomes urlappend', async () => {
    const { app, upstream } = await setup()
    const res = await rawRequest(app, '/10.5555/plain#section-2')
    expect(res.status).toBe(302)
    expect(res.headers.location).toEqual(['http://example.org/plain#section-2'])
    expect(upstream.requestsFor('10.5555/plain').map((r) => r.handle)).toEqual(['10.5555/plain'])
  })

  it('a stored URL with %3C and %3E keeps its encoding in Location (html-proofer#629)', async () => {
    const stored = 'https://onlinelibrary.wiley.com/doi/10.1002/(SICI)1098-2418(199807)12:4%3C335::AID-RSA2%3E3.0.CO;2-U'
    const { app } = await setup({ records: { '10.1002/x': [str(1, 'URL', stored)] } })
    const res = await app.inject({ url: '/10.1002/x' })
    expect(res.headers.location).toBe(stored)
  })

  it('a stored URL with raw spaces, < and non-ASCII is percent-encoded as UTF-8 in Location', async () => {
    const { app } = await setup({ records: { '10.1/x': [str(1, 'URL', ' http://example.org/a b<c>é ')] } })
    const res = await app.inject({ url: '/10.1/x' })
    expect(res.headers.location).toBe('http://example.org/a%20b%3Cc%3E%C3%A9')
  })

  it('a stored URL with a non-ASCII host redirects to its Punycode form', async () => {
    const { app } = await setup({ records: { '10.1/idn': [str(1, 'URL', 'http://bücher.example/x')] } })
    const res = await app.inject({ url: '/10.1/idn' })
    expect(res.headers.location).toBe('http://xn--bcher-kva.example/x')
  })

  it('a type filter that matches no redirectable value shows the no-values page', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/multi?type=EMAIL' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('someone@example.org')
  })

  it('a type filter that matches nothing shows the values-not-found page', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/plain?type=EMAIL' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toMatch(/No Values Found/i)
  })

  it('a bad index value drops the index filter and still redirects', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/multi?index=2&index=x' })
    expect(res.headers.location).toBe('http://example.org/first')
  })

  it('a record without URL shows its values with 200', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/novalues' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('HS_ADMIN')
  })
})

describe('redirect safety (behaviour.md §4)', () => {
  it.each([['javascript:alert(1)'], ['data:text/html,<script>alert(1)</script>'], ['vbscript:msgbox(1)'], ['/relative/path']])(
    'a stored %s URL is not redirected to: the values page shows it escaped',
    async (url) => {
      const { app } = await setup({ records: { '10.1/evil': [str(1, 'URL', url)] } })
      const res = await app.inject({ url: '/10.1/evil' })
      expect(res.statusCode).toBe(200)
      expect(res.headers.location).toBeUndefined()
      expect(res.body).not.toContain('<script>alert')
      expect(res.body).not.toContain('href="javascript:')
    }
  )

  it('a stored URL with CR LF is not redirected to and injects no header', async () => {
    const { app } = await setup({ records: { '10.1/crlf': [str(1, 'URL', 'http://example.org/\r\nSet-Cookie: x=1')] } })
    const res = await app.inject({ url: '/10.1/crlf' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.headers.location).toBeUndefined()
  })

  it('a urlappend with CR LF is refused with 400', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/plain?urlappend=%0D%0ASet-Cookie:%20x=1' })
    expect(res.statusCode).toBe(400)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.body).toContain('urlappend')
  })

  it('an allowed scheme list from the config is honoured', async () => {
    const { app } = await setup({
      records: { '10.1/ftp': [str(1, 'URL', 'ftp://example.org/file')] },
      overrides: { allowedSchemes: ['https'] }
    })
    const res = await app.inject({ url: '/10.1/ftp' })
    expect(res.statusCode).toBe(200)
  })
})

describe('aliases (behaviour.md §3)', () => {
  it('an HS_ALIAS answers 301 to our own URL of the target, keeping the query, with no body', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/alias?urlappend=%3Fa%3D1', headers: { host: 'resolver.example:8000' } })
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toBe('http://resolver.example:8000/10.5555/plain?urlappend=%3Fa%3D1')
    expect(res.body).toBe('')
    expect(res.headers.expires).toBeDefined()
  })

  it('the alias redirect uses the configured public base URL behind a proxy', async () => {
    const { app } = await setup({ overrides: { publicBaseUrl: 'https://doi.library.example/resolver' } })
    const res = await app.inject({ url: '/10.5555/alias' })
    expect(res.headers.location).toBe('https://doi.library.example/resolver/10.5555/plain')
  })

  it('a shortDOI alias target is path-encoded in the 301', async () => {
    const { app } = await setup({
      records: {
        '10/p54k': [admin(), str(1, 'HS_ALIAS', '10.1021/JACS 5C#1')],
        '10.1021/JACS 5C#1': [str(1, 'URL', 'https://example.org/')]
      }
    })
    const res = await app.inject({ url: '/10/p54k' })
    expect(res.headers.location).toBe('http://localhost:80/10.1021/JACS%205C%231')
  })

  it('ignore_aliases shows the alias record itself', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/alias?ignore_aliases' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('HS_ALIAS')
  })

  it('noalias is a synonym of ignore_aliases', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/alias?noalias' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('HS_ALIAS')
  })

  it("noredirect on an alias shows the target's values", async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/alias?noredirect' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('http://example.org/plain')
    expect(res.body).not.toContain('HS_ALIAS')
  })

  it('an alias loop answers 404 "Alias chain too long"', async () => {
    const { app } = await setup({ records: { '10.1/a': [str(1, 'HS_ALIAS', '10.1/b')], '10.1/b': [str(1, 'HS_ALIAS', '10.1/a')] } })
    const res = await app.inject({ url: '/10.1/a' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('Alias chain too long')
  })

  it('a chain of 20 aliases still resolves, 21 is too long', async () => {
    const chain = (n: number) =>
      Object.fromEntries([
        ...Array.from({ length: n }, (_, i) => [`10.1/h${i}`, [str(1, 'HS_ALIAS', `10.1/h${i + 1}`)]]),
        [`10.1/h${n}`, [str(1, 'URL', 'http://example.org/end')]]
      ])
    const ok = await setup({ records: chain(20) })
    expect((await ok.app.inject({ url: '/10.1/h0' })).statusCode).toBe(301)
    const tooLong = await setup({ records: chain(21) })
    expect((await tooLong.app.inject({ url: '/10.1/h0' })).statusCode).toBe(404)
  })
})
