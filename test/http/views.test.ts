import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { HandleValue } from '../../src/handle/types.js'
import { escapeHtml } from '../../src/http/views/html.js'
import {
  renderErrorPage,
  renderHomePage,
  renderNoValuesPage,
  renderNotFoundPage,
  renderRedirectBody,
  renderValuesPage
} from '../../src/http/views/pages.js'
import type { PageContext } from '../../src/http/views/pages.js'

// The reference proxy in the probe ran on this base, so its self-links can be compared as they are.
const ctx: PageContext = { baseUrl: 'http://127.0.0.1:18000/' }
const B = ctx.baseUrl

const PROBE = readFileSync(new URL('../fixtures/cnri_hdlproxy_9.2.0_probe.txt', import.meta.url), 'utf8')

/** The probe's sections: the '=== request' line and the lines up to the next one. */
function probeSections(): Array<{ request: string; lines: string[] }> {
  const sections: Array<{ request: string; lines: string[] }> = []
  for (const line of PROBE.split('\n')) {
    if (line.startsWith('=== ')) sections.push({ request: line.slice(4).trim(), lines: [] })
    else sections.at(-1)?.lines.push(line)
  }
  return sections
}

/** Every redirect in the probe: the URL it went to and the exact two-line body the reference sent. */
const probeRedirects = probeSections().flatMap(({ request, lines }) => {
  const location = lines.find((l) => l.startsWith('Location: '))?.slice('Location: '.length)
  const start = lines.findIndex((l) => l.startsWith('<html><head><title>Handle Redirect</title>'))
  if (location === undefined || start < 0) return []
  return [{ request, location, body: `${lines[start]}\n${lines[start + 1]}` }]
})

/** The probe's JSON answer for a REST request, e.g. '/api/handles/10.5555/plain'. */
function probeJson(request: string): { handle: string; values: HandleValue[] } {
  const section = probeSections().find((s) => s.request === request)
  const json = section?.lines.find((l) => l.startsWith('{'))
  if (json === undefined) throw new Error(`no JSON for ${request} in the probe`)
  return JSON.parse(json)
}

function value(type: string, data: unknown, format = 'string', extra: Partial<HandleValue> = {}): HandleValue {
  return { index: 1, type, data: { format, value: data }, ttl: 86400, timestamp: '2026-11-22T10:39:19Z', ...extra }
}

/** The <td> cells of the single value row of a one-value page. */
function rowOf(v: HandleValue): string {
  const page = renderValuesPage(ctx, '10.5555/x', [v])
  const row = page.split('\n').find((l) => l.startsWith('<tr><td>'))
  if (row === undefined) throw new Error('no value row')
  return row
}

/** The data cell of the single value row: the last <td>, up to the end of the row. */
function dataCellOf(v: HandleValue): string {
  const row = rowOf(v)
  return row.slice(row.lastIndexOf('<td>'))
}

describe('escapeHtml', () => {
  // behaviour.md R2 "Redirect body": cgiEscape's set, [HNS92] cnriutil StringUtils.cgiEscape
  it.each([
    ['plain text stays as it is', '10.1000/182', '10.1000/182'],
    ['ampersand', 'a&b', 'a&amp;b'],
    ['angle brackets', '<b>', '&lt;b&gt;'],
    ['double quote', 'say "hi"', 'say &quot;hi&quot;'],
    ['single quote', "it's", 'it&#39;s'],
    ['all five, already-escaped text escaped again', '&amp;<>"\'', '&amp;amp;&lt;&gt;&quot;&#39;'],
    ['non-ASCII is left alone', 'café/ü', 'café/ü']
  ])('%s', (_, input, expected) => {
    expect(escapeHtml(input)).toBe(expected)
  })
})

describe('redirect body', () => {
  it('the probe has redirects to compare with', () => {
    expect(probeRedirects.length).toBeGreaterThan(20)
  })

  // cnri_hdlproxy_9.2.0_probe.txt: every 302 body, byte for byte
  it.each(probeRedirects)('is byte-identical to the reference for $request', ({ location, body }) => {
    expect(renderRedirectBody(location)).toBe(body)
  })

  it.each([
    // probe: GET /10.5555/loc?urlappend=%26x%3D1&locatt=id:2
    [
      'an & in the URL is escaped as &amp;',
      'http://example.org/loc-b&x=1',
      undefined,
      '<html><head><title>Handle Redirect</title></head>\n<body><a href="http://example.org/loc-b&amp;x=1">http://example.org/loc-b&amp;x=1</a></body></html>'
    ],
    // cgiEscape: a quote cannot close the href attribute
    [
      'quotes and brackets cannot break out of the link',
      'http://e.org/"><script>x</script>\'',
      undefined,
      '<html><head><title>Handle Redirect</title></head>\n<body><a href="http://e.org/&quot;&gt;&lt;script&gt;x&lt;/script&gt;&#39;">http://e.org/&quot;&gt;&lt;script&gt;x&lt;/script&gt;&#39;</a></body></html>'
    ],
    // [HNS92] Location.writeHtmlHeaders: a newline, then each '<' line and a newline, before </head>
    [
      '10320/headers lines go into the head, verbatim',
      'http://e.org/',
      ['<link rel="a" href="b">', '  <meta name="c" content="d">'],
      '<html><head><title>Handle Redirect</title>\n<link rel="a" href="b">\n  <meta name="c" content="d">\n</head>\n<body><a href="http://e.org/">http://e.org/</a></body></html>'
    ],
    [
      'no header lines: the plain body',
      'http://e.org/',
      [],
      '<html><head><title>Handle Redirect</title></head>\n<body><a href="http://e.org/">http://e.org/</a></body></html>'
    ]
  ])('%s', (_, url, headLines, expected) => {
    expect(renderRedirectBody(url, headLines)).toBe(expected)
  })
})

describe('values page of the probe record 10.5555/plain', () => {
  const record = probeJson('/api/handles/10.5555/plain')
  const page = renderValuesPage(ctx, record.handle, record.values)
  const adminLine = PROBE.split('\n').find((l) => l.startsWith('<td>handle=0.NA/10.5555; index=300;'))

  it('shows the HS_ADMIN value exactly as the reference does', () => {
    // probe: /10.5555/plain?noredirect, the HS_ADMIN data cell
    expect(adminLine).toBeDefined()
    expect(page).toContain(adminLine)
  })

  it.each([
    ['the DOI title', '<title>DOI Name Values</title>'],
    ['the DOI in the heading', '<h1>DOI: 10.5555/plain</h1>'],
    ['the table caption', 'DOI Values for: 10.5555/plain'],
    [
      'the four column headings',
      '<th scope="col">Index</th><th scope="col">Type</th><th scope="col">Timestamp</th><th scope="col">Data</th>'
    ],
    // probe: href="http://127.0.0.1:18000/0.TYPE/HS_ADMIN"
    ['the type links to its type record', `<a href="${B}0.TYPE/HS_ADMIN">HS_ADMIN</a>`],
    // probe: 2026-11-22&nbsp;10:39:19Z, [HNS92] getNicerTimestampAsString
    ['the nicer timestamp', '<td class="ts">2026-11-22 10:39:19Z</td>'],
    ['the URL as a link, ending the row', '<td><a href="http://example.org/plain">http://example.org/plain</a></td></tr>'],
    ['a link to the JSON record', `<a href="${B}api/handles/10.5555/plain">View as JSON</a>`],
    ['a link that resolves the DOI', `<a href="${B}10.5555/plain">Resolve</a>`],
    ['the search form, holding the DOI', 'name="hdl" value="10.5555/plain"']
  ])('shows %s', (_, fragment) => {
    expect(page).toContain(fragment)
  })

  it('lists the values in record order', () => {
    expect(page.indexOf('HS_ADMIN</a>')).toBeLessThan(page.indexOf('>URL</a>'))
  })
})

describe('values page type column', () => {
  // behaviour.md R5 "TYPE cell", [HNS92] HDLProxy.returnResponsePage
  it.each([
    ['HS_ types link to 0.TYPE/<type>', 'HS_SERV', `<a href="${B}0.TYPE/HS_SERV">HS_SERV</a>`],
    ['lower-case hs_ types too, as written', 'hs_alias', `<a href="${B}0.TYPE/hs_alias">hs_alias</a>`],
    ['URL links to 0.TYPE/URL', 'URL', `<a href="${B}0.TYPE/URL">URL</a>`],
    ['DESC links to 0.TYPE/DESC', 'DESC', `<a href="${B}0.TYPE/DESC">DESC</a>`],
    ['EMAIL links to 0.TYPE/EMAIL', 'EMAIL', `<a href="${B}0.TYPE/EMAIL">EMAIL</a>`],
    ['a type that is a handle links to our URL for it', '10320/loc', `<a href="${B}10320/loc">10320/loc</a>`],
    ['a handle type is path-encoded in the link', '10.1/a b#c', `<a href="${B}10.1/a%20b%23c">10.1/a b#c</a>`],
    ['an http URI type links to itself', 'http://example.org/t', '<a href="http://example.org/t">http://example.org/t</a>'],
    ['a javascript: type is only text', 'javascript:alert(1)', 'javascript:alert(1)'],
    ['a urn: type with a slash is only text', 'urn:x:a/b', 'urn:x:a/b'],
    ['another type is plain text', 'CUSTOM.TYPE', 'CUSTOM.TYPE']
  ])('%s', (_, type, cell) => {
    expect(rowOf(value(type, 'x'))).toContain(`<td class="type">${cell}</td><td class="ts">`)
  })
})

describe('values page data column', () => {
  // behaviour.md R5 "DATA formatting" and behaviour.md §4 (only web schemes become links)
  it.each([
    [
      'a URL value is a link',
      value('URL', 'https://example.org/a?b=1&c=2'),
      '<a href="https://example.org/a?b=1&amp;c=2">https://example.org/a?b=1&amp;c=2</a>'
    ],
    ['a URL with a space links to its encoded form', value('URL', 'http://e.org/a b'), '<a href="http://e.org/a%20b">http://e.org/a b</a>'],
    ['an ftp URL is a link', value('URL', 'ftp://e.org/f'), '<a href="ftp://e.org/f">ftp://e.org/f</a>'],
    ['a URL subtype is a link', value('URL.en', 'http://e.org/en'), '<a href="http://e.org/en">http://e.org/en</a>'],
    ['a javascript: URL is text, not a link', value('URL', 'javascript:alert(1)'), 'javascript:alert(1)'],
    ['an upper-case JAVASCRIPT: URL is text', value('URL', 'JAVASCRIPT:alert(1)'), 'JAVASCRIPT:alert(1)'],
    ['a javascript: URL after a blank is text', value('URL', ' javascript:alert(1)'), ' javascript:alert(1)'],
    ['a data: URL is escaped text', value('URL', 'data:text/html,<b>x</b>'), 'data:text/html,&lt;b&gt;x&lt;/b&gt;'],
    ['a DESC that is a web URL is a link', value('DESC', 'https://e.org/d'), '<a href="https://e.org/d">https://e.org/d</a>'],
    ['an EMAIL is a mailto link', value('EMAIL', 'someone@example.org'), '<a href="mailto:someone@example.org">someone@example.org</a>'],
    ['text keeps its line breaks', value('DESC', 'line one\nline two\r\nthree'), 'line one<br>line two<br>three'],
    // a public scraper depends on `10.SERV/([\w]+)</td></tr>` (behaviour.md R5)
    ['an HS_SERV is plain text', value('HS_SERV', '10.SERV/CROSSREF'), '10.SERV/CROSSREF'],
    ['an HS_ALIAS is plain text', value('HS_ALIAS', '10.5555/plain'), '10.5555/plain'],
    [
      'HS_VLIST entries come one per line',
      value(
        'HS_VLIST',
        [
          { handle: '10.admin/TSODOI', index: 300 },
          { handle: '0.NA/10.1', index: 200 }
        ],
        'vlist'
      ),
      '300:10.admin/TSODOI<br>200:0.NA/10.1'
    ],
    [
      'a key is shown as compact JSON',
      value('HS_PUBKEY', { kty: 'RSA', e: 'AQAB' }, 'key'),
      '{&quot;format&quot;:&quot;key&quot;,&quot;value&quot;:{&quot;kty&quot;:&quot;RSA&quot;,&quot;e&quot;:&quot;AQAB&quot;}}'
    ],
    [
      'base64 data is shown as compact JSON, not decoded',
      value('BIN', 'PHNjcmlwdD4=', 'base64'),
      '{&quot;format&quot;:&quot;base64&quot;,&quot;value&quot;:&quot;PHNjcmlwdD4=&quot;}'
    ],
    [
      'a 10320/loc value is escaped XML',
      value('10320/loc', '<locations>\n<location href="http://e.org/"/>\n</locations>'),
      '&lt;locations&gt;<br>&lt;location href=&quot;http://e.org/&quot;/&gt;<br>&lt;/locations&gt;'
    ]
  ])('%s', (_, v, cell) => {
    expect(dataCellOf(v)).toBe(`<td>${cell}</td></tr>`)
  })

  it('an HS_SERV row matches the public scraper pattern', () => {
    const page = renderValuesPage(ctx, '10.1000', [value('HS_SERV', '10.SERV/CROSSREF')])
    expect(/10\.SERV\/([\w]+)<\/td><\/tr>/.exec(page)?.[1]).toBe('CROSSREF')
  })

  it.each([
    'javascript:alert(1)',
    'JAVASCRIPT:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'vbscript:x',
    'data:text/html,x'
  ])('a URL value %j never becomes an href', (url) => {
    const cell = dataCellOf(value('URL', url))
    expect(cell).toContain(escapeHtml(url))
    expect(cell).not.toContain('href')
  })

  it('a missing timestamp is shown as NA', () => {
    expect(rowOf(value('URL', 'http://e.org/', 'string', { timestamp: undefined }))).toContain('<td class="ts">NA</td>')
  })
})

describe('hostile input is always escaped', () => {
  const payload = '<script>alert("x")</script>\'"'
  const hostileHandle = `10.1/${payload}`
  const hostile: HandleValue[] = [
    { index: 1, type: `X${payload}`, data: { format: 'string', value: payload }, ttl: 86400, timestamp: payload },
    { index: 2, type: `10.1/${payload}`, data: { format: 'string', value: `http://e.org/${payload}` }, ttl: 86400 },
    { index: 3, type: 'URL', data: { format: 'string', value: `javascript:${payload}` }, ttl: 86400 },
    { index: 4, type: 'EMAIL', data: { format: 'string', value: `a@b${payload}` }, ttl: 86400 },
    { index: 5, type: 'HS_VLIST', data: { format: 'vlist', value: [{ handle: payload, index: 1 }] }, ttl: 86400 },
    { index: 6, type: 'HS_ADMIN', data: { format: 'admin', value: { handle: payload, index: 1, permissions: '1' } }, ttl: 86400 },
    { index: 7, type: 'KEY', data: { format: 'key', value: { n: payload } }, ttl: 86400 }
  ]

  it.each([
    ['values page', renderValuesPage(ctx, hostileHandle, hostile)],
    ['values-not-found page', renderNoValuesPage(ctx, hostileHandle)],
    ['not-found page', renderNotFoundPage(ctx, hostileHandle)],
    ['not-found page with a message', renderNotFoundPage(ctx, hostileHandle, { message: payload })],
    ['error page', renderErrorPage(ctx, { status: 400, message: payload, handle: hostileHandle })],
    ['home page on a hostile base', renderHomePage({ baseUrl: `http://h/${payload}/` })]
  ])('the %s contains no raw markup from the input', (_, page) => {
    expect(page).not.toContain('<script')
    expect(page).not.toContain('alert("x")')
    expect(page).not.toContain('</script>\'"')
    expect(page).not.toContain('href="javascript')
    expect(page).toContain('&lt;script&gt;')
  })
})

describe('not-found page', () => {
  it.each([
    ['the title', '<title>Error: DOI Not Found</title>'],
    ['the headline', '<h1>DOI Not Found</h1>'],
    ['the reason with the DOI', 'This DOI cannot be found in the DOI System: <code>10.1000/nothing</code>'],
    ['the incorrect-DOI cause', 'the DOI is incorrect'],
    ['the copying-error cause', 'it was copied incorrectly'],
    ['the not-yet-activated cause', 'it has not been activated yet'],
    ['a form to try another DOI', `<form action="${B}" method="get"`],
    ['the DOI that was not found in the form, ready to correct', 'name="hdl" value="10.1000/nothing"']
  ])('shows %s', (_, fragment) => {
    expect(renderNotFoundPage(ctx, '10.1000/nothing')).toContain(fragment)
  })

  it('shows "Alias chain too long" as its headline when asked', () => {
    const page = renderNotFoundPage(ctx, '10.1/loop', { message: 'Alias chain too long' })
    expect(page).toContain('<title>Error: Alias chain too long</title>')
    expect(page).toContain('<h1>Alias chain too long</h1>')
    expect(page).toContain('<code>10.1/loop</code>')
  })

  const TRAILING = 'ends with a slash'
  const PREFIX_ONLY = 'looks like a DOI prefix only'
  const MULTIPLE = 'several slashes in a row'
  // behaviour.md R1 "Trailing slash", R6 ([DOI-HB25] §6.4.5), [HNS92] HDLProxy PREFIX_ONLY
  it.each([
    ['a normal DOI gets no hint', '10.1000/182', []],
    ['a trailing slash gets the trailing-slash warning', '10.1000/182/', [TRAILING]],
    ['a prefix alone gets the prefix-only hint', '10.1000', [PREFIX_ONLY]],
    ['a prefix with a slash gets both', '10.1000/', [TRAILING, PREFIX_ONLY]],
    ['a double slash gets the multiple-slash hint', '10.1000/a//b', [MULTIPLE]],
    ['a double slash at the end gets the trailing and multiple hints', '10.1000//', [TRAILING, MULTIPLE]],
    ['a slash inside the suffix is normal', '10.1000/a/b', []]
  ])('%s', (_, handle, hints) => {
    const page = renderNotFoundPage(ctx, handle)
    for (const hint of [TRAILING, PREFIX_ONLY, MULTIPLE]) {
      expect(page.includes(hint), hint).toBe(hints.includes(hint))
    }
  })

  it.each([
    ['10.1000/182/', `<a href="${B}10.1000/182">10.1000/182</a>`],
    ['10.1000/a b/', `<a href="${B}10.1000/a%20b">10.1000/a b</a>`],
    ['10.1000/', `<a href="${B}10.1000">10.1000</a>`]
  ])('the trailing-slash warning for %j links to the DOI without the slash', (handle, anchor) => {
    const page = renderNotFoundPage(ctx, handle)
    expect(page).toContain(anchor)
    expect(page).toContain('are different identifiers')
  })

  it('the prefix-only hint names the prefix and gives an example DOI', () => {
    const page = renderNotFoundPage(ctx, '10.1000')
    expect(page).toContain('<code>10.1000</code> looks like a DOI prefix only')
    expect(page).toContain('e.g. <code>10.1000/182</code>')
  })
})

describe('values-not-found page', () => {
  const page = renderNoValuesPage(ctx, '10.5555/multi')

  it.each([
    ['the title', '<title>No Values Found</title>'],
    ['that the DOI exists', 'The DOI <code>10.5555/multi</code> exists'],
    ['a link to the plain proxy URL', `<a href="${B}10.5555/multi">`],
    ['a link to all its values', `<a href="${B}10.5555/multi?noredirect">`]
  ])('shows %s', (_, fragment) => {
    expect(page).toContain(fragment)
  })
})

describe('error pages', () => {
  // behaviour.md §8; behaviour.md R6
  it.each([
    [400, 'This request could not be read'],
    [414, 'This link is too long'],
    [429, 'Too many lookups at once'],
    [502, 'This DOI could not be looked up just now'],
    [503, 'This DOI could not be looked up just now'],
    [504, 'This DOI could not be looked up just now'],
    [500, 'Something went wrong on our side'],
    [418, 'This request could not be answered'],
    [599, 'Something went wrong']
  ])('a %i page is titled %j in plain words and says what happened once, in the message itself', (status, title) => {
    const page = renderErrorPage(ctx, { status, message: 'Something happened' })
    expect(page).toContain(`<title>${title}</title>`)
    expect(page).toContain(`<h1>${title}</h1>`)
    expect(page).toContain('<p>Something happened</p>')
    expect(page).not.toContain('try again later')
  })

  it('a 502 page never names the failure in HTTP jargon, and says what to try once', () => {
    const page = renderErrorPage(ctx, {
      status: 502,
      message: 'We could not reach the DOI registry to look this DOI up. This is usually brief: please try again in a minute.',
      handle: '10.1/x'
    })
    expect(page).not.toMatch(/Bad Gateway|Gateway|upstream/i)
    expect(page.match(/DOI registry/g)).toHaveLength(1)
    expect(page).toContain('<h2>What you can do</h2>')
    expect(page).toContain('<a href="https://doi.org/10.1/x">doi.org</a>')
  })

  it('a bad-request page shows what a DOI looks like', () => {
    expect(renderErrorPage(ctx, { status: 400, message: 'Control character', handle: '10.1/x' })).toContain(
      'A DOI looks like <code>10.1000/182</code>'
    )
  })

  it('the search form holds the DOI that failed, ready to correct', () => {
    expect(renderErrorPage(ctx, { status: 502, message: 'Down', handle: '10.1/a"<b>' })).toContain(
      'name="hdl" value="10.1/a&quot;&lt;b&gt;"'
    )
  })

  it('a DOI with a control character is shown, but never put in the field', () => {
    const page = renderErrorPage(ctx, { status: 400, message: 'Control character', handle: '10.1/a\nb' })
    expect(page).toContain('name="hdl" placeholder=')
  })

  it('never shows a stack trace, even when the message carries one', () => {
    const err = new Error('upstream exploded')
    const page = renderErrorPage(ctx, { status: 502, message: err.stack ?? '' })
    expect(page).toContain('upstream exploded')
    expect(page).not.toMatch(/Error:[^\n]*\n\s*at /)
    expect(page).not.toMatch(/^\s*at \S+/m)
    expect(page).not.toContain('views.test')
  })

  it('shows the DOI when it is known', () => {
    expect(renderErrorPage(ctx, { status: 504, message: 'Timed out', handle: '10.1/x' })).toContain('DOI: <code>10.1/x</code>')
  })

  it('shows a refused control character visibly', () => {
    const page = renderErrorPage(ctx, { status: 400, message: 'Control character', handle: '10.1/a\nb\u0000' })
    expect(page).toContain('<code>10.1/a\\u000Ab\\u0000</code>')
  })

  it('shortens a very long DOI on a 414 page', () => {
    const handle = '10.1/' + 'x'.repeat(5000)
    const page = renderErrorPage(ctx, { status: 414, message: 'DOI too long', handle })
    expect(page).not.toContain('x'.repeat(400))
    expect(page).toContain('(5005 characters)')
  })
})

describe('home page', () => {
  const page = renderHomePage(ctx)

  it.each([
    ['the title', '<title>DOI Resolver</title>'],
    ['a GET form to the base URL', `<form action="${B}" method="get"`],
    ['the DOI input', 'name="hdl"'],
    ['the noredirect option', '<input type="checkbox" name="noredirect">'],
    ['the ignore_aliases option', '<input type="checkbox" name="ignore_aliases">'],
    ['the auth option', '<input type="checkbox" name="auth">'],
    ['an example DOI link', `<a href="${B}10.1000/182">10.1000/182</a>`]
  ])('shows %s', (_, fragment) => {
    expect(page).toContain(fragment)
  })
})

describe('every page', () => {
  it.each([
    ['values', renderValuesPage(ctx, '10.5555/plain', probeJson('/api/handles/10.5555/plain').values)],
    ['values-not-found', renderNoValuesPage(ctx, '10.5555/plain')],
    ['not-found', renderNotFoundPage(ctx, '10.5555/none/')],
    ['error', renderErrorPage(ctx, { status: 502, message: 'Bad gateway' })],
    ['home', renderHomePage(ctx)]
  ])('the %s page is standalone HTML5 with one inline style and no scripts', (_, page) => {
    expect(page.startsWith('<!doctype html>\n<html lang="en">')).toBe(true)
    expect(page).toContain('<meta charset="utf-8">')
    expect(page).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">')
    expect(page.split('<style>').length).toBe(2)
    expect(page).not.toMatch(/<script|<link|<img|src=|@import|url\(/i)
  })
})
