import { describe, expect, it } from 'vitest'
import type { HandleValue } from '../../src/handle/types.js'
import {
  adminText,
  aliasTarget,
  expiresAt,
  expiresFrom,
  expiryRule,
  filterValues,
  firstUrlValue,
  nicerTimestamp,
  recordCacheSeconds,
  valueTtlSeconds,
  vlistEntries
} from '../../src/handle/record.js'

// Sources: probe = test/fixtures/cnri_hdlproxy_9.2.0_probe.txt; captured = test/fixtures/doiorg_api_handles_captured.json;
// crossref = test/fixtures/handle_10.SERV-CROSSREF_record_2020.json; R§n = behaviour.md Rn; D§n = behaviour.md §n.

const TS = '2026-11-22T10:39:19Z'

function str(index: number, type: string, value: string, ttl: number | string = 86400): HandleValue {
  return { index, type, data: { format: 'string', value }, ttl, timestamp: TS }
}

function admin(index: number, handle: string, adminIndex: number, permissions: unknown): HandleValue {
  return {
    index,
    type: 'HS_ADMIN',
    data: { format: 'admin', value: { handle, index: adminIndex, permissions } },
    ttl: 86400,
    timestamp: TS
  }
}

const ttl = (t: number | string): HandleValue => str(1, 'URL', 'http://example.org/', t)

// probe records
const PLAIN = [admin(100, '0.NA/10.5555', 300, '111111111111'), str(1, 'URL', 'http://example.org/plain')]
const MULTI = [
  admin(100, '0.NA/10.5555', 300, '111111111111'),
  str(1, 'URL', 'http://example.org/first'),
  str(2, 'URL', 'http://example.org/second'),
  str(3, 'EMAIL', 'someone@example.org'),
  str(4, 'DESC', 'a description')
]
const ALIAS = [admin(100, '0.NA/10.5555', 300, '111111111111'), str(1, 'HS_ALIAS', '10.5555/plain')]
// captured: GET https://doi.org/api/handles/10/p54k and 10.1021/jacs.5c01100
const SHORTDOI = [admin(100, '0.NA/10', 200, '011111110010'), str(1, 'HS_ALIAS', '10.1021/JACS.5C01100')]
const JACS = [
  str(1, 'URL', 'https://pubs.acs.org/doi/10.1021/jacs.5c01100'),
  str(700050, '700050', '2025031202241500560'),
  admin(100, '0.na/10.1021', 200, '111111110010')
]
const SUBTYPES = [
  str(1, 'URL.alt', 'http://example.org/alt'),
  str(2, 'URL', 'http://example.org/url'),
  str(3, 'URLX', 'http://example.org/urlx'),
  str(4, '0.TYPE/URL', 'http://example.org/zero-type'),
  str(5, 'url.foo', 'http://example.org/foo')
]

const indexes = (values: readonly HandleValue[]): number[] => values.map((v) => v.index)

describe('filterValues: which values ?type= and ?index= keep', () => {
  const rows: Array<{ record: HandleValue[]; filter: { indexes?: number[]; types?: string[] }; kept: number[]; why: string }> = [
    { record: MULTI, filter: {}, kept: [100, 1, 2, 3, 4], why: 'no filter: all values' },
    { record: MULTI, filter: { indexes: [], types: [] }, kept: [100, 1, 2, 3, 4], why: 'empty filters: all values' },
    { record: MULTI, filter: { types: ['URL'] }, kept: [1, 2], why: 'probe ?type=URL' },
    { record: MULTI, filter: { types: ['url'] }, kept: [1, 2], why: 'R§4: case-insensitive' },
    { record: MULTI, filter: { indexes: [2] }, kept: [2], why: 'probe ?index=2' },
    { record: MULTI, filter: { types: ['URL', 'EMAIL'] }, kept: [1, 2, 3], why: 'probe /api ?type=URL&type=EMAIL' },
    {
      record: PLAIN,
      filter: { indexes: [1], types: ['HS_ADMIN'] },
      kept: [100, 1],
      why: 'probe /api ?index=1&type=HS_ADMIN: union, record order'
    },
    { record: MULTI, filter: { indexes: [4, 100] }, kept: [100, 4], why: 'record order, not filter order' },
    { record: PLAIN, filter: { indexes: [999] }, kept: [], why: 'probe /api ?index=999: values not found' },
    { record: PLAIN, filter: { types: ['EMAIL'] }, kept: [], why: 'probe ?type=EMAIL: values not found' },
    { record: SUBTYPES, filter: { types: ['URL.'] }, kept: [1, 2, 5], why: 'R§4 isParentTypeInArray: URL. matches URL and URL.*' },
    { record: SUBTYPES, filter: { types: ['URL'] }, kept: [2], why: 'R§4: exact, URL does not match URL.alt' },
    { record: SUBTYPES, filter: { types: ['URL.foo'] }, kept: [5], why: 'R§4: exact subtype, case-insensitive' },
    { record: SUBTYPES, filter: { types: ['url.alt.'] }, kept: [1], why: 'R§4: the bare type of a prefix form' },
    { record: SUBTYPES, filter: { types: [''] }, kept: [], why: 'an empty type matches nothing' },
    {
      record: [str(2, '10320/loc', '<locations/>')],
      filter: { types: ['10320/LOC'] },
      kept: [2],
      why: 'R§3: 10320/LOC and 10320/loc are one type'
    }
  ]
  it.each(rows)('$filter keeps $kept ($why)', ({ record, filter, kept }) => {
    expect(indexes(filterValues(record, filter))).toEqual(kept)
  })
})

const NOW = Date.parse('2026-11-22T10:39:28Z')

describe('valueTtlSeconds: how long one value may be cached', () => {
  const rows: Array<{ ttl: number | string; seconds: number; why: string }> = [
    { ttl: 86400, seconds: 86400, why: 'probe: every value has ttl 86400' },
    { ttl: 3600, seconds: 3600, why: 'relative' },
    { ttl: 0, seconds: 0, why: 'R§11: 0 means do not cache' },
    { ttl: -5, seconds: 0, why: 'a negative relative ttl is already expired' },
    { ttl: 12.7, seconds: 12, why: 'whole seconds' },
    { ttl: '2026-11-22T11:39:28Z', seconds: 3600, why: 'R§11: absolute ISO ttl counts from now' },
    { ttl: '2026-11-22T12:39:28+01:00', seconds: 3600, why: 'absolute with an offset' },
    { ttl: '2026-11-22T10:39:28.500Z', seconds: 0, why: 'less than a second left' },
    { ttl: '2026-11-21T00:00:00Z', seconds: 0, why: 'absolute in the past' },
    { ttl: 'soon', seconds: 86400, why: 'unparsable → the reference default' },
    { ttl: '3600', seconds: 86400, why: 'not ISO: never read as the year 3600' }
  ]
  it.each(rows)('ttl $ttl → $seconds s ($why)', ({ ttl: t, seconds }) => {
    expect(valueTtlSeconds(ttl(t), NOW)).toBe(seconds)
  })
})

describe('recordCacheSeconds: how long a whole record stays in our cache (D§3)', () => {
  const opts = { maxSeconds: 86400, floorSeconds: 60 }
  const rows: Array<{ ttls: Array<number | string>; seconds: number; why: string }> = [
    { ttls: [], seconds: 86400, why: 'empty record: the maximum' },
    { ttls: [86400, 86400], seconds: 86400, why: 'probe record' },
    { ttls: [86400, 3600], seconds: 3600, why: 'the smallest ttl' },
    { ttls: [30], seconds: 60, why: 'never below the floor' },
    { ttls: [0, 86400], seconds: 0, why: 'a ttl of 0 means do not cache, floor or not' },
    { ttls: [172800], seconds: 86400, why: 'capped at the maximum (24 h)' },
    { ttls: ['2026-11-22T12:39:28Z'], seconds: 7200, why: 'absolute, from now' },
    { ttls: ['2026-11-01T00:00:00Z', 86400], seconds: 0, why: 'an absolute time already past is a ttl of 0' },
    { ttls: ['garbage'], seconds: 86400, why: 'unparsable counts as 86400' }
  ]
  it.each(rows)('ttls $ttls → $seconds s ($why)', ({ ttls, seconds }) => {
    expect(recordCacheSeconds(ttls.map(ttl), NOW, opts)).toBe(seconds)
  })

  it('uses the configured maximum', () => {
    expect(recordCacheSeconds([ttl(86400)], NOW, { maxSeconds: 3600, floorSeconds: 60 })).toBe(3600)
  })

  it('a record of 300,000 values (more arguments than a call may take) still gets its smallest ttl', () => {
    const values = Array.from({ length: 300_000 }, (_, i) => ttl(i === 123_456 ? 120 : 86400))
    expect(recordCacheSeconds(values, NOW, opts)).toBe(120)
  })
})

describe('expiresAt: the Expires header of a redirect (D§4)', () => {
  const hour = 3600_000
  const rows: Array<{ ttls: Array<number | string>; expires: string; why: string }> = [
    { ttls: [86400], expires: '2026-11-23T10:39:28.000Z', why: 'probe: Expires Mon, 23 Nov 2026 10:39:28 GMT' },
    { ttls: [86400, 3600], expires: new Date(NOW + hour).toISOString(), why: 'the smallest ttl of the values used' },
    { ttls: [604800], expires: '2026-11-24T10:39:28.000Z', why: 'R§2: capped at 2 days' },
    { ttls: ['2030-01-01T00:00:00Z'], expires: '2026-11-24T10:39:28.000Z', why: 'R§2: absolute, capped at 2 days' },
    { ttls: ['2026-11-22T10:41:00.250Z'], expires: '2026-11-22T10:41:00.250Z', why: 'R§2: absolute time as is' },
    { ttls: ['2026-01-01T00:00:00Z'], expires: '2026-11-22T10:39:28.000Z', why: 'absolute in the past: now' },
    { ttls: [0], expires: '2026-11-22T10:39:28.000Z', why: 'ttl 0: now' },
    { ttls: [], expires: '2026-11-24T10:39:28.000Z', why: 'no values used: the 2-day cap' }
  ]
  it.each(rows)('ttls $ttls → Expires $expires ($why)', ({ ttls, expires }) => {
    expect(new Date(expiresAt(ttls.map(ttl), NOW)).toISOString()).toBe(expires)
  })
})

describe('expiryRule: Expires worked out once per record, applied at each request', () => {
  const later = NOW + 90 * 60_000
  it.each([
    { ttls: [86400], why: 'relative ttl' },
    { ttls: [86400, 3600], why: 'the smallest of several' },
    { ttls: [604800], why: 'capped at 2 days' },
    { ttls: ['2026-11-22T12:00:00Z'], why: 'an absolute time, reached between the two requests' },
    { ttls: ['2026-11-22T10:41:00.250Z', 86400], why: 'absolute and relative together' },
    { ttls: ['2026-01-01T00:00:00Z'], why: 'absolute in the past' },
    { ttls: [], why: 'no values used' }
  ])('ttls $ttls ($why): the same Expires as expiresAt, now and 90 minutes later', ({ ttls }) => {
    const used = ttls.map(ttl)
    const rule = expiryRule(used)
    expect(expiresFrom(rule, NOW)).toBe(expiresAt(used, NOW))
    expect(expiresFrom(rule, later)).toBe(expiresAt(used, later))
  })
})

describe('aliasTarget: where HS_ALIAS points', () => {
  const rows: Array<{ record: HandleValue[]; target: string | undefined; why: string }> = [
    { record: ALIAS, target: '10.5555/plain', why: 'probe 10.5555/alias' },
    { record: SHORTDOI, target: '10.1021/JACS.5C01100', why: 'captured shortDOI 10/p54k' },
    { record: PLAIN, target: undefined, why: 'no alias' },
    { record: [str(1, 'HS_ALIAS', '10.1/a'), str(2, 'HS_ALIAS', '10.1/b')], target: '10.1/a', why: 'R§2: the first in record order' },
    { record: [str(1, 'hs_alias', '10.1/a')], target: '10.1/a', why: 'types are case-insensitive' },
    { record: [str(1, 'HS_ALIAS', ''), str(2, 'HS_ALIAS', '10.1/b')], target: '10.1/b', why: 'an empty target is no target' },
    {
      record: [admin(1, '0.NA/10', 200, '1')].map((v) => ({ ...v, type: 'HS_ALIAS' })),
      target: undefined,
      why: 'data that is not a string'
    }
  ]
  it.each(rows)('→ $target ($why)', ({ record, target }) => {
    expect(aliasTarget(record)).toBe(target)
  })
})

describe('firstUrlValue: the URL a legacy-only record redirects to (R§2 case A)', () => {
  const base64Url: HandleValue = { index: 1, type: 'URL', data: { format: 'base64', value: 'aHR0cDovL3g=' }, ttl: 86400 }
  const rows: Array<{ record: HandleValue[]; index: number | undefined; why: string }> = [
    { record: MULTI, index: 1, why: 'probe 10.5555/multi → http://example.org/first' },
    { record: [MULTI[2]!, MULTI[1]!], index: 2, why: 'R§2: record order, not index order' },
    { record: JACS, index: 1, why: 'captured 10.1021/jacs.5c01100' },
    { record: SUBTYPES, index: 2, why: 'R§2: exact URL before any subtype' },
    { record: [SUBTYPES[3]!, SUBTYPES[1]!], index: 4, why: 'R§2: 0.TYPE/URL counts as URL' },
    { record: [str(7, 'url', 'http://example.org/lower')], index: 7, why: 'case-insensitive' },
    { record: [SUBTYPES[0]!, SUBTYPES[4]!], index: 1, why: 'R§2: else the first URL.xxx subtype' },
    { record: [SUBTYPES[2]!], index: undefined, why: 'URLX is not a subtype of URL' },
    { record: [str(9, '0.TYPE/URL.x', 'http://example.org/x')], index: 9, why: 'subtype of 0.TYPE/URL' },
    { record: [str(1, 'EMAIL', 'a@b'), str(2, 'DESC', 'd')], index: undefined, why: 'no URL: the values page' },
    { record: [base64Url, SUBTYPES[0]!], index: 1, why: 'only string data counts' },
    { record: [str(1, 'URL', ' '), str(2, 'URL', 'http://example.org/b')], index: 2, why: 'a blank URL can never be redirected to' }
  ]
  it.each(rows)('→ index $index ($why)', ({ record, index }) => {
    const chosen = firstUrlValue(record)
    expect(chosen?.index).toBe(index)
    if (chosen !== undefined) expect(record).toContain(chosen)
  })
})

describe('nicerTimestamp: the values-page timestamp', () => {
  const rows: Array<{ iso: string | undefined; shown: string; why: string }> = [
    { iso: TS, shown: '2026-11-22 10:39:19Z', why: 'probe: 2026-11-22&nbsp;10:39:19Z' },
    { iso: '2015-04-03T21:20:03Z', shown: '2015-04-03 21:20:03Z', why: 'R§5: doi.org shows the same' },
    { iso: '2020-09-25T16:02:07.123Z', shown: '2020-09-25 16:02:07Z', why: 'milliseconds dropped' },
    { iso: '2020-09-25T18:02:07+02:00', shown: '2020-09-25 16:02:07Z', why: 'shown in UTC' },
    { iso: '1970-01-01T00:00:00Z', shown: '1970-01-01 00:00:00Z', why: 'epoch is a real time' },
    { iso: undefined, shown: 'NA', why: 'R§5: missing' },
    { iso: '', shown: 'NA', why: 'empty' },
    { iso: 'yesterday', shown: 'NA', why: 'not ISO' },
    { iso: '2020-13-45T99:00:00Z', shown: 'NA', why: 'not a date' }
  ]
  it.each(rows)('$iso → $shown ($why)', ({ iso, shown }) => {
    expect(nicerTimestamp(iso)).toBe(shown)
  })
})

describe('adminText: HS_ADMIN as the values page shows it (AdminRecord.toString)', () => {
  const ALL =
    'create hdl,delete hdl,create derived prefix,delete derived prefix,read val,modify val,del val,add val,modify admin,del admin,add admin,list'
  const rows: Array<{ value: HandleValue; text: string | undefined; why: string }> = [
    {
      value: admin(100, '0.NA/10.5555', 300, '111111111111'),
      text: `handle=0.NA/10.5555; index=300; [${ALL}]`,
      why: 'probe values page, exact text'
    },
    {
      value: SHORTDOI[0]!,
      text: 'handle=0.NA/10; index=200; [delete hdl,read val,modify val,del val,add val,modify admin,del admin,add admin]',
      why: 'captured 10/p54k 011111110010'
    },
    {
      value: JACS[2]!,
      text: 'handle=0.na/10.1021; index=200; [delete hdl,read val,modify val,del val,add val,modify admin,del admin,add admin,list]',
      why: 'captured Crossref 111111110010'
    },
    {
      value: admin(100, '0.NA/4263537', 200, '011111111111'),
      text: 'handle=0.NA/4263537; index=200; [create hdl,delete hdl,create derived prefix,delete derived prefix,read val,modify val,del val,add val,modify admin,del admin,add admin]',
      why: 'R§12 REST-API.txt: everything but list'
    },
    {
      value: admin(1, 'X/1', 300, '100000000000'),
      text: 'handle=X/1; index=300; [list]',
      why: '[HNS92] GsonUtility: the leftmost character is bit 11, list'
    },
    {
      value: admin(1, 'X/1', 300, '000000000001'),
      text: 'handle=X/1; index=300; [create hdl]',
      why: 'the rightmost character is bit 0, create hdl'
    },
    {
      value: admin(1, 'X/1', 300, '010000000000'),
      text: 'handle=X/1; index=300; [read val]',
      why: 'bit 10 is read val, listed after the prefix rights'
    },
    {
      value: admin(1, 'X/1', 300, '11'),
      text: 'handle=X/1; index=300; [create hdl,delete hdl]',
      why: 'a short string is read from the right'
    },
    { value: admin(1, 'X/1', 300, '000000000000'), text: 'handle=X/1; index=300; []', why: 'nothing granted' },
    { value: admin(1, 'X/1', 300, '*'), text: `handle=X/1; index=300; [${ALL}]`, why: '[HNS92] permsStringToArray: * is all' },
    { value: admin(1, 'X/1', 300, 4095), text: `handle=X/1; index=300; [${ALL}]`, why: '[HNS92]: a number is read as bits' },
    { value: admin(1, 'X/1', 300, true), text: `handle=X/1; index=300; [${ALL}]`, why: '[HNS92]: true is all' },
    { value: admin(1, 'X/1', 300, [false, true]), text: 'handle=X/1; index=300; [delete hdl]', why: '[HNS92]: an array is indexed by bit' },
    { value: admin(1, 'X/1', 300, undefined), text: 'handle=X/1; index=300; []', why: 'no permissions' },
    { value: str(1, 'URL', 'http://example.org/'), text: undefined, why: 'not an admin value' },
    {
      value: { index: 100, type: 'HS_ADMIN', data: { format: 'admin', value: { index: 200 } }, ttl: 86400 },
      text: undefined,
      why: 'admin data without a handle'
    }
  ]
  it.each(rows)('→ $text ($why)', ({ value, text }) => {
    expect(adminText(value)).toBe(text)
  })
})

describe('vlistEntries: HS_VLIST as the values page shows it', () => {
  const vlist = (value: unknown, type = 'HS_VLIST', format = 'vlist'): HandleValue => ({
    index: 200,
    type,
    data: { format, value },
    ttl: 86400
  })
  // crossref: the HS_VLIST of 10.SERV/CROSSREF (index 200)
  const crossref = [
    ['200/1', 300],
    ['200/4', 300],
    ['200/23', 300],
    ['200/27', 300],
    ['0.SERV/10.crossref', 311],
    ['10.cradmin/cruser', 300],
    ['10.SERV/CROSSREF', 303],
    ['10.SERV/CROSSREF', 305],
    ['10.SERV/CROSSREF', 307],
    ['10.SERV/CROSSREF', 311],
    ['10.SERV/CROSSREF', 312],
    ['10.SERV/CROSSREF', 313],
    ['10.SERV/CROSSREF', 314],
    ['10.SERV/CROSSREF', 315],
    ['10.SERV/CROSSREF', 316],
    ['200/28', 300]
  ] as const
  const rows: Array<{ value: HandleValue; entries: string[] | undefined; why: string }> = [
    {
      value: vlist(crossref.map(([handle, index]) => ({ handle, index }))),
      entries: crossref.map(([handle, index]) => `${index}:${handle}`),
      why: 'crossref record, all 16 in order'
    },
    { value: vlist([{ handle: '10.admin/TSODOI', index: 300 }]), entries: ['300:10.admin/TSODOI'], why: 'R§12: doi.org prefix pages' },
    { value: vlist([]), entries: [], why: 'an empty list' },
    { value: vlist([{ handle: 'a/1', index: 1 }, { handle: 2 }, null]), entries: ['1:a/1'], why: 'malformed entries are skipped' },
    { value: vlist([{ handle: 'a/1', index: 1 }], 'HS_VLIST', 'string'), entries: ['1:a/1'], why: 'the type alone is enough' },
    { value: vlist('200/1', 'HS_VLIST', 'string'), entries: undefined, why: 'not a list' },
    { value: str(1, 'URL', 'http://example.org/'), entries: undefined, why: 'not a vlist' }
  ]
  it.each(rows)('$why', ({ value, entries }) => {
    expect(vlistEntries(value)).toEqual(entries)
  })
})
