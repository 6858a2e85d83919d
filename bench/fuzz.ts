/**
 * The fuzz run: generated requests (fast-check arbitraries, seeded) against a real listening server,
 * sent byte for byte over raw keep-alive TCP connections, every answer checked.
 *
 * The server is `node dist/main.js` as bench/run.ts starts it, in front of the bench fake upstream
 * behind CDN-like edge rules (bench/lib/cdn-upstream.ts) that also serves hostile records
 * (bench/lib/hostile-records.ts, prefix 10.6666): a javascript: URL, CR/LF in a URL and in
 * 10320/headers, markup in values and in 10320/loc attributes, aliases.
 *
 * Requests: paths (percent-encodings valid and not, dot segments, doi:/urn:doi:/pasted URL
 * prefixes, markup, unicode raw and encoded, very long), queries (noredirect, auth, urlappend with
 * `@evil.example` and friends, locatt, action, type, index, callback, pretty, hdl, country), headers
 * (Accept, Host, X-Forwarded-*, Cookie, …), methods, absolute-form targets, over the routes
 * /, /{doi}, /api/handles/, /doiRA/, /ra/, /api/openapi.json, /healthz and more.
 *
 * Checks on every answer: status < 500; the server still answers /healthz (polled every second);
 * no Set-Cookie, no bare CR or LF in the header block, no header line that is not `name: value`,
 * no header named by the input (X-Injected) and no header outside the known set; no input or record
 * marker (`<x-evil`, `<script>alert(1)`, `<x-rec`, `<script>prompt(2)`) and no `href="javascript:`
 * in an HTML or XML body; a JSONP body starts with a clean callback name; Location is never
 * javascript: and never on the host urlappend names (evil.example).
 *
 * Prints counts and writes bench/FUZZ.md; exit code 1 if any check failed.
 * `npm run bench:fuzz`, `npm run bench:fuzz -- --requests 20000 --seed 7`, `… -- --help`.
 */
import { writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import fc from 'fast-check'
import { addEnvPair, forEachOption } from './lib/args.js'
import { codeVersion, startCdnUpstream } from './lib/children.js'
import { HOST_HEADER_HOST, HOSTILE_HANDLES, HOSTILE_PREFIX, INPUT_MARKERS, RECORD_MARKERS, URLAPPEND_HOST } from './lib/hostile-records.js'
import { RawConnection, RawError } from './lib/raw-http.js'
import type { RawAnswer } from './lib/raw-http.js'
import { ensureBuilt, ROOT, startOurs } from './lib/processes.js'
import type { Target } from './lib/processes.js'
import { machine } from './lib/results.js'

const HELP = `Usage: node --import tsx bench/fuzz.ts [options]     (npm run bench:fuzz -- [options])
  --requests N            generated requests (default 100000)
  --seed N                fast-check seed (default 1); the same seed sends the same requests
  --concurrency N         connections sending at once (default 16)
  --latency MS            the fake upstream's latency (default 5)
  --timeout S             client timeout per request (default 15)
  --max-seconds S         stop sending after this long whatever the count (default 1200)
  --plain-upstream        no CDN edge rules in front of the fake upstream
  --server-env KEY=VALUE  extra environment for our server; repeatable
  --output FILE           the summary (default bench/FUZZ.md; "-" for stdout only)`

interface Args {
  requests: number
  seed: number
  concurrency: number
  latencyMs: number
  timeoutS: number
  maxSeconds: number
  cdn: boolean
  serverEnv: Record<string, string>
  output: string
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    requests: 100_000,
    seed: 1,
    concurrency: 16,
    latencyMs: 5,
    timeoutS: 15,
    maxSeconds: 1200,
    cdn: true,
    serverEnv: {},
    output: join(ROOT, 'bench', 'FUZZ.md')
  }
  forEachOption(argv, HELP, (arg, value) => {
    const positive = (): number => {
      const n = Number(value())
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${arg} needs a number > 0`)
      return n
    }
    if (arg === '--requests') args.requests = Math.round(positive())
    else if (arg === '--seed') args.seed = Math.round(Number(value()))
    else if (arg === '--concurrency') args.concurrency = Math.min(256, Math.round(positive()))
    else if (arg === '--latency') args.latencyMs = Number(value())
    else if (arg === '--timeout') args.timeoutS = positive()
    else if (arg === '--max-seconds') args.maxSeconds = positive()
    else if (arg === '--plain-upstream') args.cdn = false
    else if (arg === '--server-env') addEnvPair(value(), args.serverEnv)
    else if (arg === '--output') args.output = value()
    else return false
    return true
  })
  if (!Number.isSafeInteger(args.seed)) throw new Error('--seed wants an integer')
  return args
}

// ------------------------------------------------------------------ requests

interface FuzzRequest {
  method: string
  /** The request target as bytes (a latin1 string: one char per byte). */
  target: string
  route: string
  version: string
  /** Header lines as sent, latin1 strings; a Host line included unless left out on purpose. */
  headers: Array<[string, string]>
  body: string
}

/** The bytes of a string's UTF-8 encoding, as a latin1 string (one char per byte). */
function utf8Bytes(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1')
}

/** Percent-encode as UTF-8, a lone surrogate as its 3-byte (invalid) form instead of throwing. */
function pctLoose(s: string): string {
  let out = ''
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0
    if (cp >= 0xd800 && cp <= 0xdfff) {
      out += `%ED%${(0xa0 + ((cp >> 6) & 0x1f)).toString(16).toUpperCase()}%${(0x80 + (cp & 0x3f)).toString(16).toUpperCase()}`
    } else {
      out += encodeURIComponent(ch)
    }
  }
  return out
}

const EVIL = URLAPPEND_HOST

function requestArbitrary(port: number): fc.Arbitrary<FuzzRequest> {
  const known = fc.constantFrom(
    ...HOSTILE_HANDLES,
    '10.5555/sample',
    '10.5555/sample-loc',
    '10.5555/sample-alias',
    '10.5555/nope',
    `${HOSTILE_PREFIX}/JS`,
    `${HOSTILE_PREFIX}/Loc`
  )
  const randomDoi = fc
    .tuple(fc.integer({ min: 1000, max: 99_999 }), fc.string({ maxLength: 12 }))
    .map(([p, s]) => `10.${p}/${encodeURIComponent(s)}`)
  const namePrefix = fc.constantFrom(
    'doi:',
    'DOI:',
    'doi: ',
    'urn:doi:',
    'URN:DOI:',
    'info:doi/',
    'hdl:',
    'https://doi.org/',
    'http://dx.doi.org/',
    'https:/doi.org/',
    'https%3A%2F%2Fdoi.org%2F',
    'http://hdl.handle.net/',
    ' ',
    '%20',
    '%E2%80%8B',
    '/'
  )
  const dots = fc.constantFrom(
    '.',
    '..',
    '%2e',
    '%2E%2E',
    '..%2F',
    '%2F..%2F',
    '%2F',
    '//',
    '/./',
    '/../',
    ';',
    ';x=1',
    '\\',
    '%5C',
    '..\\'
  )
  const percent = fc.constantFrom(
    '%',
    '%2',
    '%ZZ',
    '%C3%28',
    '%FF',
    '%ED%A0%80',
    '%C0%AF',
    '%F4%90%80%80',
    '%00',
    '%0D%0A',
    '%0A',
    '%09',
    '%7F',
    '%C2%85',
    '%E2%80%A8',
    '%25',
    '%2525',
    '+',
    '%20',
    '%2B',
    '%23',
    '%3F',
    '%26'
  )
  const markup = fc.constantFrom(
    '<x-evil a="1">',
    '%3Cx-evil%3E',
    '<script>alert(1)</script>',
    '%3Cscript%3Ealert(1)%3C%2Fscript%3E',
    '"><x-evil>',
    '%22%3E%3Cx-evil%3E',
    "'",
    '"',
    '`',
    '&lt;x-evil&gt;',
    'javascript:alert(1)',
    '<x-evil/onload=alert(1)>',
    '<!--',
    ']]>'
  )
  const unicode = fc.string({ unit: 'grapheme', maxLength: 8 })
  const long = fc
    .tuple(fc.constantFrom(500, 2000, 3900, 5000), fc.constantFrom('%C3%A9', 'é', 'a', '%2F', '<x-evil>', '/'))
    .map(([n, unit]) => (unit === 'é' ? utf8Bytes(unit) : unit).repeat(n))
  const piece = fc.oneof(
    { weight: 8, arbitrary: known },
    { weight: 3, arbitrary: randomDoi },
    { weight: 2, arbitrary: namePrefix },
    { weight: 2, arbitrary: dots },
    { weight: 3, arbitrary: percent },
    { weight: 3, arbitrary: markup },
    { weight: 2, arbitrary: unicode.map((s) => encodeURIComponent(s)) },
    { weight: 2, arbitrary: unicode.map(utf8Bytes) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }).map(pctLoose) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 4 }).map((bytes) => String.fromCharCode(...bytes)) },
    { weight: 1, arbitrary: long }
  )
  const path = fc
    .array(fc.tuple(fc.constantFrom('', '', '/', ','), piece), { maxLength: 4 })
    .map((parts) => parts.map(([sep, p], i) => (i === 0 ? '' : sep) + p).join(''))

  const urlappend = fc.constantFrom(
    `@${EVIL}`,
    `%40${EVIL}`,
    `@${EVIL}/x`,
    `.${EVIL}`,
    `%2E${EVIL}`,
    `//${EVIL}`,
    `:@${EVIL}`,
    `:80@${EVIL}`,
    `\\@${EVIL}`,
    `%5C%40${EVIL}`,
    `?x=%40${EVIL}`,
    `#@${EVIL}`,
    '%0D%0AX-Injected:%201',
    '%0AX-Injected:1',
    '%0D%0ASet-Cookie:%20x=1',
    '%3Cx-evil%3E',
    '"><x-evil>',
    'javascript:alert(1)',
    '%E2%80%A8',
    '/extra?x=1',
    `%2F%2F${EVIL}`,
    `%09@${EVIL}`,
    `%20@${EVIL}`,
    `%C2%A0@${EVIL}`,
    ''
  )
  const fixedParam = fc.constantFrom(
    'noredirect',
    'noredirect=0',
    'auth',
    'auth=true',
    'cert',
    'ignore_aliases',
    'noalias',
    'locs',
    'nols',
    'pretty',
    'pretty=false',
    'action=showurls',
    'action=showvalues',
    'action=api',
    'action=metadata',
    'action=redirect',
    'action=%3Cx-evil%3E',
    'action=SHOWURLS',
    'type=URL',
    'type=HS_ADMIN',
    'type=10320/loc',
    'type=%3Cx-evil%3E',
    'type=URL.',
    'index=1',
    'index=x',
    'index=-1',
    'index=99999999999',
    'index=1&index=2',
    'callback=cb',
    'callback=alert(1)',
    'callback=%3Cx-evil%3E',
    'callback=',
    'callback=a.b',
    'callback=%E2%80%A8',
    'callback=%00',
    'callback=1a',
    'locatt=country:gb',
    'locatt=id:1',
    'locatt=id:4',
    'locatt=type:text/html',
    'locatt=%3Cx-evil%3E',
    'locatt=view:',
    'country=gb',
    'country=%3Cx-evil%3E',
    `hdl=${HOSTILE_PREFIX}/js`,
    'hdl=%3Cx-evil%3E',
    `hdl=+${HOSTILE_PREFIX}/plain`,
    'hdl=javascript:alert(1)',
    `hdl=https%3A%2F%2F${EVIL}`,
    'hdl=%0D%0AX-Injected:1',
    '%',
    ';;&&==',
    'a=%ZZ',
    '=',
    '&',
    'urlappend',
    'x=<x-evil>'
  )
  const param = fc.oneof(
    { weight: 5, arbitrary: fixedParam },
    { weight: 3, arbitrary: urlappend.map((v) => `urlappend=${v}`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 10 }))
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('noredirect', 'urlappend', 'locatt', 'action', 'type', 'index', 'callback', 'hdl', 'country'), piece)
        .map(([k, v]) => `${k}=${v}`)
    }
  )
  const query = fc
    .array(fc.tuple(param, fc.constantFrom('&', '&', ';')), { maxLength: 4 })
    .map((ps) => ps.map(([p, sep], i) => (i === 0 ? '' : sep) + p).join(''))
  const fragment = fc.constantFrom('#frag', `#@${EVIL}`, '#%0D%0AX-Injected:1', '#<x-evil>', '#', '#x?noredirect')

  // Weighted so that most requests are well-formed HTTP aimed at the resolver's own routes: a
  // request the HTTP parser refuses never reaches our code. The rest is there on purpose.
  const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
    fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary: arb })
  const route = fc.oneof(
    { weight: 55, arbitrary: fc.constant('/') },
    { weight: 15, arbitrary: fc.constant('/api/handles/') },
    { weight: 6, arbitrary: fc.constant('/doiRA/') },
    { weight: 4, arbitrary: fc.constant('/ra/') },
    {
      weight: 20,
      arbitrary: fc.constantFrom(
        '/api/openapi.json',
        '/healthz',
        '/api/',
        '/api/handles',
        '/readyz',
        '/robots.txt',
        '/favicon.ico',
        '/metrics',
        '',
        '*'
      )
    }
  )
  const method = fc.oneof(
    { weight: 78, arbitrary: fc.constant('GET') },
    { weight: 10, arbitrary: fc.constant('HEAD') },
    { weight: 12, arbitrary: fc.constantFrom('OPTIONS', 'POST', 'PUT', 'DELETE', 'PATCH', 'TRACE', 'PROPFIND', 'FOO', 'get') }
  )
  const absolute = fc.constantFrom(
    `http://127.0.0.1:${port}`,
    `http://${HOST_HEADER_HOST}`,
    `https://${EVIL}`,
    'HTTP://x',
    'http://<x-evil>',
    'ftp://x',
    'http://'
  )
  const host = fc.oneof(
    { weight: 75, arbitrary: fc.constant(`127.0.0.1:${port}`) },
    {
      weight: 20,
      arbitrary: fc.constantFrom(
        HOST_HEADER_HOST,
        `${HOST_HEADER_HOST}:81`,
        '[::1]:80',
        '<x-evil>',
        'a b',
        '',
        utf8Bytes('évil.example'),
        `${HOST_HEADER_HOST}/"><x-evil>`,
        `${EVIL}@${HOST_HEADER_HOST}`
      )
    },
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.constant('__twice__') }
  )

  return fc
    .record({
      method,
      route,
      path,
      query: sometimes(query, 50),
      fragment: sometimes(fragment, 5),
      absolute: sometimes(absolute, 8),
      version: fc.oneof(
        { weight: 95, arbitrary: fc.constant('HTTP/1.1') },
        { weight: 5, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2') }
      ),
      host,
      accept: sometimes(
        fc.constantFrom(
          '*/*',
          'text/html',
          'application/x-bibtex',
          'application/vnd.citationstyles.csl+json',
          'application/rdf+xml',
          'text/x-bibliography; style=apa',
          'application/json',
          'garbage;;q=x',
          '<x-evil>;q=0.5',
          '',
          'text/html;q=0.1, application/x-bibtex;q=0.9',
          'a/b;'.repeat(500),
          'application/x-bibtex;q=0'
        ),
        30
      ),
      userAgent: sometimes(fc.constantFrom('Mozilla/5.0', '<x-evil>', 'curl/8.5', '', 'Googlebot/2.1', 'x'.repeat(3000)), 25),
      acceptLanguage: sometimes(fc.constantFrom('en', 'fr-CH, fr;q=0.9', '<x-evil>', '*', 'zz-ZZ;q=x'), 10),
      xff: sometimes(
        fc.constantFrom(
          '1.2.3.4',
          '1.2.3.4, 127.0.0.1',
          'unknown',
          '<x-evil>',
          '::1',
          '127.0.0.1',
          '999.1.1.1',
          '10.0.0.1, 10.0.0.2, 10.0.0.3',
          ', ,'
        ),
        15
      ),
      xfh: sometimes(fc.constantFrom(HOST_HEADER_HOST, '<x-evil>', `${EVIL}`, ''), 8),
      xfp: sometimes(fc.constantFrom('https', 'javascript', '<x-evil>', 'http, https'), 8),
      cookie: sometimes(fc.constantFrom('a=1', 'session=<x-evil>', 'x'.repeat(4000), 'a=1; a=2; ;;', '='), 10),
      country: sometimes(fc.constantFrom('GB', 'XX', 'T1', '<x-evil>'), 5),
      origin: sometimes(fc.constantFrom('https://app.example', 'null', '<x-evil>'), 8),
      injected: sometimes(
        fc.constantFrom<[string, string]>(
          ['X-Injected', '1'],
          ['X-Injected', '<x-evil>'],
          ['Access-Control-Request-Method', 'GET'],
          ['Access-Control-Request-Headers', 'x-injected'],
          ['Expect', '100-continue'],
          ['If-None-Match', '*'],
          ['Range', 'bytes=0-1'],
          ['X-Request-Id', '<x-evil>\u00ff'],
          ['Content-Type', 'text/html']
        ),
        10
      ),
      bodyKind: fc.constantFrom('none', 'none', 'small', 'big')
    })
    .map((r): FuzzRequest => {
      const isFixed = r.route === '*' || r.route === ''
      let target = isFixed ? r.route : `${r.route}${r.path}`
      if (r.query !== undefined) target += `?${r.query}`
      if (r.fragment !== undefined) target += r.fragment
      if (r.absolute !== undefined && target.startsWith('/')) target = r.absolute + target
      const headers: Array<[string, string]> = []
      if (r.host === '__twice__') headers.push(['Host', `127.0.0.1:${port}`], ['Host', HOST_HEADER_HOST])
      else if (r.host !== undefined) headers.push(['Host', r.host])
      const add = (name: string, value: string | undefined): void => {
        if (value !== undefined) headers.push([name, value])
      }
      add('Accept', r.accept)
      add('User-Agent', r.userAgent)
      add('Accept-Language', r.acceptLanguage)
      add('X-Forwarded-For', r.xff)
      add('X-Forwarded-Host', r.xfh)
      add('X-Forwarded-Proto', r.xfp)
      add('Cookie', r.cookie)
      add('CF-IPCountry', r.country)
      add('Origin', r.origin)
      if (r.injected !== undefined) headers.push(r.injected)
      const hasBody = r.bodyKind !== 'none' && !['GET', 'HEAD', 'get'].includes(r.method)
      const body = !hasBody ? '' : r.bodyKind === 'small' ? '{"hdl":"<x-evil>"}' : 'x'.repeat(20_000)
      if (hasBody) headers.push(['Content-Type', 'application/json'], ['Content-Length', String(body.length)])
      return { method: r.method, target, route: isFixed ? r.route || '(empty)' : r.route, version: r.version, headers, body }
    })
}

function serialise(r: FuzzRequest): Buffer {
  const head = `${r.method} ${r.target} ${r.version}\r\n${r.headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`
  return Buffer.from(head + r.body, 'latin1')
}

/** The request as a printable string: bytes outside printable ASCII as \xHH, long runs cut. */
function show(r: FuzzRequest): string {
  const raw = serialise(r).toString('latin1').replace(/\r\n$/, '')
  const text = raw.replace(/[^\x20-\x7e]/g, (c) =>
    c === '\r' ? '\\r' : c === '\n' ? '\\n' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`
  )
  return text.length > 600 ? `${text.slice(0, 400)}…[${text.length - 500} more]…${text.slice(-100)}` : text
}

// ------------------------------------------------------------------ checks

const KNOWN_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-type',
  'content-length',
  'transfer-encoding',
  'location',
  'expires',
  'vary',
  'link',
  'x-cache',
  'allow',
  'retry-after',
  'cache-control',
  'x-content-type-options',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'access-control-allow-credentials',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'server',
  'content-security-policy',
  'x-frame-options',
  'referrer-policy',
  'strict-transport-security',
  'x-request-id',
  'etag',
  'last-modified',
  'accept-ranges',
  // Set by the hostile record 10.6666/crlf-headers through 10320/headers (the reference's behaviour).
  'x-record-ok',
  'x-record-crlf'
])
const HEADER_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*$/
const MARKERS = [...INPUT_MARKERS, ...RECORD_MARKERS]
const JS_HREF = /(?:href|src|action)\s*=\s*["']?\s*javascript:/i
const JSONP = /^[A-Za-z_$\u00a0-\uffff][\w$\u00a0-\uffff]*\(|^\(/
const UPSTREAM_WORDS = /DOI registry/i

interface Finding {
  kind: string
  detail: string
}

/** Everything wrong with one answer (empty when it passes). */
/** `getBody`: for a HEAD answered 5xx, the body of the same request sent as GET (to tell who is to blame). */
function check(answer: RawAnswer, getBody?: string): { findings: Finding[]; hostHeaderLocation: boolean } {
  const findings: Finding[] = []
  const add = (kind: string, detail: string): void => {
    findings.push({ kind, detail })
  }
  const text = answer.body.toString('utf8')
  if (answer.status >= 500) {
    const page = getBody ?? text
    if ([502, 503, 504].includes(answer.status) && UPSTREAM_WORDS.test(page)) {
      add(`status ${answer.status} (blames the upstream)`, page.replace(/\s+/g, ' ').slice(0, 200))
    } else add(`status ${answer.status} (ours)`, page.replace(/\s+/g, ' ').slice(0, 200))
  }
  // The header block as sent: CRLF between lines, nothing else.
  if (/\r(?!\n)|(?<!\r)\n/.test(answer.head)) add('bare CR or LF in the header block', JSON.stringify(answer.head.slice(0, 300)))
  for (const line of answer.head.split('\r\n').slice(1)) {
    if (!HEADER_LINE.test(line)) add('header line that is not name: value', JSON.stringify(line.slice(0, 200)))
  }
  if (answer.headers.has('set-cookie')) add('Set-Cookie in the answer', (answer.headers.get('set-cookie') ?? []).join(' | '))
  if (answer.headers.has('x-injected')) {
    add('header named by the input', `X-Injected: ${(answer.headers.get('x-injected') ?? []).join(' | ')}`)
  }
  for (const name of answer.headers.keys()) {
    if (!KNOWN_HEADERS.has(name) && name !== 'x-injected' && name !== 'set-cookie') add('unexpected header name', name)
  }
  const type = (answer.headers.get('content-type') ?? [''])[0]?.toLowerCase() ?? ''
  const markupBody = type === '' ? answer.body.length > 0 : /html|xml/.test(type)
  if (markupBody) {
    for (const marker of MARKERS) {
      if (text.includes(marker)) {
        add(
          `unescaped ${INPUT_MARKERS.includes(marker as (typeof INPUT_MARKERS)[number]) ? 'input' : 'record'} markup in a ${type.split(';')[0] || 'typeless'} body`,
          `${marker} … ${excerpt(text, marker)}`
        )
      }
    }
    // Only HTML makes links of href attributes; showurls XML lists a record's locations as data.
    if (!type.includes('xml') && JS_HREF.test(text)) add('javascript: link in a page', excerpt(text, 'javascript:'))
  }
  if (type.startsWith('application/javascript') && text !== '' && !JSONP.test(text)) {
    add('JSONP body without a clean callback name', text.slice(0, 120))
  }
  let hostHeaderLocation = false
  for (const location of answer.headers.get('location') ?? []) {
    const scheme = /^\s*([a-z][a-z0-9+.-]*):/i.exec(location)?.[1]?.toLowerCase()
    if (scheme !== undefined && !['http', 'https', 'ftp'].includes(scheme)) add(`Location with scheme ${scheme}:`, location.slice(0, 200))
    const host = hostOf(location)
    if (host !== undefined && (host === URLAPPEND_HOST || host.endsWith(`.${URLAPPEND_HOST}`))) {
      add('Location on the urlappend host', location.slice(0, 300))
    }
    if (host !== undefined && host === HOST_HEADER_HOST) hostHeaderLocation = true
  }
  return { findings, hostHeaderLocation }
}

function hostOf(location: string): string | undefined {
  try {
    return new URL(location).hostname.toLowerCase()
  } catch {
    const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(location)?.[1]
    return authority
      ?.slice(authority.lastIndexOf('@') + 1)
      .replace(/:\d*$/, '')
      .toLowerCase()
  }
}

function excerpt(text: string, needle: string): string {
  const at = text.indexOf(needle)
  return JSON.stringify(text.slice(Math.max(0, at - 80), at + 120))
}

// ------------------------------------------------------------------ the run

interface Example {
  request: string
  status: number | string
  detail: string
}

class Counts {
  total = 0
  byClass = new Map<string, number>()
  byStatus = new Map<string, number>()
  byRoute = new Map<string, number>()
  byMethod = new Map<string, number>()
  failures = new Map<string, { count: number; examples: Example[] }>()
  failedRequests = 0
  wellFormed = 0
  hostHeaderLocations = 0
  extraBytes = 0
  extraExamples: Example[] = []

  fail(kind: string, example: Example): void {
    let f = this.failures.get(kind)
    if (f === undefined) this.failures.set(kind, (f = { count: 0, examples: [] }))
    f.count++
    if (f.examples.length < 5) f.examples.push(example)
  }
}

function bump(m: Map<string, number>, key: string): void {
  m.set(key, (m.get(key) ?? 0) + 1)
}

const SOURCES = ['127.0.0.1', '127.0.0.21', '127.0.0.22', '127.0.0.23', '127.0.0.24', '127.0.0.25', '127.0.0.26', '127.0.0.27']

// Methods Node's HTTP parser knows (it refuses others before any of our code runs).
const PARSER_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'PROPFIND'])
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const MAX_HEAD_BYTES = 16 * 1024 // the server's MAX_HEADER_BYTES default

/**
 * Is this request well-formed HTTP/1.x that a server must answer? A malformed one (unknown method,
 * spaces, controls or non-ASCII bytes in the target, no or two Host headers, another HTTP version,
 * a header block over MAX_HEADER_BYTES) may get an error and a closed connection, and when the
 * server closes with request bytes still unread the kernel resets the connection and the error
 * answer can be lost: that is no failure. A well-formed request that gets no answer is one.
 */
function wellFormed(r: FuzzRequest): boolean {
  if (!PARSER_METHODS.has(r.method)) return false
  if (r.version !== 'HTTP/1.1' && r.version !== 'HTTP/1.0') return false
  if (!/^[\x21-\x7e]+$/.test(r.target)) return false
  if (!(r.target.startsWith('/') || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]/i.test(r.target) || (r.target === '*' && r.method === 'OPTIONS'))) {
    return false
  }
  const hosts = r.headers.filter(([n]) => n.toLowerCase() === 'host')
  if (r.version === 'HTTP/1.1' && hosts.length !== 1) return false
  if (hosts.length > 1) return false
  for (const [name, value] of r.headers) {
    if (!HEADER_NAME.test(name) || !/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) return false
  }
  return serialise(r).length - r.body.length <= MAX_HEAD_BYTES
}

async function runOne(conn: RawConnection, r: FuzzRequest, timeoutMs: number, counts: Counts): Promise<void> {
  counts.total++
  bump(counts.byRoute, r.route)
  bump(counts.byMethod, r.method)
  const valid = wellFormed(r)
  if (valid) counts.wellFormed++
  let answer: RawAnswer
  const extraBefore = conn.extraAnswers
  try {
    answer = await conn.send(serialise(r), r.method, timeoutMs)
    if (conn.extraAnswers > extraBefore && counts.extraExamples.length < 5) {
      counts.extraExamples.push({ request: show(r), status: answer.status, detail: '' })
    }
  } catch (err) {
    const kind = err instanceof RawError ? err.kind : 'client error'
    if (!valid && (kind === 'no answer' || kind === 'malformed answer')) {
      bump(counts.byClass, 'closed without a whole answer (malformed request)')
      return
    }
    bump(counts.byClass, kind)
    counts.failedRequests++
    counts.fail(kind, { request: show(r), status: '—', detail: (err as Error).message })
    return
  }
  bump(counts.byClass, `${Math.floor(answer.status / 100)}xx`)
  bump(counts.byStatus, String(answer.status))
  let getBody: string | undefined
  if (r.method === 'HEAD' && answer.status >= 500) {
    // A HEAD answer has no body to tell who failed: ask the same as GET (not counted).
    try {
      getBody = (await conn.send(serialise({ ...r, method: 'GET' }), 'GET', timeoutMs)).body.toString('utf8')
    } catch {
      /* no body then */
    }
  }
  const { findings, hostHeaderLocation } = check(answer, getBody)
  if (hostHeaderLocation) counts.hostHeaderLocations++
  if (findings.length > 0) counts.failedRequests++
  for (const f of findings) counts.fail(f.kind, { request: show(r), status: answer.status, detail: f.detail })
}

/** Fixed probes before the generated run: each hostile record in each mode; their answers are listed in FUZZ.md. */
function probes(port: number): FuzzRequest[] {
  const out: FuzzRequest[] = []
  const host: Array<[string, string]> = [['Host', `127.0.0.1:${port}`]]
  for (const handle of HOSTILE_HANDLES) {
    for (const q of ['', '?noredirect', '?action=showurls', `?urlappend=@${EVIL}`, `?urlappend=%5C@${EVIL}`, '?locatt=id:4']) {
      out.push({ method: 'GET', target: `/${handle}${q}`, route: '/', version: 'HTTP/1.1', headers: host, body: '' })
    }
    out.push({
      method: 'GET',
      target: `/api/handles/${handle}?callback=%3Cx-evil%3E`,
      route: '/api/handles/',
      version: 'HTTP/1.1',
      headers: host,
      body: ''
    })
  }
  return out
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2))
  const log = (line: string): void => {
    process.stderr.write(`[fuzz] ${line}\n`)
  }
  ensureBuilt(log)
  const upstream = await startCdnUpstream({ latencyMs: args.latencyMs, cdn: args.cdn, hostile: true })
  let server: Target | undefined
  try {
    server = await startOurs({ upstream, env: args.serverEnv })
    const port = server.port
    const baseUrl = server.baseUrl
    log(
      `server ${baseUrl}, upstream ${upstream.origin} (${args.cdn ? 'CDN edge rules, ' : ''}hostile records, ${args.latencyMs} ms); ${args.requests} requests, seed ${args.seed}, ${args.concurrency} connections`
    )
    const started = Date.now()
    const deadline = started + args.maxSeconds * 1000
    const timeoutMs = args.timeoutS * 1000

    // Liveness: /healthz every second over its own connection.
    const liveness = { checks: 0, failures: 0, firstFailureAt: undefined as number | undefined, consecutive: 0 }
    const run = { going: true }
    const monitor = (async () => {
      while (run.going) {
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        if (!run.going) break
        liveness.checks++
        const ok = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
          async (r) => {
            await r.arrayBuffer()
            return r.status === 200
          },
          () => false
        )
        if (ok) liveness.consecutive = 0
        else {
          liveness.failures++
          liveness.consecutive++
          liveness.firstFailureAt ??= Date.now() - started
        }
      }
    })()

    // The probes (hostile records in each mode), one connection, in order; their answers are kept for the report.
    const probeCounts = new Counts()
    const probeRows: string[][] = []
    const probeConn = new RawConnection(port, '127.0.0.1', '127.0.0.1')
    for (const r of probes(port)) {
      const before = probeCounts.failedRequests
      let summary = ''
      try {
        const answer = await probeConn.send(serialise(r), r.method, timeoutMs)
        const { findings } = check(answer)
        for (const f of findings) probeCounts.fail(f.kind, { request: show(r), status: answer.status, detail: f.detail })
        if (findings.length > 0) probeCounts.failedRequests++
        summary = `${answer.status} ${(answer.headers.get('content-type') ?? [''])[0]?.split(';')[0] ?? ''}${answer.headers.has('location') ? ` → ${(answer.headers.get('location') ?? [])[0]?.slice(0, 90)}` : ''}`
      } catch (err) {
        probeCounts.fail((err as RawError).kind ?? 'client error', { request: show(r), status: '—', detail: (err as Error).message })
        probeCounts.failedRequests++
        summary = (err as Error).message
      }
      probeCounts.total++
      probeRows.push([
        `\`${r.target.replace(/\|/g, '\\|')}\``,
        summary.replace(/\|/g, '\\|'),
        probeCounts.failedRequests > before ? '**fail**' : 'ok'
      ])
    }
    probeConn.close()
    log(`probes: ${probeCounts.total} requests, ${probeCounts.failedRequests} failed a check`)

    // The generated run: batches of fast-check samples, pulled by `concurrency` workers.
    const arbitrary = requestArbitrary(port)
    const counts = new Counts()
    const BATCH = 1000
    let batchIndex = 0
    let batch: FuzzRequest[] = []
    let inBatch = 0
    let issued = 0
    const next = (): FuzzRequest | undefined => {
      if (issued >= args.requests || Date.now() > deadline || liveness.consecutive >= 3) return undefined
      if (inBatch >= batch.length) {
        batch = fc.sample(arbitrary, { seed: args.seed + batchIndex * 7919, numRuns: Math.min(BATCH, args.requests - issued) })
        batchIndex++
        inBatch = 0
      }
      issued++
      return batch[inBatch++]
    }
    let lastLog = Date.now()
    await Promise.all(
      Array.from({ length: args.concurrency }, async (_, w) => {
        const conn = new RawConnection(port, '127.0.0.1', SOURCES[w % SOURCES.length] ?? '127.0.0.1')
        for (let r = next(); r !== undefined; r = next()) {
          await runOne(conn, r, timeoutMs, counts)
          if (Date.now() - lastLog > 10_000) {
            lastLog = Date.now()
            log(`${counts.total} sent, ${counts.failedRequests} failed a check, ${((Date.now() - started) / 1000).toFixed(0)} s`)
          }
        }
        conn.close()
        counts.extraBytes += conn.extraAnswers
      })
    )
    run.going = false
    await monitor
    const finalOk = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.status === 200,
      () => false
    )
    if (!finalOk || liveness.failures > 0) {
      counts.fail('server not answering /healthz', {
        request: 'GET /healthz',
        status: finalOk ? 'ok at the end' : 'down at the end',
        detail: `${liveness.failures} of ${liveness.checks} checks failed${liveness.firstFailureAt === undefined ? '' : `, first after ${(liveness.firstFailureAt / 1000).toFixed(1)} s`}`
      })
    }
    const seconds = (Date.now() - started) / 1000
    const cdn = await upstream.cdnStats()
    const stopped =
      counts.total < args.requests
        ? liveness.consecutive >= 3
          ? 'the server stopped answering /healthz'
          : `--max-seconds ${args.maxSeconds} reached`
        : undefined
    const text = render({ args, counts, probeCounts, probeRows, seconds, cdn, liveness, finalOk, stopped, env: args.serverEnv })
    process.stdout.write('\n' + text)
    if (args.output !== '-') {
      writeFileSync(args.output, text)
      log(`summary written to ${relative(ROOT, args.output)}`)
    }
    return counts.failures.size === 0 && probeCounts.failures.size === 0 ? 0 : 1
  } finally {
    if (server !== undefined) await server.stop()
    await upstream.stop()
  }
}

// ------------------------------------------------------------------ report

function int(n: number): string {
  return n.toLocaleString('en-US')
}

function sorted(m: Map<string, number>): string {
  return (
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${int(n)}`)
      .join(', ') || '—'
  )
}

function md(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/`/g, "'")
}

interface RenderInput {
  args: Args
  counts: Counts
  probeCounts: Counts
  probeRows: string[][]
  seconds: number
  cdn: { forwarded: number; rejected: Record<string, number>; hostile: number }
  liveness: { checks: number; failures: number }
  finalOk: boolean
  stopped: string | undefined
  env: Record<string, string>
}

function failureSection(title: string, counts: Counts): string[] {
  const out = [`### ${title}`, '']
  if (counts.failures.size === 0) return [...out, 'None.', '']
  out.push('| check | answers | first request (as sent) | status | detail |', '|---|--:|---|--:|---|')
  for (const [kind, f] of [...counts.failures].sort((a, b) => b[1].count - a[1].count)) {
    const ex = f.examples[0]
    out.push(
      `| ${md(kind)} | ${int(f.count)} | \`${md(ex?.request ?? '')}\` | ${ex?.status ?? ''} | ${md((ex?.detail ?? '').slice(0, 240))} |`
    )
  }
  out.push('')
  for (const [kind, f] of counts.failures) {
    if (f.examples.length < 2) continue
    out.push(`More requests that failed "${kind}":`, '')
    for (const ex of f.examples.slice(1)) out.push(`- \`${md(ex.request)}\` → ${ex.status}`)
    out.push('')
  }
  return out
}

function render(r: RenderInput): string {
  const { args, counts } = r
  const pass = counts.failures.size === 0 && r.probeCounts.failures.size === 0
  const out: string[] = []
  out.push('# Fuzz run', '')
  out.push(
    `Written by \`bench/fuzz.ts\` (\`npm run bench:fuzz${args.requests === 100_000 && args.seed === 1 ? '' : ` -- --requests ${args.requests} --seed ${args.seed}`}\`) on ${new Date().toISOString()}. Do not edit by hand.  `
  )
  out.push(`Code: ${codeVersion()}.  `)
  out.push(`Machine: ${machine()}.`, '')
  out.push(
    `**${pass ? 'PASS' : 'FAIL'}**: ${int(counts.total)} generated requests (seed ${args.seed}) in ${r.seconds.toFixed(0)} s over ${args.concurrency} raw keep-alive connections` +
      ` from ${SOURCES.length} loopback addresses, plus ${int(r.probeCounts.total)} fixed probes of the hostile records; ${int(counts.failedRequests + r.probeCounts.failedRequests)} answers failed a check.` +
      (r.stopped === undefined ? '' : ` Stopped early: ${r.stopped}.`),
    ''
  )
  out.push(
    'Server: `node dist/main.js` as `startOurs` (bench/lib/processes.ts) starts it for every scenario: its defaults except what that sets (HOST, PORT, UPSTREAM_URL, …)' +
      `${
        Object.keys(r.env).length === 0
          ? ''
          : `, with ${Object.entries(r.env)
              .map(([k, v]) => `\`${k}=${v}\``)
              .join(', ')}`
      }. ` +
      `Upstream: the bench fake upstream${args.cdn ? ' behind CDN-like edge rules (HTML 400 for dot segments and bad %-escapes, 414 over 8,192 bytes, 431)' : ''}, ` +
      `${args.latencyMs} ms, with the hostile records of bench/lib/hostile-records.ts (prefix ${HOSTILE_PREFIX}).`,
    ''
  )
  out.push('## Counts', '')
  out.push(
    `- well-formed HTTP requests (see \`wellFormed\` in bench/fuzz.ts): ${int(counts.wellFormed)} of ${int(counts.total)}; the rest are malformed on purpose (unknown methods, raw bytes in the target, no or two Host headers, other HTTP versions, headers over 16 KB)`
  )
  out.push(`- answers by class: ${sorted(counts.byClass)}`)
  out.push(`- answers by status: ${sorted(counts.byStatus)}`)
  out.push(`- requests by route: ${sorted(counts.byRoute)}`)
  out.push(`- requests by method: ${sorted(counts.byMethod)}`)
  out.push(
    `- the upstream received ${int(r.cdn.forwarded + Object.values(r.cdn.rejected).reduce((a, b) => a + b, 0))} requests: ${int(r.cdn.forwarded)} forwarded (${int(r.cdn.hostile)} for hostile records), refused by the edge: ${
      Object.entries(r.cdn.rejected)
        .map(([s, n]) => `${s}×${int(n)}`)
        .join(' ') || 'none'
    }`
  )
  out.push(
    `- answers followed by bytes beyond their own length (the connection was then dropped; not counted as a failure): ${int(counts.extraBytes)}` +
      (counts.extraExamples.length === 0
        ? ''
        : `, e.g. ${counts.extraExamples
            .slice(0, 3)
            .map((e) => `\`${md(e.request.slice(0, 160))}\` → ${e.status}`)
            .join('; ')}`)
  )
  out.push(
    `- /healthz: ${r.liveness.checks} checks during the run, ${r.liveness.failures} failed; at the end: ${r.finalOk ? '200' : 'no answer'}`
  )
  out.push(
    `- answers whose Location is on the Host header's host (${HOST_HEADER_HOST}; alias redirects and the home form use the request's host; not counted as a failure): ${int(counts.hostHeaderLocations)}`,
    ''
  )
  out.push('## Failures by check', '')
  out.push(...failureSection('Generated requests', counts))
  out.push(...failureSection('Fixed probes', r.probeCounts))
  out.push('## The hostile records, as answered', '')
  out.push('| request | answer | checks |', '|---|---|---|', ...r.probeRows.map((row) => `| ${row.join(' | ')} |`), '')
  out.push('## The checks', '')
  out.push(
    'Every answer: status < 500 (a 502/503/504 whose body names the DOI registry is listed apart, as "blames the upstream", but is still a failure); ' +
      'the server answers `/healthz` (every second, and at the end); no `Set-Cookie`; the header block has CRLF line ends only and every line is `name: value`; ' +
      'no `X-Injected` header (the input tries to inject it) and no header outside the known set; in an HTML, XML or typeless body none of ' +
      `${[...INPUT_MARKERS, ...RECORD_MARKERS].map((m) => `\`${m}\``).join(', ')} and no \`href="javascript:\`; a JSONP body starts with a clean callback name; ` +
      `\`Location\` is http(s)/ftp and never on ${URLAPPEND_HOST}. A request that gets no complete answer (closed, timed out, malformed) fails too. ` +
      "By design a record's 10320/headers lines starting with `<` go into the redirect page as written (the reference does the same); the hostile record uses one without a marker."
  )
  return out.join('\n') + '\n'
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`[fuzz] ${(err as Error)?.stack ?? String(err)}\n`)
    process.exitCode = 2
  }
)
