import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { rawRequest } from '../support/raw-http.js'

// Issue 5 item 4: throw arbitrary paths, encodings, query strings and headers at every route.
// Whatever comes in: no 500, no crash, no control character in a response header, every HTML page
// escapes what it echoes, and a JSONP callback is sanitised.

const MARKER = '<x-evil a="1">'
const HOSTILE_RECORDS = {
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/xss': [str(1, 'URL', `javascript:alert(1)//${MARKER}`), str(2, 'DESC', `${MARKER}<script>alert(1)</script>`), str(3, `T${MARKER}`, MARKER)],
  '10.5555/crlf': [str(1, 'URL', 'http://example.org/a\r\nSet-Cookie: evil=1'), str(2, '10320/headers', 'X-Evil: a\r\nSet-Cookie: evil=1')],
  '10.5555/loc': [str(1, '10320/loc', `<locations><location href="http://example.org/${MARKER}" rel="x&quot;\r\nSet-Cookie: a=1"/></locations>`)],
  10.5555: [admin()]
}

const ROUTES = ['/', '/api/handles/', '/doiRA/', '/ra/', '/api/']
const pathPiece = fc.oneof(
  fc.constantFrom('10.5555/plain', '10.5555/xss', '10.5555/crlf', '10.5555/loc', '10.5555', 'doi:', 'urn:doi:', 'https://doi.org/', '%', '%2', '%C3%28', '%FF',
    '%00', '%0D%0A', '%2F', '//', '/./', '/../', ';', '#', '?', '+', MARKER, encodeURIComponent(MARKER), '%3Cscript%3E', 'é', '%E2%80%A8'),
  fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.string({ unit: 'binary', maxLength: 8 }).map((s) => encodeURI(s).replace(/%25/g, '%'))
)
const queryPiece = fc.oneof(
  fc.constantFrom('noredirect', 'auth', 'ignore_aliases', 'action=showurls', 'action=showvalues', 'locs', 'index=x', 'index=1', 'type=URL.',
    'urlappend=%0D%0ASet-Cookie:x', `urlappend=${encodeURIComponent(MARKER)}`, 'callback=alert(1)', `callback=${encodeURIComponent(MARKER)}`,
    'pretty', 'locatt=id:1', 'country=gb', 'hdl=10.5555/plain', `hdl=${encodeURIComponent(MARKER)}`, ';;&&==', '%', 'a=%ZZ'),
  fc.tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 10 })).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
)
const request = fc.record({
  method: fc.constantFrom('GET', 'HEAD'),
  route: fc.constantFrom(...ROUTES),
  path: fc.array(pathPiece, { maxLength: 4 }).map((parts) => parts.join('/')),
  query: fc.array(queryPiece, { maxLength: 4 }).map((parts) => parts.join(fc.sample(fc.constantFrom('&', ';'), 1)[0] ?? '&')),
  accept: fc.option(fc.constantFrom('*/*', 'application/x-bibtex', 'text/html', 'garbage;;q=x', `${MARKER};q=0.5`, ''), { nil: undefined }),
  userAgent: fc.option(fc.constantFrom('Mozilla/5.0', 'curl/8', MARKER, ''), { nil: undefined }),
  host: fc.option(fc.constantFrom('resolver.example', 'evil.example:81', 'a b', `${MARKER}`), { nil: undefined })
})

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/

function checkAnswer (status: number, headers: Record<string, unknown>, body: string): void {
  expect(status).toBeLessThan(500)
  for (const [name, value] of Object.entries(headers)) {
    for (const v of [value].flat()) expect(CONTROL.test(String(v)), `header ${name}`).toBe(false)
  }
  expect(headers['set-cookie']).toBeUndefined()
  const type = String(headers['content-type'] ?? '')
  if (type.startsWith('text/html')) {
    expect(body).not.toContain('<x-evil')
    expect(body).not.toContain('<script>alert')
    expect(body).not.toMatch(/href="\s*javascript:/i)
  }
  if (type.startsWith('application/javascript') && body !== '') expect(body).toMatch(/^[A-Za-z_$\u00a0-\uffff][\w$\u00a0-\uffff]*\(|^\(/)
}

function pick (r: { method: string, route: string, path: string, query: string, accept?: string | undefined, userAgent?: string | undefined, host?: string | undefined }) {
  const headers: Record<string, string> = {}
  if (r.accept !== undefined) headers.accept = r.accept
  if (r.userAgent !== undefined) headers['user-agent'] = r.userAgent
  if (r.host !== undefined) headers.host = r.host
  return { method: r.method as 'GET' | 'HEAD', url: `${r.route}${r.path}${r.query === '' ? '' : `?${r.query}`}`, headers }
}

describe('hostile input (property-based)', () => {
  it('any path, query and header on any route: no 500, no header injection, everything escaped', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    await fc.assert(fc.asyncProperty(request, async (r) => {
      const req = pick(r)
      let res
      try {
        res = await app.inject(req)
      } catch {
        return // light-my-request refused to build the request (not a valid URL): nothing reached us
      }
      checkAnswer(res.statusCode, res.headers, res.body)
    }), { numRuns: 400 })
  })

  it('raw bytes in the request target never crash the server', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const bytes = fc.uint8Array({ minLength: 1, maxLength: 40 }).map((a) => Buffer.from(a.filter((b) => b > 0x20 && b !== 0x7f)))
    await fc.assert(fc.asyncProperty(fc.constantFrom(...ROUTES), bytes, async (route, tail) => {
      const res = await rawRequest(app, Buffer.concat([Buffer.from(route), tail]))
      expect(res.status).toBeLessThan(500)
      expect(res.status).toBeGreaterThanOrEqual(200)
    }), { numRuns: 150 })
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200)
  })
})

describe('regressions', () => {
  it('header injection through urlappend is refused', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const res = await app.inject({ url: '/10.5555/plain?urlappend=%0D%0ASet-Cookie:%20evil=1' })
    checkAnswer(res.statusCode, res.headers, res.body)
    expect(res.statusCode).toBe(400)
  })

  it('header injection through a stored URL or 10320/headers is refused', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const res = await app.inject({ url: '/10.5555/crlf' })
    checkAnswer(res.statusCode, res.headers, res.body)
    expect(res.headers['x-evil']).toBeUndefined()
  })

  it('a javascript: URL is never a redirect target nor a link', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const res = await app.inject({ url: '/10.5555/xss' })
    expect(res.statusCode).toBe(200)
    checkAnswer(res.statusCode, res.headers, res.body)
  })

  it('case and encoding variants of a DOI share one cache entry without poisoning another DOI', async () => {
    const { app, upstream } = await setup({ records: { ...HOSTILE_RECORDS, '10.5555/a b': [str(1, 'URL', 'http://example.org/space')], '10.5555/a+b': [str(1, 'URL', 'http://example.org/plus')] } })
    expect((await app.inject({ url: '/10.5555/a%20b' })).headers.location).toBe('http://example.org/space')
    expect((await app.inject({ url: '/10.5555/A%20B' })).headers.location).toBe('http://example.org/space')
    // '+' is not a space in a DOI path: a different DOI, never the cached one.
    expect((await app.inject({ url: '/10.5555/a+b' })).headers.location).toBe('http://example.org/plus')
    expect((await app.inject({ url: '/10.5555/a%2Bb' })).headers.location).toBe('http://example.org/plus')
    expect(upstream.count('10.5555/a b')).toBe(1)
  })

  it('a hostile Host header is not echoed into an alias redirect', async () => {
    const { app } = await setup({ records: { ...HOSTILE_RECORDS, '10.5555/alias': [str(1, 'HS_ALIAS', '10.5555/plain')] } })
    const res = await app.inject({ url: '/10.5555/alias', headers: { host: 'evil.example/"><script>' } })
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toBe('http://127.0.0.1:8000/10.5555/plain')
  })
})
