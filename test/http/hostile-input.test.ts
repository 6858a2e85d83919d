import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { rawRequest } from '../support/raw-http.js'

// Issue 5 item 4: throw arbitrary paths, encodings, query strings and headers at every route.
// Whatever comes in: no 500, no crash, no header the request or a record injected, every HTML page
// escapes what it echoes, and a JSONP callback is sanitised.
// Each property also counts how often its inputs reached what it checks (a stored record, an HTML page
// showing hostile values, a JSONP answer) and asserts that share, so it cannot pass on 404s alone.

const MARKER = '<x-evil a="1">'
const HOSTILE_RECORDS = {
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/xss': [
    str(1, 'URL', `javascript:alert(1)//${MARKER}`),
    str(2, 'DESC', `${MARKER}<script>alert(1)</script>`),
    str(3, `T${MARKER}`, MARKER)
  ],
  '10.5555/crlf': [str(1, 'URL', 'http://example.org/a\r\nSet-Cookie: evil=1'), str(2, '10320/headers', 'X-Evil: a\r\nSet-Cookie: evil=1')],
  '10.5555/loc': [
    str(1, '10320/loc', `<locations><location href="http://example.org/${MARKER}" rel="x&quot;\r\nSet-Cookie: a=1"/></locations>`)
  ],
  // Redirects, so its 10320/headers lines are applied: the Set-Cookie ones must never reach the client.
  '10.5555/headers': [
    str(1, 'URL', 'http://example.org/headers'),
    str(2, '10320/headers', 'Set-Cookie: evil=1\nX-Evil: a\r\nSet-Cookie: evil=2')
  ],
  10.5555: [admin()]
}
const RECORDS = Object.keys(HOSTILE_RECORDS)

const ROUTES = ['/', '/api/handles/', '/doiRA/', '/ra/', '/api/']
// '/' resolves, redirects and renders the HTML pages: it gets as many requests as the other routes together.
const route = fc.oneof({ weight: 4, arbitrary: fc.constant('/') }, { weight: 4, arbitrary: fc.constantFrom(...ROUTES.slice(1)) })
const pathPiece = fc.oneof(
  fc.constantFrom(
    ...RECORDS,
    'doi:',
    'urn:doi:',
    'https://doi.org/',
    '%',
    '%2',
    '%C3%28',
    '%FF',
    '%00',
    '%0D%0A',
    '%2F',
    '//',
    '/./',
    '/../',
    ';',
    '#',
    '?',
    '+',
    MARKER,
    encodeURIComponent(MARKER),
    '%3Cscript%3E',
    'é',
    '%E2%80%A8'
  ),
  fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.string({ unit: 'binary', maxLength: 8 }).map((s) => encodeURI(s).replace(/%25/g, '%'))
)
// Half the paths name a stored record exactly, so its hostile values reach pages and headers; the
// others are hostile pieces joined by '/', which mostly end in a 404 or a 400 page echoing them.
const path = fc.oneof(
  fc.constantFrom(...RECORDS),
  fc.array(pathPiece, { maxLength: 4 }).map((parts) => parts.join('/'))
)
const queryPiece = fc.oneof(
  fc.constantFrom(
    'noredirect',
    'auth',
    'ignore_aliases',
    'action=showurls',
    'action=showvalues',
    'locs',
    'index=x',
    'index=1',
    'type=URL.',
    'urlappend=%0D%0ASet-Cookie:x',
    `urlappend=${encodeURIComponent(MARKER)}`,
    'urlappend=%C2%85',
    'urlappend=%C3%A9',
    'callback=alert(1)',
    `callback=${encodeURIComponent(MARKER)}`,
    'pretty',
    'locatt=id:1',
    'country=gb',
    'hdl=10.5555/plain',
    'hdl=10.5555/xss',
    `hdl=${encodeURIComponent(MARKER)}`,
    ';;&&==',
    '%',
    'a=%ZZ'
  ),
  fc.tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 10 })).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
)
const callbackName = fc.oneof(
  fc.constantFrom('alert(1)', MARKER, 'a.b', '', '1x', '</script>', 'x;alert(1)//'),
  fc.string({ unit: 'binary', maxLength: 12 })
)

interface HostileRequest {
  method: 'GET' | 'HEAD'
  route: string
  path: string
  query: string[]
  separator: string
  accept?: string | undefined
  userAgent?: string | undefined
  host?: string | undefined
}

function requests(opts: {
  methods: Array<'GET' | 'HEAD'>
  route?: fc.Arbitrary<string>
  path?: fc.Arbitrary<string>
  query?: fc.Arbitrary<string[]>
}): fc.Arbitrary<HostileRequest> {
  return fc.record({
    method: fc.constantFrom(...opts.methods),
    route: opts.route ?? route,
    path: opts.path ?? path,
    query: opts.query ?? fc.array(queryPiece, { maxLength: 4 }),
    separator: fc.constantFrom('&', ';'),
    accept: fc.option(fc.constantFrom('*/*', 'application/x-bibtex', 'text/html', 'garbage;;q=x', `${MARKER};q=0.5`, ''), {
      nil: undefined
    }),
    userAgent: fc.option(fc.constantFrom('Mozilla/5.0', 'curl/8', MARKER, ''), { nil: undefined }),
    host: fc.option(fc.constantFrom('resolver.example', 'evil.example:81', 'a b', `${MARKER}`), { nil: undefined })
  })
}

// Every URL starts with '/', which light-my-request's `new URL(url, base)` always accepts, and it does not
// validate header values: each generated request reaches the app, none needs filtering out.
function pick(r: HostileRequest) {
  const headers: Record<string, string> = {}
  if (r.accept !== undefined) headers.accept = r.accept
  if (r.userAgent !== undefined) headers['user-agent'] = r.userAgent
  if (r.host !== undefined) headers.host = r.host
  const query = r.query.join(r.separator)
  return { method: r.method, url: `${r.route}${r.path}${query === '' ? '' : `?${query}`}`, headers }
}

// Node refuses a header value holding CR, LF or another C0 control (setHeader throws and the answer is
// a 500), so CR/LF injection shows up as a 500 or as an extra header. Node lets Latin-1 through, C1
// controls such as U+0085 included: every header we build from a request or these records must be plain ASCII.
const NOT_PRINTABLE_ASCII = /[^\t\x20-\x7e]/

function checkHeaders(status: number, headers: Record<string, unknown>): void {
  expect(status).toBeLessThan(500)
  for (const [name, value] of Object.entries(headers)) {
    for (const v of [value].flat()) expect(String(v), `header ${name}`).not.toMatch(NOT_PRINTABLE_ASCII)
  }
  expect(headers['set-cookie']).toBeUndefined()
}

function checkHtml(body: string): void {
  expect(body).not.toContain('<x-evil')
  expect(body).not.toContain('<script>alert')
  expect(body).not.toMatch(/href="\s*javascript:/i)
}

/** `name(json);` where name is what sanitizeCallback leaves: no '(', '.', ';', quote or '<' can reach the script. */
function checkJsonp(body: string): void {
  const m = /^([^(]*)\(([\s\S]*)\);$/.exec(body)
  expect(m, body).not.toBeNull()
  expect(m?.[1]).toMatch(/^(?:[A-Za-z_$\u00a0-\uffff][\w$\u00a0-\uffff]*)?$/)
  expect(() => JSON.parse(m?.[2] ?? ''), body).not.toThrow()
}

function checkAnswer(status: number, headers: Record<string, unknown>, body: string): void {
  checkHeaders(status, headers)
  const type = String(headers['content-type'] ?? '')
  if (type.startsWith('text/html')) checkHtml(body)
  if (type.startsWith('application/javascript') && body !== '') checkJsonp(body)
}

describe('hostile input (property-based)', () => {
  it('no request, however hostile, gets a 5xx or a header it or a record injected', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const runs = 400
    let answeredFromRecord = 0
    let redirectedWithRecordHeaders = 0
    await fc.assert(
      fc.asyncProperty(requests({ methods: ['GET', 'HEAD'] }), async (r) => {
        const res = await app.inject(pick(r))
        checkHeaders(res.statusCode, res.headers)
        // X-Cache is set when a record was looked up: a 2xx or 3xx with it answered from a record.
        if (res.headers['x-cache'] !== undefined && res.statusCode < 400) answeredFromRecord++
        if (r.path === '10.5555/headers' && res.statusCode === 302) redirectedWithRecordHeaders++
      }),
      { numRuns: runs }
    )
    expect(answeredFromRecord).toBeGreaterThan(runs * 0.05)
    expect(redirectedWithRecordHeaders).toBeGreaterThan(0)
  })

  it('every HTML page escapes what it echoes from the request or a record', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const runs = 300
    let escapedMarker = 0
    let xssValues = 0
    // Mostly '/', which renders the pages, and often the record whose every value is hostile markup.
    const htmlRequests = requests({
      methods: ['GET'],
      route: fc.oneof({ weight: 6, arbitrary: fc.constant('/') }, { weight: 1, arbitrary: fc.constantFrom(...ROUTES.slice(1)) }),
      path: fc.oneof({ weight: 1, arbitrary: fc.constant('10.5555/xss') }, { weight: 1, arbitrary: path })
    })
    await fc.assert(
      fc.asyncProperty(htmlRequests, async (r) => {
        const res = await app.inject(pick(r))
        expect(res.statusCode).toBeLessThan(500)
        if (!String(res.headers['content-type']).startsWith('text/html')) return
        checkHtml(res.body)
        if (res.body.includes('&lt;x-evil')) escapedMarker++
        if (res.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;')) xssValues++ // the 10.5555/xss values page
      }),
      { numRuns: runs }
    )
    expect(escapedMarker).toBeGreaterThan(runs * 0.1)
    expect(xssValues).toBeGreaterThan(runs * 0.1)
  })

  it('a JSONP answer is always a sanitised callback name around the JSON answer', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const runs = 300
    let jsonp = 0
    const query = fc
      .tuple(callbackName, fc.array(queryPiece, { maxLength: 3 }))
      .map(([name, rest]) => [`callback=${encodeURIComponent(name)}`, ...rest])
    await fc.assert(
      fc.asyncProperty(requests({ methods: ['GET'], route: fc.constant('/api/handles/'), query }), async (r) => {
        const res = await app.inject(pick(r))
        expect(res.statusCode).toBeLessThan(500)
        if (!String(res.headers['content-type']).startsWith('application/javascript')) return
        checkJsonp(res.body)
        jsonp++
      }),
      { numRuns: runs }
    )
    expect(jsonp).toBeGreaterThan(runs * 0.5)
  })

  it('raw bytes in the request target never crash the server', async () => {
    const { app } = await setup({ records: HOSTILE_RECORDS })
    const bytes = fc.uint8Array({ minLength: 1, maxLength: 40 }).map((a) => Buffer.from(a.filter((b) => b > 0x20 && b !== 0x7f)))
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), bytes, async (route, tail) => {
        const res = await rawRequest(app, Buffer.concat([Buffer.from(route), tail]))
        expect(res.status).toBeLessThan(500)
        expect(res.status).toBeGreaterThanOrEqual(200)
      }),
      { numRuns: 150 }
    )
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
    const { app, upstream } = await setup({
      records: {
        ...HOSTILE_RECORDS,
        '10.5555/a b': [str(1, 'URL', 'http://example.org/space')],
        '10.5555/a+b': [str(1, 'URL', 'http://example.org/plus')]
      }
    })
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
