/**
 * Hostile records the CDN-like upstream (bench/lib/cdn-upstream.ts --hostile) serves under the prefix
 * 10.6666, for the fuzzer (bench/fuzz.ts). Each one carries something a resolver must never pass on
 * as it is: a javascript: URL, CR/LF in a URL and in 10320/headers, markup in values, types and
 * 10320/loc attributes, quotes in attributes, aliases (one to markup, one to itself), a URL with no
 * path (so `urlappend=@evil.example` would move the host).
 *
 * Markers: requests carry `<x-evil` and `<script>alert(1)`; records carry `<x-rec` and
 * `<script>prompt(2)`. None may reach an HTML or XML body unescaped. The one thing a record may put in
 * a page as written is a 10320/headers line starting with '<' (the reference's <head> lines, by
 * design): ours is `<meta name="x-record-head" …>`, which no check looks for.
 */

export interface RecordValue {
  index: number
  type: string
  data: { format: string; value: unknown }
  ttl: number
  timestamp: string
}

export const HOSTILE_PREFIX = '10.6666'
/** What fuzzed requests put in paths, queries and headers. */
export const INPUT_MARKERS = ['<x-evil', '<script>alert(1)'] as const
/** What hostile records put in their values. */
export const RECORD_MARKERS = ['<x-rec', '<script>prompt(2)'] as const
/** The host urlappend tries to send users to. */
export const URLAPPEND_HOST = 'evil.example'
/** The host the fuzzer puts in Host and X-Forwarded-Host (a different one, so the two are told apart). */
export const HOST_HEADER_HOST = 'host-header.example'

const TS = '2024-01-01T00:00:00Z'

function v(index: number, type: string, value: unknown, format = 'string'): RecordValue {
  return { index, type, data: { format, value }, ttl: 86_400, timestamp: TS }
}

function admin(): RecordValue {
  return v(100, 'HS_ADMIN', { handle: `0.NA/${HOSTILE_PREFIX}`, index: 200, permissions: '111111110010' }, 'admin')
}

const LOC_MARKUP =
  '<locations chooseby="locatt,country,weighted">' +
  '<location id="1" href="http://example.org/&lt;x-rec a=&quot;1&quot;&gt;&quot;\'" weight="1" rel="alternate&quot;&#13;&#10;Set-Cookie: rec=1" title="&lt;x-rec&gt; &quot;t&quot;" />' +
  '<location id="2" href_template="https://data.example/{hdl}?q=&quot;&gt;&lt;x-rec&gt;" http_role="conneg" weight="0" type="&lt;x-rec&gt;" />' +
  '<location id="3" href="javascript:alert(2)" weight="1" country="gb" />' +
  '<location id="4" href="http://example.org/crlf&#13;&#10;Set-Cookie: rec=1" weight="0" locatt="id:4" />' +
  '</locations>'

const LINKS_MARKUP =
  '<links><location href="http://example.org/x&quot;&gt;&lt;x-rec&gt;" rel="describedby" type="text/html&quot;&#10;X-Rec: 1" ' +
  'title="&lt;x-rec&gt;" anchor="&lt;x-rec&gt;" /></links>'

/** Handle → values, as the Handle REST API would list them. */
export const HOSTILE_RECORDS: Readonly<Record<string, RecordValue[]>> = {
  [HOSTILE_PREFIX]: [admin(), v(2, 'EMAIL', 'hdladmin@example.org')],
  [`${HOSTILE_PREFIX}/plain`]: [v(1, 'URL', 'http://example.org/plain'), admin()],
  [`${HOSTILE_PREFIX}/bare`]: [v(1, 'URL', 'https://pubs.example.org'), admin()],
  [`${HOSTILE_PREFIX}/js`]: [
    v(1, 'URL', 'javascript:alert(2)//<x-rec a="1">'),
    v(2, 'DESC', '<x-rec>"\'<script>prompt(2)</script>'),
    v(3, 'T<x-rec a="1">', '<x-rec>'),
    v(4, 'EMAIL', '"><x-rec>@example.org'),
    v(5, 'URL.2', ' javascript:prompt(2)'),
    admin()
  ],
  [`${HOSTILE_PREFIX}/crlf-url`]: [v(1, 'URL', 'http://example.org/a\r\nSet-Cookie: rec=1'), admin()],
  [`${HOSTILE_PREFIX}/crlf-headers`]: [
    v(1, 'URL', 'http://example.org/ok'),
    v(
      2,
      '10320/headers',
      'X-Record-Ok: fine\nX-Record-Crlf: a\r\nSet-Cookie: rec=1\nLocation: http://evil.example/\n' +
        'Bad Name: x\nX-Record-Ctl: a\u0000b\n<meta name="x-record-head" content="1">'
    ),
    admin()
  ],
  [`${HOSTILE_PREFIX}/loc`]: [v(1, 'URL', 'http://example.org/fallback'), v(2, '10320/loc', LOC_MARKUP), admin()],
  [`${HOSTILE_PREFIX}/loc-base64`]: [v(1, '10320/loc', Buffer.from(LOC_MARKUP).toString('base64'), 'base64'), admin()],
  [`${HOSTILE_PREFIX}/links`]: [v(1, 'URL', 'http://example.org/links'), v(2, '10320/links', LINKS_MARKUP), admin()],
  [`${HOSTILE_PREFIX}/broken-loc`]: [
    v(1, 'URL', 'http://example.org/b'),
    v(2, '10320/loc', '<locations><location href="<x-rec>"'),
    admin()
  ],
  [`${HOSTILE_PREFIX}/alias`]: [v(1, 'HS_ALIAS', `${HOSTILE_PREFIX}/plain`), admin()],
  [`${HOSTILE_PREFIX}/alias-markup`]: [v(1, 'HS_ALIAS', `${HOSTILE_PREFIX}/<x-rec a="1">"`), admin()],
  [`${HOSTILE_PREFIX}/alias-loop`]: [v(1, 'HS_ALIAS', `${HOSTILE_PREFIX}/alias-loop`), admin()],
  [`${HOSTILE_PREFIX}/alias-crlf`]: [v(1, 'HS_ALIAS', `${HOSTILE_PREFIX}/a\r\nSet-Cookie: rec=1`), admin()]
}

/** The handles above, for the fuzzer to ask for. */
export const HOSTILE_HANDLES = Object.keys(HOSTILE_RECORDS)

const BY_KEY = new Map(Object.entries(HOSTILE_RECORDS).map(([handle, values]) => [handle.toUpperCase(), { handle, values }]))

/** The hostile record for a handle (ASCII case-insensitive, like DOIs), or undefined. */
export function hostileRecord(handle: string): { handle: string; values: RecordValue[] } | undefined {
  return BY_KEY.get(handle.toUpperCase())
}
