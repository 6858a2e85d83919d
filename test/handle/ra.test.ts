import { describe, expect, it } from 'vitest'
import { isDoiName, raDisplayName, raEntry, raServiceHandle, serializeRa, splitDoiList } from '../../src/handle/ra.js'
import type { DoiListItem, RaEntry } from '../../src/handle/ra.js'
import type { HandleValue } from '../../src/handle/types.js'

function str(index: number, type: string, value: string): HandleValue {
  return { index, type, data: { format: 'string', value }, ttl: 86400, timestamp: '2020-01-01T00:00:00Z' }
}

const ADMIN: HandleValue = {
  index: 100,
  type: 'HS_ADMIN',
  data: { format: 'admin', value: { handle: '0.NA/10', index: 200, permissions: '011111110010' } },
  ttl: 86400
}
// [CR-GL1499]: a Crossref prefix's namespace
const CROSSREF_NAMESPACE = '<HS_NAMESPACE><DOI.RA>10.SERV/CROSSREF</DOI.RA><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>'

describe('the DOI list is split on "," first, then each part percent-decoded (behaviour.md R8, [DOI-HB25] §4.7)', () => {
  it.each<[string, string, DoiListItem[]]>([
    ['one DOI', '10.1000/1', [{ given: '10.1000/1', doi: '10.1000/1' }]],
    [
      'two DOIs, in order',
      '10.1000/2,10.1000/1',
      [
        { given: '10.1000/2', doi: '10.1000/2' },
        { given: '10.1000/1', doi: '10.1000/1' }
      ]
    ],
    [
      'a "," sent as %2C stays inside its DOI',
      '10.1000/a%2Cb,10.1000/c',
      [
        { given: '10.1000/a,b', doi: '10.1000/a,b' },
        { given: '10.1000/c', doi: '10.1000/c' }
      ]
    ],
    [
      'an encoded backslash (the [OBS-S4] tacl\\_a\\_00276 query)',
      '10.1162/tacl%5C_a%5C_00276',
      [{ given: '10.1162/tacl\\_a\\_00276', doi: '10.1162/tacl\\_a\\_00276' }]
    ],
    ['"+" stays "+"', '10.1000/a+b', [{ given: '10.1000/a+b', doi: '10.1000/a+b' }]],
    ['an encoded "/" is decoded', '10.1000%2F1', [{ given: '10.1000/1', doi: '10.1000/1' }]],
    [
      'an EIDR DOI ([DOI-FS] example)',
      '10.5240/B1FA-0EEC-C316-3316-3A73-L',
      [{ given: '10.5240/B1FA-0EEC-C316-3316-3A73-L', doi: '10.5240/B1FA-0EEC-C316-3316-3A73-L' }]
    ],
    [
      'a space after the comma is echoed but not looked up',
      '10.1/a,%2010.1/b',
      [
        { given: '10.1/a', doi: '10.1/a' },
        { given: ' 10.1/b', doi: '10.1/b' }
      ]
    ],
    ['empty input is one empty entry', '', [{ given: '', doi: '' }]],
    [
      'a trailing comma keeps an empty entry',
      '10.1/a,',
      [
        { given: '10.1/a', doi: '10.1/a' },
        { given: '', doi: '' }
      ]
    ],
    [
      'bytes that are not UTF-8 are echoed raw and not looked up',
      '10.1/%FF,10.1/a',
      [
        { given: '10.1/%FF', doi: undefined },
        { given: '10.1/a', doi: '10.1/a' }
      ]
    ]
  ])('%s: %j', (_name, raw, items) => {
    expect(splitDoiList(raw)).toEqual(items)
  })
})

describe('a DOI name starts with "10." (behaviour.md R8: "Invalid DOI" otherwise)', () => {
  it.each<[string, boolean]>([
    ['10.1000/1', true],
    ['10.1108', true], // a prefix alone is fine (behaviour.md R8)
    ['10.1162/tacl\\_a\\_00276', true], // well formed; the lookup says it does not exist
    ['10.1000/a,b', true],
    ['notADoi', false], // behaviour.md R8 fixture
    ['', false],
    ['10.', false],
    ['10./x', false],
    ['11.1000/x', false],
    ['doi:10.1000/1', false],
    ['https://doi.org/10.1000/1', false],
    ['10/p54k', false], // shortDOIs are not supported (behaviour.md R8)
    ['10.1000/a\nb', false] // control characters are never part of a DOI (behaviour.md §2)
  ])('%j → %s', (doi, ok) => {
    expect(isDoiName(doi)).toBe(ok)
  })
})

describe('the RA service handle comes from the prefix record: HS_NAMESPACE <DOI.RA>, else HS_SERV (behaviour.md R8)', () => {
  it.each<[string, HandleValue[], string | undefined]>([
    ["a Crossref prefix's namespace ([CR-GL1499])", [ADMIN, str(400, 'HS_NAMESPACE', CROSSREF_NAMESPACE)], '10.SERV/CROSSREF'],
    [
      'HS_SERV 10.SERV/AIRITI, namespace without DOI.RA (doi.org/10.6890, behaviour.md R1)',
      [
        ADMIN,
        str(1, 'HS_SERV', '10.SERV/AIRITI'),
        str(2, 'EMAIL', 'x@example.org'),
        str(3, 'DESC', 'Airiti'),
        str(4, 'HS_NAMESPACE', '<HS_NAMESPACE><contact><email>x@example.org</email></contact></HS_NAMESPACE>')
      ],
      '10.SERV/AIRITI'
    ],
    ['HS_SERV 10.SERV/ISTIC (/api/handles/10.3969, behaviour.md R1)', [ADMIN, str(1, 'HS_SERV', '10.SERV/ISTIC')], '10.SERV/ISTIC'],
    [
      'DOI.RA wins over HS_SERV, wherever the values sit',
      [str(1, 'HS_SERV', '10.SERV/CROSSREF'), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA>10.SERV/DATACITE</DOI.RA></HS_NAMESPACE>')],
      '10.SERV/DATACITE'
    ],
    [
      'the 2011 Crossref form ([CR-SUP])',
      [str(1, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA>0.SERV/10.crossref</DOI.RA></HS_NAMESPACE>')],
      '0.SERV/10.crossref'
    ],
    [
      "an inactive prefix's namespace falls back to HS_SERV",
      [
        str(1, 'HS_NAMESPACE', '<HS_NAMESPACE><status>inactive</status><statusmsg>gone</statusmsg></HS_NAMESPACE>'),
        str(2, 'HS_SERV', '10.SERV/MEDRA')
      ],
      '10.SERV/MEDRA'
    ],
    ['malformed namespace XML is ignored', [str(1, 'HS_NAMESPACE', '<<<DOI.RA>'), str(2, 'HS_SERV', '10.SERV/JALC')], '10.SERV/JALC'],
    [
      'an empty DOI.RA is ignored',
      [str(1, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA> </DOI.RA></HS_NAMESPACE>'), str(2, 'HS_SERV', '10.SERV/KISTI')],
      '10.SERV/KISTI'
    ],
    [
      'the first of two DOI.RA',
      [str(1, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA>10.SERV/EIDR</DOI.RA><DOI.RA>10.SERV/OP</DOI.RA></HS_NAMESPACE>')],
      '10.SERV/EIDR'
    ],
    [
      'DOI.RA with an attribute, text trimmed, after an XML declaration',
      [str(1, 'HS_NAMESPACE', '<?xml version="1.0"?>\n<HS_NAMESPACE>\n  <DOI.RA since="2011"> 10.SERV/CNKI </DOI.RA>\n</HS_NAMESPACE>')],
      '10.SERV/CNKI'
    ],
    [
      "a DOI.RA nested deeper is not the prefix's RA",
      [str(1, 'HS_NAMESPACE', '<HS_NAMESPACE><x><DOI.RA>10.SERV/OP</DOI.RA></x></HS_NAMESPACE>')],
      undefined
    ],
    ['types match case-insensitively', [str(1, 'hs_serv', ' 10.SERV/DATACITE ')], '10.SERV/DATACITE'],
    [
      'an HS_SERV that is not a string is skipped',
      [{ index: 1, type: 'HS_SERV', data: { format: 'base64', value: 'AAEC' }, ttl: 1 }],
      undefined
    ],
    ['no HS_SERV and no namespace', [ADMIN, str(1, 'URL', 'https://example.org/')], undefined],
    ['no values at all', [], undefined]
  ])('%s', (_name, values, service) => {
    expect(raServiceHandle(values)).toBe(service)
  })

  it.each([
    '',
    '<',
    '<HS_NAMESPACE>',
    '</DOI.RA>',
    '<HS_NAMESPACE><DOI.RA>',
    '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;&a;</x>',
    '<a><b></a></b>',
    'plain text',
    '<HS_NAMESPACE><DOI.RA><![CDATA[x]]></DOI.RA></HS_NAMESPACE>',
    '\u0000<\u0000'
  ])('namespace XML %j never throws', (xml) => {
    expect(() => raServiceHandle([str(1, 'HS_NAMESPACE', xml)])).not.toThrow()
  })
})

describe("10.SERV/X → the RA's display name (behaviour.md R8)", () => {
  it.each<[string, string | undefined]>([
    ['10.SERV/CROSSREF', 'Crossref'],
    ['10.SERV/DEFAULT', 'Crossref'],
    ['10.SERV/DATACITE', 'DataCite'],
    ['10.SERV/ETH', 'DataCite'], // third-party mapping cited in behaviour.md R8
    ['10.SERV/MEDRA', 'mEDRA'],
    ['10.SERV/EIDR', 'EIDR'],
    ['10.SERV/JALC', 'JaLC'],
    ['10.SERV/KISTI', 'KISTI'],
    ['10.SERV/ISTIC', 'ISTIC'],
    ['10.SERV/AIRITI', 'Airiti'],
    ['10.SERV/CNKI', 'CNKI'],
    ['10.SERV/OP', 'OP'],
    ['10.serv/crossref', 'Crossref'], // handles fold ASCII case
    ['10.SERV/mEDRA', 'mEDRA'],
    ['0.SERV/10.crossref', 'Crossref'], // the 2011 form ([CR-SUP])
    [' 10.SERV/AIRITI ', 'Airiti'],
    ['10.SERV/SOMETHING-NEW', undefined], // the caller says "Unknown"
    ['10.SERV/', undefined],
    ['10.1000/CROSSREF', undefined],
    ['CROSSREF', undefined],
    ['10.SERV/TOSTRING', undefined],
    ['10.SERV/__PROTO__', undefined] // not an inherited property of the table
  ])('%j → %j', (service, name) => {
    expect(raDisplayName(service)).toBe(name)
  })

  it.each<[string, string, Record<string, string>, string | undefined]>([
    ['a configured RA the table does not know', '10.SERV/SOMETHING-NEW', { 'SOMETHING-NEW': 'New RA' }, 'New RA'],
    ['the configured name wins over the built-in one', '10.SERV/CROSSREF', { CROSSREF: 'Crossref (local)' }, 'Crossref (local)'],
    ['configured keys match case-insensitively too', '10.SERV/Something-New', { 'something-new': 'New RA' }, 'New RA'],
    ['other built-in names still apply', '10.SERV/DATACITE', { CROSSREF: 'Crossref (local)' }, 'DataCite'],
    ['an empty table changes nothing', '10.SERV/SOMETHING-NEW', {}, undefined]
  ])('%s', (_name, service, extra, expected) => {
    expect(raDisplayName(service, extra)).toBe(expected)
  })
})

describe('one answer per DOI (behaviour.md R8 states)', () => {
  const crossrefPrefix = [ADMIN, str(400, 'HS_NAMESPACE', CROSSREF_NAMESPACE)]
  const item = (doi: string): DoiListItem => ({ given: doi, doi })
  it.each<[string, DoiListItem, { doiExists: boolean | undefined; prefixValues?: HandleValue[] }, RaEntry]>([
    ['a Crossref DOI', item('10.1000/1'), { doiExists: true, prefixValues: crossrefPrefix }, { DOI: '10.1000/1', RA: 'Crossref' }],
    [
      'a prefix alone (10.1108 → Crossref, behaviour.md R8)',
      item('10.1108'),
      { doiExists: true, prefixValues: crossrefPrefix },
      { DOI: '10.1108', RA: 'Crossref' }
    ],
    ['not a 10. name', item('notADoi'), { doiExists: true }, { DOI: 'notADoi', status: 'Invalid DOI' }],
    ['an empty entry', item(''), { doiExists: false }, { DOI: '', status: 'Invalid DOI' }],
    ['undecodable bytes', { given: '10.1/%FF', doi: undefined }, { doiExists: false }, { DOI: '10.1/%FF', status: 'Invalid DOI' }],
    [
      'a suffix that does not exist ([OBS-S4])',
      item('10.1162/tacl\\_a\\_00276'),
      { doiExists: false, prefixValues: crossrefPrefix },
      { DOI: '10.1162/tacl\\_a\\_00276', status: 'DOI does not exist' }
    ],
    [
      'an unknown prefix (10.99999, behaviour.md R8)',
      item('10.99999'),
      { doiExists: false },
      { DOI: '10.99999', status: 'DOI does not exist' }
    ],
    [
      'a DOI we cannot look up (offline, not held): Unknown, as doi.org answers, never "does not exist"',
      item('10.1000/182'),
      { doiExists: undefined, prefixValues: crossrefPrefix },
      { DOI: '10.1000/182', status: 'Unknown' }
    ],
    [
      'an RA we cannot name',
      item('10.1/x'),
      { doiExists: true, prefixValues: [str(1, 'HS_SERV', '10.SERV/ELSEWHERE')] },
      { DOI: '10.1/x', status: 'Unknown' }
    ],
    ['a prefix record with no RA in it', item('10.1/x'), { doiExists: true, prefixValues: [ADMIN] }, { DOI: '10.1/x', status: 'Unknown' }],
    ['a prefix record that could not be read', item('10.1/x'), { doiExists: true }, { DOI: '10.1/x', status: 'Unknown' }],
    [
      '"DOI" echoes the DOI as given, spaces included',
      { given: ' 10.1000/1', doi: '10.1000/1' },
      { doiExists: true, prefixValues: crossrefPrefix },
      { DOI: ' 10.1000/1', RA: 'Crossref' }
    ]
  ])('%s', (_name, listItem, found, entry) => {
    expect(raEntry(listItem, found)).toEqual(entry)
  })

  it('uses the configured names', () => {
    expect(
      raEntry(item('10.1/x'), { doiExists: true, prefixValues: [str(1, 'HS_SERV', '10.SERV/ELSEWHERE')] }, { ELSEWHERE: 'Elsewhere' })
    ).toEqual({ DOI: '10.1/x', RA: 'Elsewhere' })
  })
})

describe('the JSON array, pretty-printed as doi.org documents it (behaviour.md R8)', () => {
  it.each<[string, RaEntry[], string]>([
    [
      'the documented EIDR example',
      [{ DOI: '10.5240/B1FA-0EEC-C316-3316-3A73-L', RA: 'EIDR' }],
      '[\n  {\n    "DOI": "10.5240/B1FA-0EEC-C316-3316-3A73-L",\n    "RA": "EIDR"\n  }\n]'
    ],
    [
      '"DOI" first, whatever order the entry was built in; errors as "status"',
      [{ RA: 'Crossref', DOI: '10.1108' } as RaEntry, { status: 'Invalid DOI', DOI: 'notADoi' } as RaEntry],
      '[\n  {\n    "DOI": "10.1108",\n    "RA": "Crossref"\n  },\n  {\n    "DOI": "notADoi",\n    "status": "Invalid DOI"\n  }\n]'
    ],
    [
      'a backslash in a DOI is escaped, as [OBS-S4] shows',
      [{ DOI: '10.1162/tacl\\_a\\_00276', status: 'DOI does not exist' }],
      '[\n  {\n    "DOI": "10.1162/tacl\\\\_a\\\\_00276",\n    "status": "DOI does not exist"\n  }\n]'
    ],
    ['no entries', [], '[]']
  ])('%s', (_name, entries, json) => {
    expect(serializeRa(entries)).toBe(json)
  })
})
