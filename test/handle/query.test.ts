import { describe, expect, it } from 'vitest'
import type { ProxyParams } from '../../src/handle/query.js'
import { hasTypeOrIndexFilter, parseProxyQuery } from '../../src/handle/query.js'

// Sources: R§4 = behaviour.md R4 (parsing rules and table, [HNS92] HDLServletRequest.parseGetParams),
// D§6 = behaviour.md §6, probe = test/fixtures/cnri_hdlproxy_9.2.0_probe.txt.

/** What an empty query means. */
const NONE: Omit<ProxyParams, 'all'> = {
  noredirect: false,
  auth: false,
  cert: false,
  bypassCache: false,
  ignoreAliases: false,
  indexes: undefined,
  types: [],
  urlappend: undefined,
  locatt: [],
  action: 'redirect',
  country: undefined,
  nols: false
}

/** What a query means, without the raw key/value map (checked on its own below). */
function meaning(query: string, fragment?: string): Omit<ProxyParams, 'all'> {
  const { all, ...rest } = parseProxyQuery(query, fragment)
  expect(all).toBeInstanceOf(Map)
  return rest
}

describe('parseProxyQuery: what each query parameter does', () => {
  const rows: Array<{ query: string; fragment?: string; expected: Partial<ProxyParams>; why: string }> = [
    { query: '', expected: {}, why: 'no query: redirect' },
    // presence semantics
    { query: 'noredirect', expected: { noredirect: true, action: 'showvalues' }, why: 'probe ?noredirect' },
    { query: 'noredirect=', expected: { noredirect: true, action: 'showvalues' }, why: 'R§4: presence' },
    { query: 'noredirect=0', expected: { noredirect: true, action: 'showvalues' }, why: 'D§6: noredirect=0 still means on' },
    { query: 'noredirect=false', expected: { noredirect: true, action: 'showvalues' }, why: 'R§4: any value counts' },
    { query: 'auth', expected: { auth: true, bypassCache: true }, why: 'probe ?auth; D§3: auth skips the cache' },
    { query: 'auth=no', expected: { auth: true, bypassCache: true }, why: 'R§4: presence, unlike the REST API booleans' },
    { query: 'cert=0', expected: { cert: true, bypassCache: true }, why: 'R§4: presence; R§11: cert skips the cache too' },
    { query: 'Auth&CERT', expected: {}, why: 'R§4: keys are case-sensitive, so neither skips the cache' },
    { query: 'ignore_aliases', expected: { ignoreAliases: true }, why: 'probe ?ignore_aliases' },
    { query: 'noalias', expected: { ignoreAliases: true }, why: 'D§6 synonym' },
    { query: 'NOREDIRECT', expected: {}, why: 'R§4: keys are case-sensitive (Java HashMap)' },
    // index and type
    { query: 'index=2', expected: { indexes: [2] }, why: 'probe ?index=2' },
    { query: 'index=1&index=300', expected: { indexes: [1, 300] }, why: 'R§4: repeatable' },
    { query: 'index=1&index=x', expected: { indexes: undefined }, why: 'D§6: one non-integer drops the whole filter' },
    { query: 'index=', expected: { indexes: undefined }, why: 'R§4: "" is not an integer' },
    { query: 'index=1.0', expected: { indexes: undefined }, why: 'Integer.parseInt rejects decimals' },
    { query: 'index=%201', expected: { indexes: undefined }, why: 'Integer.parseInt rejects spaces' },
    { query: 'index=+7&index=-1&index=007', expected: { indexes: [7, -1, 7] }, why: 'Integer.parseInt accepts a sign and leading zeros' },
    { query: 'index=2147483648', expected: { indexes: undefined }, why: 'Integer.parseInt: out of 32-bit range' },
    { query: 'type=URL', expected: { types: ['URL'] }, why: 'probe ?type=URL' },
    { query: 'type=URL&type=EMAIL', expected: { types: ['URL', 'EMAIL'] }, why: 'probe /api ?type=URL&type=EMAIL' },
    { query: 'type=URL.', expected: { types: ['URL.'] }, why: 'R§4: prefix form is kept for the filter' },
    { query: 'type=10320%2Floc', expected: { types: ['10320/loc'] }, why: 'decoded' },
    // urlappend
    { query: 'urlappend=%3Fa%3Db', expected: { urlappend: '?a=b' }, why: 'probe: Location http://example.org/first?a=b' },
    { query: 'urlappend=%26x%3D1&locatt=id:2', expected: { urlappend: '&x=1', locatt: ['id:2'] }, why: 'probe' },
    {
      query: 'urlappend=%3Fa=1%26b=2',
      expected: { urlappend: '?a=1&b=2' },
      why: '[DOI-HB25] §6.4.3 example: %26 keeps the & in the value'
    },
    { query: 'urlappend=a+b', expected: { urlappend: 'a+b' }, why: 'R§4: + stays +' },
    { query: 'urlappend=1&urlappend=2', expected: { urlappend: '1' }, why: 'R§4: getParameter returns the first' },
    { query: '', fragment: '#sec2', expected: { urlappend: '#sec2' }, why: 'R§1 step 1: a raw #fragment becomes urlappend, # included' },
    { query: '', fragment: '#caf%C3%A9', expected: { urlappend: '#café' }, why: 'R§1 step 1: percent-decoded' },
    { query: 'urlappend=%3Fa', fragment: '#x', expected: { urlappend: '#x' }, why: '[HNS92] adds the fragment first, so it wins' },
    // locatt and action
    { query: 'locatt=country:gb', expected: { locatt: ['country:gb'] }, why: 'probe' },
    { query: 'locatt=view:metadata&locatt=id:2', expected: { locatt: ['view:metadata', 'id:2'] }, why: 'R§4: repeatable, in order' },
    { query: 'action=showurls', expected: { action: 'showurls' }, why: 'probe ?action=showurls' },
    { query: 'action=SHOWURLS', expected: { action: 'showurls' }, why: 'R§4: lower-cased' },
    { query: 'action=showvalues', expected: { action: 'showvalues' }, why: 'R§4' },
    { query: 'action=api', expected: { action: 'api' }, why: 'R§4' },
    { query: 'action=redirect', expected: { action: 'redirect' }, why: 'R§4' },
    { query: 'action=toolbar', expected: { action: 'redirect' }, why: 'R§4: unknown → redirect' },
    { query: 'action=', expected: { action: 'redirect' }, why: 'R§4: unknown → redirect' },
    { query: 'action=metadata', expected: { action: 'redirect', locatt: ['role:metadata'] }, why: 'R§4: metadata = redirect + locatt' },
    {
      query: 'locatt=id:1&action=Metadata',
      expected: { action: 'redirect', locatt: ['id:1', 'role:metadata'] },
      why: "[HNS92]: role:metadata is added after the user's"
    },
    {
      query: 'noredirect&action=redirect',
      expected: { noredirect: true, action: 'redirect' },
      why: 'R§4: noredirect only applies without an action'
    },
    { query: 'noredirect&action=bogus', expected: { noredirect: true, action: 'redirect' }, why: 'R§4: an unknown action was still given' },
    { query: 'locs', expected: { action: 'showurls' }, why: 'D§6 synonym for action=showurls' },
    {
      query: 'locs&noredirect',
      expected: { noredirect: true, action: 'showurls' },
      why: 'locs is an action, so noredirect does not apply'
    },
    { query: 'locs&action=showvalues', expected: { action: 'showvalues' }, why: 'an explicit action wins over the synonym' },
    // country, nols
    { query: 'country=gb', expected: { country: 'gb' }, why: 'R§4' },
    { query: 'country=', expected: { country: undefined }, why: 'empty: fall back to header / GeoIP' },
    { query: 'nols=y', expected: { nols: true }, why: 'R§10' },
    { query: 'nosfx=y', expected: { nols: true }, why: 'R§10 deprecated synonym' },
    // separators and decoding
    { query: 'noredirect;type=URL', expected: { noredirect: true, action: 'showvalues', types: ['URL'] }, why: 'D§6: ; separates too' },
    { query: '&&noredirect&;', expected: { noredirect: true, action: 'showvalues' }, why: 'empty pieces are skipped' },
    { query: 'no%72edirect', expected: { noredirect: true, action: 'showvalues' }, why: 'keys are decoded too' },
    { query: 'type=%FF', expected: { types: ['%FF'] }, why: 'ours: invalid UTF-8 is kept raw, never an error' },
    { query: 'locatt=a=b', expected: { locatt: ['a=b'] }, why: 'R§4: split at the first = only' }
  ]

  it.each(rows)('?$query ($why)', ({ query, fragment, expected }) => {
    expect(meaning(query, fragment)).toEqual({ ...NONE, ...expected })
  })
})

describe('parseProxyQuery: the raw key/value map', () => {
  it('keeps every key and value in order, decoded, with case', () => {
    // R§4: repeated keys keep every value; a key without = gets ''
    const { all } = parseProxyQuery('a=1&B=2;a=3&flag&x=%3D&x')
    expect([...all.entries()]).toEqual([
      ['a', ['1', '3']],
      ['B', ['2']],
      ['flag', ['']],
      ['x', ['=', '']]
    ])
  })
})

describe('hasTypeOrIndexFilter: when the values-not-found page can apply', () => {
  const rows: Array<[query: string, filtered: boolean]> = [
    ['', false],
    ['noredirect', false],
    ['type=URL', true], // probe ?type=EMAIL on a record → values page
    ['index=2', true],
    ['index=x', false], // D§6: dropped filter is no filter
    ['type=', true] // [HNS92] sends an empty type; it matches nothing
  ]
  it.each(rows)('?%s → %s', (query, filtered) => {
    expect(hasTypeOrIndexFilter(parseProxyQuery(query))).toBe(filtered)
  })
})
