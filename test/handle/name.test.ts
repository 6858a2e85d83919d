import { describe, expect, it } from 'vitest'
import {
  cacheKey,
  encodeURL,
  encodeURLComponentHdl,
  encodeURLPath,
  handleFromInput,
  handleFromPath,
  hasControlChar,
  percentDecode,
  prefixOf,
  splitRequestTarget
} from '../../src/handle/name.js'

// Sources, named in the `why` column:
//   probe   = test/fixtures/cnri_hdlproxy_9.2.0_probe.txt (the real CNRI 9.2.0 proxy)
//   tricky  = test/fixtures/tricky_real_dois.tsv (real DOIs, with the issue they came from)
//   norm    = test/fixtures/doi_normalization_vectors.json (idutils, doi-regex, doi-utils, DOI Handbook)
//   D§2     = behaviour.md §2, R§1 = behaviour.md R1

/** Percent-encode every non-ASCII character as UTF-8, as a browser sends it. */
const wire = (s: string): string => s.replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c))

const opts = { maxLength: 4096 }

describe('handleFromPath: the DOI name a request path asks for', () => {
  const resolves: Array<{ path: string; handle: string; why: string }> = [
    // probe transcript
    { path: '/10.5555/plain', handle: '10.5555/plain', why: 'probe' },
    { path: '/10.5555/PLAIN', handle: '10.5555/PLAIN', why: "probe: case is kept, folding is the cache key's job" },
    { path: '/10.5555%2Fplain', handle: '10.5555/plain', why: 'probe: %2F decodes to /' },
    { path: '/urn:doi:10.5555:plain', handle: '10.5555/plain', why: 'probe: URN colon becomes slash' },
    { path: '/doi:10.5555/plain', handle: '10.5555/plain', why: 'probe' },
    { path: '/hdl:10.5555/plain', handle: '10.5555/plain', why: 'probe' },
    { path: '/10.5555//plain', handle: '10.5555//plain', why: 'probe + D§2.5: no slash collapsing' },
    { path: '/10.5555/plain/', handle: '10.5555/plain/', why: 'probe + D§2.5: trailing slash is part of the handle' },
    { path: '/10.5555/trailing/', handle: '10.5555/trailing/', why: 'probe' },
    { path: '/10.5555/hash%23frag', handle: '10.5555/hash#frag', why: 'probe: encoded # is part of the name' },
    { path: '/10.5555/percent%2520x', handle: '10.5555/percent%20x', why: 'probe: decoded once only' },
    { path: '/10.5555/with%20space', handle: '10.5555/with space', why: 'probe: inner space kept' },
    { path: '/10.5555/caf%C3%A9', handle: '10.5555/café', why: 'probe: UTF-8' },
    { path: '/10.5555/query%3Fx=1', handle: '10.5555/query?x=1', why: 'probe: encoded ?' },
    {
      path: '/10.5555/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-0',
      handle: '10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0',
      why: 'probe: SICI encoded'
    },
    {
      path: '/10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0',
      handle: '10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0',
      why: 'probe: SICI raw'
    },
    { path: '/10.5555', handle: '10.5555', why: 'probe + D§2.6: a prefix alone is resolved' },
    { path: '/', handle: '', why: 'probe + D§2.6: home page' },
    { path: '', handle: '', why: 'D§2.6: home page' },
    // DOI Handbook and doi.org docs
    { path: '/urn:doi:10.123:456', handle: '10.123/456', why: 'norm: handbook URN form' },
    { path: '/urn:doi:10.123:456ABC%2Fzyz', handle: '10.123/456ABC/zyz', why: 'norm: handbook URN form with %2F' },
    { path: '/10.1000/456%23789', handle: '10.1000/456#789', why: 'norm: handbook # encoding' },
    { path: '/10.1000/res%23test', handle: '10.1000/res#test', why: 'norm: doi.org factsheet' },
    { path: '/https://doi.org/10.1850', handle: '10.1850', why: 'R§1: stored page doi.org/https://doi.org/10.1850' },
    // tricky real DOIs
    {
      path: '/10.1002/(sici)1099-050x(199823/24)37:3/4%3C197::aid-hrm2%3E3.0.co;2-%23',
      handle: '10.1002/(sici)1099-050x(199823/24)37:3/4<197::aid-hrm2>3.0.co;2-#',
      why: 'tricky: SICI ending in #'
    },
    {
      path: '/10.1002/(SICI)1097-0274(199909)36:1+<1::AID-AJIM2>3.0.CO;2-0',
      handle: '10.1002/(SICI)1097-0274(199909)36:1+<1::AID-AJIM2>3.0.CO;2-0',
      why: 'tricky: + is never a space'
    },
    {
      path: '/10.1175%2F1520-0477%281996%29077%3C0935%3AWOTWSM%3E2.0.CO%3B2',
      handle: '10.1175/1520-0477(1996)077<0935:WOTWSM>2.0.CO;2',
      why: 'tricky: fully encoded SICI'
    },
    {
      path: '/10.1175/1520-0493(1972)100%3C0081%3AOTAOSH%3E2.3.CO%3B2',
      handle: '10.1175/1520-0493(1972)100<0081:OTAOSH>2.3.CO;2',
      why: 'tricky + norm doi-utils note: a resolver decodes'
    },
    {
      path: '/10.1002/(SICI)1098-2418(199807)12:4%3C335::AID-RSA2%3E3.0.CO;2-U',
      handle: '10.1002/(SICI)1098-2418(199807)12:4<335::AID-RSA2>3.0.CO;2-U',
      why: 'tricky: html-proofer#629'
    },
    {
      path: '/10.1002/(sici)1097-0185(19990415)257:2%3C50::aid-ar4%3E3.3.co;2-n',
      handle: '10.1002/(sici)1097-0185(19990415)257:2<50::aid-ar4>3.3.co;2-n',
      why: 'tricky: pandoc#1640'
    },
    {
      path: '/10.1002/(SICI)1521-3978(199806)46:4/5%3C493::AID-PROP493%3E3.0.CO;2-P',
      handle: '10.1002/(SICI)1521-3978(199806)46:4/5<493::AID-PROP493>3.0.CO;2-P',
      why: 'tricky: / inside the suffix'
    },
    { path: '/10.18653/v1%2F2022.acl-long.568', handle: '10.18653/v1/2022.acl-long.568', why: 'tricky: %2F form resolves the same' },
    { path: '/10.2307%2F1990888', handle: '10.2307/1990888', why: 'tricky: encoded first slash' },
    { path: '/10/b6vnmd', handle: '10/b6vnmd', why: 'tricky: shortDOI' },
    { path: wire('/10.1016/üникóδé-дôΐ'), handle: '10.1016/üникóδé-дôΐ', why: 'tricky + norm idutils: non-ASCII suffix' },
    { path: wire('/10.1016/སྦ་བཞེད་'), handle: '10.1016/སྦ་བཞེད་', why: 'tricky + norm idutils: Tibetan suffix' },
    // idutils, where pasted free text meets our path rules
    { path: '/doi:10.1016/j.epsl.2011.11.037', handle: '10.1016/j.epsl.2011.11.037', why: 'norm idutils' },
    {
      path: '/doi:%2010.1016/j.epsl.2011.11.037',
      handle: '10.1016/j.epsl.2011.11.037',
      why: 'norm idutils "doi: " with a space: we trim again after the prefix'
    },
    { path: '/DOI:10.1016/j.epsl.2011.11.037', handle: '10.1016/j.epsl.2011.11.037', why: 'norm idutils: prefix is case-insensitive' },
    { path: '/http://dx.doi.org/10.1016/j.epsl.2011.11.037', handle: '10.1016/j.epsl.2011.11.037', why: 'norm idutils + D§2.4' },
    { path: '/https://doi.org/10.1016/j.epsl.2011.11.037', handle: '10.1016/j.epsl.2011.11.037', why: 'norm idutils + D§2.4' },
    { path: '/hdl:10013/epic.10033', handle: '10013/epic.10033', why: 'norm idutils' },
    { path: '/hdl:%2010013/epic.10033', handle: '10013/epic.10033', why: 'norm idutils "hdl: " with a space' },
    { path: '/HDL:10013/epic.10033', handle: '10013/epic.10033', why: 'norm idutils' },
    { path: '/http://hdl.handle.net/10013/epic.10033', handle: '10013/epic.10033', why: 'norm idutils + D§2.4' },
    { path: '/https://hdl.handle.net/10013/epic.10033', handle: '10013/epic.10033', why: 'norm idutils + D§2.4' },
    // where we legitimately differ from free-text normalisers: only the D§2.4 prefixes are stripped
    {
      path: '/doi.org/10.1016/j.epsl.2011.11.037',
      handle: 'doi.org/10.1016/j.epsl.2011.11.037',
      why: 'norm idutils strips it, D§2.4 has no scheme-less form'
    },
    { path: '/hdl.handle.net/10013/epic.10033', handle: 'hdl.handle.net/10013/epic.10033', why: 'norm idutils strips it, D§2.4 does not' },
    {
      path: '/http://www.doi.org/10.1234/56789',
      handle: 'http://www.doi.org/10.1234/56789',
      why: 'norm doi-utils strips it, D§2.4 lists no www.doi.org'
    },
    {
      path: '/https://doi.org/10.1175/1520-0493(1972)100%3C0081%3AOTAOSH%3E2.3.CO%3B2',
      handle: '10.1175/1520-0493(1972)100<0081:OTAOSH>2.3.CO;2',
      why: 'norm doi-utils keeps it encoded; a path is decoded once'
    },
    { path: '/https://doi.org/', handle: '', why: 'norm doi-utils not_dois: nothing left, home page' },
    { path: '/ftp://doi.org/10.1000/x', handle: 'ftp://doi.org/10.1000/x', why: 'norm doi-regex resolver_path_invalid' },
    { path: '/urn:eidr:10.5240:B1FA', handle: 'urn:eidr:10.5240:B1FA', why: 'R§1 strips urn:eidr:, D§2.4 does not list it' },
    // the other prefixes of D§2.4, and "at most one"
    { path: '/info:doi/10.1000/182', handle: '10.1000/182', why: 'D§2.4' },
    { path: '/INFO:HDL/10.1000/182', handle: '10.1000/182', why: 'D§2.4' },
    { path: '/urn:hdl:10.1000:182', handle: '10.1000/182', why: 'D§2.4 URN rule' },
    { path: '/URN:DOI:10.1000/a:b', handle: '10.1000/a:b', why: 'D§2.4: a / before the colon keeps the colon' },
    { path: '/urn:doi:10.1000', handle: '10.1000', why: 'D§2.4: no colon left, nothing to turn into /' },
    { path: '/doi:doi:10.1000/x', handle: 'doi:10.1000/x', why: 'D§2.4: at most one prefix' },
    { path: '/doi:https://doi.org/10.1000/x', handle: 'https://doi.org/10.1000/x', why: 'D§2.4: at most one prefix' },
    { path: '/HTTPS://DX.DOI.ORG/10.1000/x', handle: '10.1000/x', why: 'D§2.4: case-insensitive' },
    { path: '/https:/doi.org/10.1000/x', handle: '10.1000/x', why: 'ours: a front proxy merged the slashes (nginx merge_slashes)' },
    { path: '/doi%3A10.1000%2Fx', handle: '10.1000/x', why: 'D§2: prefixes are matched after decoding' },
    { path: '/doi:', handle: '', why: 'nothing after the prefix: home page' },
    // whitespace: the trimBetter set at both ends, never inside
    { path: '/%2010.1000/x%20', handle: '10.1000/x', why: 'R§1 step 4: trim() drops a trailing %20' },
    { path: '/10.1000/x%C2%A0', handle: '10.1000/x', why: 'R§1 trimBetter: U+00A0' },
    { path: '/%E2%80%8B10.1000/x', handle: '10.1000/x', why: 'R§1 trimBetter: U+200B zero-width space' },
    { path: '/%EF%BB%BF10.1000/x', handle: '10.1000/x', why: 'R§1 trimBetter: U+FEFF byte order mark' },
    { path: '/10.1000/x%E3%80%80', handle: '10.1000/x', why: 'R§1 trimBetter: U+3000' },
    { path: '/%20/10.1000/x', handle: '10.1000/x', why: 'R§1: slashes and spaces stripped in turn' },
    { path: '//10.1000/x', handle: '10.1000/x', why: 'R§1: all leading slashes' },
    { path: '/10.1000/a%E2%80%83b', handle: '10.1000/a\u2003b', why: 'whitespace inside the name is kept' },
    // percent-decoding details (D§2.2)
    { path: '/10.1000/100%', handle: '10.1000/100%', why: 'D§2.2: lone % kept' },
    { path: '/10.1000/%zz', handle: '10.1000/%zz', why: 'D§2.2: % without two hex digits kept' },
    { path: '/10.1000/%%41', handle: '10.1000/%A', why: 'D§2.2: first % kept, %41 decoded' },
    { path: '/10.1000/50%25off', handle: '10.1000/50%off', why: 'R§1: %25 is %' },
    { path: '/10.1000/a%2fb', handle: '10.1000/a/b', why: 'lower-case hex digits' },
    { path: '/10.1000/%F0%9F%98%80', handle: '10.1000/😀', why: '4-byte UTF-8' },
    { path: '/10.1000/x+y', handle: '10.1000/x+y', why: 'R§1: + in the path stays +' },
    { path: '/10.1000/a/./b/../c', handle: '10.1000/a/./b/../c', why: 'D§2.5: no dot-segment normalisation' },
    { path: '/10.1000/.%2Fx', handle: '10.1000/./x', why: 'norm: doi.org factsheet /.%2F advice' }
  ]

  it.each(resolves)('$path resolves $handle ($why)', ({ path, handle }) => {
    expect(handleFromPath(path, opts)).toEqual({ ok: true, handle })
  })

  const refused: Array<{ path: string; status: 400 | 414; message: RegExp; why: string }> = [
    { path: '/10.1000/%C3%28', status: 400, message: /UTF-8/, why: 'D§2.2: invalid continuation byte' },
    { path: '/10.1000/%FF', status: 400, message: /UTF-8/, why: 'D§2.2: byte never valid in UTF-8' },
    { path: '/10.1000/%C0%AF', status: 400, message: /UTF-8/, why: 'D§2.2: overlong encoding of /' },
    { path: '/10.1000/%ED%A0%80', status: 400, message: /UTF-8/, why: 'D§2.2: encoded surrogate' },
    { path: '/10.1000/caf%C3', status: 400, message: /UTF-8/, why: 'D§2.2: truncated sequence' },
    { path: '/10.1000/x%00', status: 400, message: /control character \(U\+0000\)/, why: 'D§2.2: NUL' },
    {
      path: '/10.1000/x%0A',
      status: 400,
      message: /control character \(U\+000A\)/,
      why: 'D§2.2: a trailing newline is refused, not trimmed'
    },
    { path: '/%0A10.1000/x', status: 400, message: /control character/, why: 'D§2.2: leading newline' },
    {
      path: '/10.1000/x%0D%0ASet-Cookie:%20a=b',
      status: 400,
      message: /control character \(U\+000D\)/,
      why: 'D§2.2: header injection attempt'
    },
    { path: '/10.1000/%09x', status: 400, message: /control character \(U\+0009\)/, why: 'D§2.2: tab' },
    { path: '/10.1000/x%7F', status: 400, message: /control character \(U\+007F\)/, why: 'D§2.2: DEL' },
    { path: '/10.1000/x%C2%85', status: 400, message: /control character \(U\+0085\)/, why: 'D§2.2: NEL is C1, 400 wins over trimBetter' },
    { path: '/10.1000/x%C2%9F', status: 400, message: /control character \(U\+009F\)/, why: 'D§2.2: last C1 control' },
    { path: '/10.1000/' + 'x'.repeat(4089), status: 414, message: /4097 characters, the limit is 4096/, why: 'D§2.7: 4097 characters' },
    { path: '/' + '%F0%9F%98%80'.repeat(4097), status: 414, message: /4097 characters/, why: 'D§2.7: counted in characters after decoding' }
  ]

  it.each(refused)('$path is refused with $status ($why)', ({ path, status, message }) => {
    const result = handleFromPath(path, opts)
    expect(result).toMatchObject({ ok: false, status })
    expect(result.ok ? '' : result.message).toMatch(message)
  })

  it('accepts a handle of exactly the limit, counted in characters not UTF-16 units', () => {
    // D§2.7: 4096 emoji are 8192 UTF-16 units but 4096 characters
    expect(handleFromPath('/10.1000/' + 'x'.repeat(4088), opts)).toMatchObject({ ok: true })
    expect(handleFromPath('/' + '%F0%9F%98%80'.repeat(4096), opts)).toMatchObject({ ok: true })
  })

  it('uses the configured limit', () => {
    // D§2.7: "configurable"
    expect(handleFromPath('/10.1000/abc', { maxLength: 11 })).toMatchObject({ ok: true })
    expect(handleFromPath('/10.1000/abcd', { maxLength: 11 })).toMatchObject({ ok: false, status: 414 })
  })
})

describe('handleFromInput: the DOI name in what a reader pasted into a form', () => {
  it.each([
    { typed: '10.1000/182', handle: '10.1000/182', why: 'a plain DOI stays as it is' },
    { typed: 'https://doi.org/10.1000/182', handle: '10.1000/182', why: 'D§2.4: a pasted doi.org URL' },
    { typed: 'http://dx.doi.org/10.1000/182', handle: '10.1000/182', why: 'D§2.4: the old dx.doi.org' },
    { typed: 'HTTPS://DOI.ORG/10.1000/182', handle: '10.1000/182', why: 'D§2.4: case-insensitive' },
    { typed: 'https://hdl.handle.net/10.1000/182', handle: '10.1000/182', why: 'D§2.4: the Handle proxy' },
    { typed: 'doi:10.1000/182', handle: '10.1000/182', why: 'D§2.4: doi: prefix' },
    { typed: 'doi: 10.1000/182', handle: '10.1000/182', why: 'R§1 step 5: a space after the colon' },
    { typed: 'urn:doi:10.123:456', handle: '10.123/456', why: 'D§2.4: urn: form, first colon a slash' },
    { typed: '  /10.1000/182\u00a0', handle: '10.1000/182', why: 'R§1 step 4: slashes and whitespace pasted around it' },
    { typed: 'https://doi.org/https://doi.org/10.1000/182', handle: 'https://doi.org/10.1000/182', why: 'D§2.4: at most one prefix' },
    { typed: 'https://example.org/10.1000/182', handle: 'https://example.org/10.1000/182', why: "another site's URL is no resolver URL" }
  ])('$typed → $handle ($why)', ({ typed, handle }) => {
    expect(handleFromInput(typed)).toBe(handle)
  })
})

describe('splitRequestTarget: path, query and fragment as they came on the wire', () => {
  const rows: Array<{ raw: string; path: string; query: string; fragment: string | undefined; why: string }> = [
    { raw: '/10.5555/plain', path: '/10.5555/plain', query: '', fragment: undefined, why: 'probe' },
    { raw: '/10.5555/plain?', path: '/10.5555/plain', query: '', fragment: undefined, why: 'probe: empty query resolves' },
    { raw: '/10.5555/plain?noredirect', path: '/10.5555/plain', query: 'noredirect', fragment: undefined, why: 'probe' },
    { raw: '/10.5555/hash#frag', path: '/10.5555/hash', query: '', fragment: '#frag', why: 'probe + R§1 step 1: raw # cut off' },
    {
      raw: '/10.5555/hash%23frag',
      path: '/10.5555/hash%23frag',
      query: '',
      fragment: undefined,
      why: 'probe: encoded # stays in the path'
    },
    { raw: '/10.1000/x?urlappend=a#sec2', path: '/10.1000/x', query: 'urlappend=a', fragment: '#sec2', why: 'R§1 step 1: # in the query' },
    { raw: '/a#b?c', path: '/a', query: '', fragment: '#b?c', why: 'ours, RFC 3986: the first # starts the fragment' },
    { raw: '/x#', path: '/x', query: '', fragment: '#', why: 'an empty fragment is still a fragment' },
    { raw: '/x?a=1?b=2', path: '/x', query: 'a=1?b=2', fragment: undefined, why: 'only the first ? splits' },
    { raw: 'http://localhost:8000/10.1000/x?y', path: '/10.1000/x', query: 'y', fragment: undefined, why: 'RFC 9112 absolute-form' },
    { raw: 'http://localhost:8000', path: '/', query: '', fragment: undefined, why: 'RFC 9112 absolute-form without a path' },
    { raw: '', path: '', query: '', fragment: undefined, why: 'nothing' }
  ]

  it.each(rows)('$raw → path $path, query "$query", fragment $fragment ($why)', ({ raw, path, query, fragment }) => {
    expect(splitRequestTarget(raw)).toEqual({ path, query, fragment })
  })
})

describe('percentDecode', () => {
  const rows: Array<{ input: string; output: string | undefined; why: string }> = [
    { input: 'a+b', output: 'a+b', why: 'R§4: decodeURLIgnorePlus' },
    { input: '%3Fa%3Db', output: '?a=b', why: 'probe: urlappend=%3Fa%3Db' },
    { input: '%26x%3D1', output: '&x=1', why: 'probe: urlappend=%26x%3D1' },
    { input: 'role%3Ametadata', output: 'role:metadata', why: 'decoded once' },
    { input: '%2520', output: '%20', why: 'decoded once only' },
    { input: '100%', output: '100%', why: 'D§2.2: lone %' },
    { input: '%E2%82', output: undefined, why: 'D§2.2: truncated UTF-8' },
    { input: 'plain', output: 'plain', why: 'nothing to decode' }
  ]
  it.each(rows)('$input → $output ($why)', ({ input, output }) => {
    expect(percentDecode(input)).toBe(output)
  })
})

describe('cacheKey: which spellings share one cache entry', () => {
  const rows: Array<{ handle: string; key: string; why: string }> = [
    { handle: '10.5555/plain', key: '10.5555/PLAIN', why: 'probe: /10.5555/PLAIN resolves the same' },
    { handle: '10.1021/jacs.5c01100', key: '10.1021/JACS.5C01100', why: 'captured shortDOI 10/p54k alias target is upper-case' },
    { handle: '10.5555/café', key: '10.5555/CAFé', why: 'D§2.8: only ASCII folds, é stays' },
    { handle: '10.5555/Straße', key: '10.5555/STRAßE', why: 'D§2.8: ß is not ASCII' },
    { handle: '10.5555/ıi', key: '10.5555/ıI', why: 'D§2.8: dotless i is not ASCII' },
    { handle: '10.5594/sMPTE', key: '10.5594/SMPTE', why: 'R§1 case: [DOI-HB25] §4.3.4 example' }
  ]
  it.each(rows)('$handle → $key ($why)', ({ handle, key }) => {
    expect(cacheKey(handle)).toBe(key)
  })
})

describe('encodeURL: the Location header', () => {
  const rows: Array<{ url: string; encoded: string; why: string }> = [
    {
      url: 'https://onlinelibrary.wiley.com/doi/10.1002/(SICI)1098-2418(199807)12:4%3C335::AID-RSA2%3E3.0.CO;2-U',
      encoded: 'https://onlinelibrary.wiley.com/doi/10.1002/(SICI)1098-2418(199807)12:4%3C335::AID-RSA2%3E3.0.CO;2-U',
      why: 'html-proofer#629: stored %3C stays %3C'
    },
    { url: 'http://example.org/a<b>', encoded: 'http://example.org/a%3Cb%3E', why: 'R§2: raw < > encoded' },
    { url: 'http://example.org/a b', encoded: 'http://example.org/a%20b', why: 'R§2: space' },
    { url: 'http://example.org/é', encoded: 'http://example.org/%C3%A9', why: 'R§2: UTF-8' },
    { url: 'http://example.org/100%', encoded: 'http://example.org/100%', why: 'R§2: % is kept, even alone' },
    { url: 'http://example.org/first?a=b', encoded: 'http://example.org/first?a=b', why: 'probe: urlappend result' },
    { url: 'http://example.org/loc-b&x=1', encoded: 'http://example.org/loc-b&x=1', why: 'probe: urlappend result' },
    { url: "http://e.org/!$()*,:@/;=+&'?#[x]~", encoded: "http://e.org/!$()*,:@/;=+&'?#[x]~", why: 'R§2: the kept set' },
    { url: 'http://e.org/"{}|\\^`', encoded: 'http://e.org/%22%7B%7D%7C%5C%5E%60', why: 'R§2: everything else' },
    { url: 'http://e.org/x\r\nSet-Cookie: a', encoded: 'http://e.org/x%0D%0ASet-Cookie:%20a', why: 'a header can never be split' },
    { url: 'http://e.org/\u0001\u001f\u007f', encoded: 'http://e.org/%01%1F%7F', why: 'ASCII controls: one byte, two hex digits' },
    { url: 'http://e.org/😀', encoded: 'http://e.org/%F0%9F%98%80', why: '4-byte UTF-8' },
    { url: 'http://e.org/\uD800', encoded: 'http://e.org/%EF%BF%BD', why: 'a lone surrogate becomes U+FFFD' }
  ]
  it.each(rows)('$url → $encoded ($why)', ({ url, encoded }) => {
    expect(encodeURL(url)).toBe(encoded)
  })
})

describe('encodeURLPath: self-links and upstream paths', () => {
  const rows: Array<{ handle: string; encoded: string; why: string }> = [
    { handle: '10.5555/hash#frag', encoded: '10.5555/hash%23frag', why: 'probe: the form that resolves' },
    { handle: '10.5555/percent%20x', encoded: '10.5555/percent%2520x', why: 'probe: the form that resolves' },
    { handle: '10.5555/query?x=1', encoded: '10.5555/query%3Fx=1', why: 'probe: the form that resolves' },
    { handle: '10.5555/with space', encoded: '10.5555/with%20space', why: 'probe' },
    { handle: '10.5555/café', encoded: '10.5555/caf%C3%A9', why: 'probe' },
    { handle: '10.1000/x+y', encoded: '10.1000/x%2By', why: 'R§2: + encoded' },
    { handle: "10.1000/a&b'c[d]", encoded: '10.1000/a%26b%27c%5Bd%5D', why: "R§2: & ' [ ] encoded" },
    { handle: '10.1000/100%', encoded: '10.1000/100%25', why: 'R§2: % encoded' },
    {
      handle: '10.1002/(SICI)1098-2418(199807)12:4<335::AID-RSA2>3.0.CO;2-U',
      encoded: '10.1002/(SICI)1098-2418(199807)12:4%3C335::AID-RSA2%3E3.0.CO;2-U',
      why: 'tricky: SICI'
    },
    { handle: '10.5555//plain/', encoded: '10.5555//plain/', why: 'slashes kept as they are' }
  ]
  it.each(rows)('$handle → $encoded ($why)', ({ handle, encoded }) => {
    expect(encodeURLPath(handle)).toBe(encoded)
  })

  // every self-link we write must lead back to the same handle
  const roundTrip = [
    '10.5555/hash#frag',
    '10.5555/percent%20x',
    '10.5555/query?x=1',
    '10.1000/x+y',
    '10.1000/100%',
    '10.1002/(sici)1099-050x(199823/24)37:3/4<197::aid-hrm2>3.0.co;2-#',
    '10.1016/üникóδé-дôΐ',
    '10.1016/སྦ་བཞེད་',
    '10.5555//plain/',
    '10.1000/a b'
  ]
  it.each(roundTrip)('a link to %s resolves back to it', (handle) => {
    expect(handleFromPath('/' + encodeURLPath(handle), opts)).toEqual({ ok: true, handle })
  })
})

describe('encodeURLComponentHdl: {hdl} in href_template', () => {
  const rows: Array<{ handle: string; encoded: string; why: string }> = [
    { handle: '10.17879/91968401496', encoded: '10.17879%2F91968401496', why: 'R§3 [OBS-MS] showurls output' },
    { handle: '10.5281/zenodo.1005176', encoded: '10.5281%2Fzenodo.1005176', why: 'R§9 datacite#213' },
    { handle: '10.5555/with space', encoded: '10.5555%2Fwith%20space', why: 'R§3: space → %20' },
    {
      handle: '10.1002/(SICI)1098-2418(199807)12:4<335::AID-RSA2>3.0.CO;2-U',
      encoded: '10.1002%2F(SICI)1098-2418(199807)12:4%3C335::AID-RSA2%3E3.0.CO%3B2-U',
      why: 'tricky: SICI'
    },
    {
      handle: '10.1000/a&b=c?d#e+f%g',
      encoded: '10.1000%2Fa%26b%3Dc%3Fd%23e%2Bf%25g',
      why: 'safe inside ?dois={hdl}&format=… (10.SERV/CROSSREF)'
    },
    { handle: '10.1000/é', encoded: '10.1000%2F%C3%A9', why: 'UTF-8' }
  ]
  it.each(rows)('$handle → $encoded ($why)', ({ handle, encoded }) => {
    expect(encodeURLComponentHdl(handle)).toBe(encoded)
  })
})

describe('prefixOf', () => {
  const rows: Array<[handle: string, prefix: string]> = [
    ['10.1000/x/y', '10.1000'], // the part before the FIRST slash
    ['10.1000', '10.1000'], // D§2.6 prefix-only path
    ['10/b6vnmd', '10'], // shortDOI prefix
    ['', '']
  ]
  it.each(rows)('the prefix of %s is %s', (handle, prefix) => {
    expect(prefixOf(handle)).toBe(prefix)
  })
})

describe('hasControlChar: C0 and C1 controls (D§2.2)', () => {
  const rows: Array<{ label: string; s: string; has: boolean }> = [
    { label: 'NUL', s: 'a\u0000', has: true },
    { label: 'U+001F', s: '\u001f', has: true },
    { label: 'DEL', s: '\u007f', has: true },
    { label: 'NEL U+0085', s: '\u0085', has: true },
    { label: 'U+009F', s: '\u009f', has: true },
    { label: 'a space', s: 'a b', has: false },
    { label: 'NBSP, the first char after C1', s: '\u00a0', has: false },
    { label: 'U+2028, a separator', s: '\u2028', has: false },
    { label: 'café 😀', s: 'café 😀', has: false }
  ]
  it.each(rows)('$label → $has', ({ s, has }) => {
    expect(hasControlChar(s)).toBe(has)
  })
})
