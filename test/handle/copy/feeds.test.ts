import { describe, expect, it } from 'vitest'
import {
  crossrefDay,
  crossrefUpdatesUrl,
  cursorFits,
  dataciteTime,
  dataciteUpdatesUrl,
  inPrefixes,
  MAX_CURSOR_LENGTH,
  MAX_UPDATE_PREFIXES,
  pageOf,
  pageUrl,
  runCoversScope,
  samePrefixes,
  scopeAfter,
  scopeOf,
  updateStateOf
} from '../../../src/handle/copy/feeds.js'
import type { FeedAgency, FeedPage, UpdateState } from '../../../src/handle/copy/feeds.js'

// Sources: Crossref REST API docs ("Deep paging with cursors": cursor=* then message.next-cursor until the
// items run out; cursors hold '+' and must be URL-encoded; filter from-update-date takes a day);
// DataCite support ("Pagination": page[cursor]=1 then links.next; the query field `updated`); plan-43 §1.12.

const T = Date.UTC(2026, 10, 27, 13, 30, 5) / 1000 // 2026-11-27T13:30:05Z

describe('the dates the feeds take', () => {
  it.each<[string, () => string, string]>([
    ['Crossref: the UTC day', () => crossrefDay(T), '2026-11-27'],
    ['Crossref: just before midnight UTC is still that day', () => crossrefDay(Date.UTC(2026, 0, 1, 23, 59, 59) / 1000), '2026-01-01'],
    ['DataCite: the UTC time to the second, Z', () => dataciteTime(T), '2026-11-27T13:30:05Z'],
    ['DataCite: a fraction of a second dropped', () => dataciteTime(T + 0.9), '2026-11-27T13:30:05Z']
  ])('%s', (_, made, expected) => {
    expect(made()).toBe(expected)
  })
})

describe('the URL of a page', () => {
  it.each<[string, string, string]>([
    [
      'Crossref, first page: cursor=*, rows=1000, mailto',
      crossrefUpdatesUrl('https://api.crossref.org', T, undefined, 'ops@example.org'),
      'https://api.crossref.org/works?filter=from-update-date%3A2026-11-27&rows=1000&cursor=*&mailto=ops%40example.org'
    ],
    [
      "Crossref, a cursor with '+' and '/' encoded",
      crossrefUpdatesUrl('https://api.crossref.org/', T, 'DnF1+ZXJ/5Z=', undefined),
      'https://api.crossref.org/works?filter=from-update-date%3A2026-11-27&rows=1000&cursor=DnF1%2BZXJ%2F5Z%3D'
    ],
    [
      'Crossref under a path of the base (a gateway)',
      crossrefUpdatesUrl('http://127.0.0.1:9/crossref', T, undefined, undefined),
      'http://127.0.0.1:9/crossref/works?filter=from-update-date%3A2026-11-27&rows=1000&cursor=*'
    ],
    [
      'DataCite, first page: the updated range, sorted, 1000 a page, cursor 1',
      dataciteUpdatesUrl('https://api.datacite.org', T),
      'https://api.datacite.org/dois?query=updated%3A%5B2026-11-27T13%3A30%3A05Z%20TO%20*%5D&sort=updated&page%5Bsize%5D=1000&page%5Bcursor%5D=1'
    ],
    [
      'DataCite, a later page: the saved next link as it is',
      pageUrl('datacite', 'https://api.datacite.org', { from: T, cursor: 'https://api.datacite.org/dois?page%5Bcursor%5D=abc' }, 'x@y.z'),
      'https://api.datacite.org/dois?page%5Bcursor%5D=abc'
    ]
  ])('%s', (_, made, expected) => {
    expect(made).toBe(expected)
  })

  it('the Crossref query reads back as the API expects it', () => {
    const q = new URL(crossrefUpdatesUrl('https://api.crossref.org', T, 'a+b', 'm@x.org')).searchParams
    expect([q.get('filter'), q.get('rows'), q.get('cursor'), q.get('mailto')]).toEqual([
      'from-update-date:2026-11-27',
      '1000',
      'a+b',
      'm@x.org'
    ])
  })

  it('the DataCite query reads back as the API expects it', () => {
    const q = new URL(dataciteUpdatesUrl('https://api.datacite.org', T)).searchParams
    expect([q.get('query'), q.get('sort'), q.get('page[size]'), q.get('page[cursor]')]).toEqual([
      'updated:[2026-11-27T13:30:05Z TO *]',
      'updated',
      '1000',
      '1'
    ])
  })
})

const BASE = 'https://api.datacite.org'
const work = { DOI: '10.1/a' }

describe('a page read', () => {
  it.each<[string, FeedAgency, unknown, FeedPage | string]>([
    [
      'Crossref: items and the next cursor',
      'crossref',
      { status: 'ok', message: { items: [work], 'next-cursor': 'c2', 'total-results': 7 } },
      { items: [work], next: 'c2', total: 7 }
    ],
    ['Crossref: an empty page ends the run', 'crossref', { message: { items: [], 'next-cursor': 'c3' } }, { items: [], next: undefined }],
    [
      'Crossref: works but no cursor is refused',
      'crossref',
      { message: { items: [work] } },
      "Crossref's page has works but no usable next-cursor"
    ],
    [
      'Crossref: a cursor of 5,000 characters is refused',
      'crossref',
      { message: { items: [work], 'next-cursor': 'x'.repeat(MAX_CURSOR_LENGTH + 1) } },
      "Crossref's page has works but no usable next-cursor"
    ],
    ['Crossref: not a work list', 'crossref', { message: 'busy' }, "Crossref's answer is not a list of works (no message.items)"],
    ['Crossref: JSON null', 'crossref', null, "Crossref's answer is not a list of works (no message.items)"],
    [
      'DataCite: data and the next link on its own API',
      'datacite',
      { data: [work], meta: { total: 3 }, links: { next: `${BASE}/dois?page%5Bcursor%5D=Mg` } },
      { items: [work], next: `${BASE}/dois?page%5Bcursor%5D=Mg`, total: 3 }
    ],
    ['DataCite: no next link: the last page', 'datacite', { data: [work], links: {} }, { items: [work], next: undefined }],
    [
      'DataCite: no data ends the run, a next link or not',
      'datacite',
      { data: [], links: { next: `${BASE}/dois?x` } },
      { items: [], next: undefined }
    ],
    [
      'DataCite: a next link to another host is refused',
      'datacite',
      { data: [work], links: { next: 'http://169.254.169.254/dois?page%5Bcursor%5D=1' } },
      'DataCite\'s next link "http://169.254.169.254/dois?page%5Bcursor%5D=1" leaves https://api.datacite.org/dois'
    ],
    [
      'DataCite: a next link to another path is refused',
      'datacite',
      { data: [work], links: { next: `${BASE}/admin` } },
      'DataCite\'s next link "https://api.datacite.org/admin" leaves https://api.datacite.org/dois'
    ],
    [
      'DataCite: a next link that is no URL',
      'datacite',
      { data: [work], links: { next: 'not a url' } },
      'DataCite\'s next link "not a url" is not a URL'
    ],
    [
      'DataCite: a next link of another type',
      'datacite',
      { data: [work], links: { next: 42 } },
      "DataCite's next link is not a URL of reasonable length"
    ],
    ['DataCite: not a list', 'datacite', { errors: [{ status: '500' }] }, "DataCite's answer is not a list of DOIs (no data)"]
  ])('%s', (_, agency, json, expected) => {
    expect(pageOf(agency, json, agency === 'crossref' ? 'https://api.crossref.org' : BASE)).toEqual(expected)
  })
})

describe('a saved cursor with the API configured now', () => {
  it.each<[string, FeedAgency, string | undefined, boolean]>([
    ['no cursor: the first page', 'datacite', undefined, true],
    ['a Crossref cursor is a token: always', 'crossref', 'AoJ+x/y=', true],
    ['a DataCite next link on the API configured', 'datacite', `${BASE}/dois?page%5Bcursor%5D=Mg`, true],
    ['a DataCite next link on an API no longer configured', 'datacite', 'https://old.example/dois?page%5Bcursor%5D=Mg', false]
  ])('%s', (_, agency, cursor, fits) => {
    expect(cursorFits(agency, cursor, BASE)).toBe(fits)
  })
})

describe("a run's state read back from the copy", () => {
  const good: UpdateState = { from: 100, cursor: 'c', pages: 2, records: 2000, startedAt: 200 }
  it.each<[string, unknown, UpdateState | undefined]>([
    ['a whole state', good, good],
    [
      'without a cursor: the first page',
      { from: 100, pages: 0, records: 0, startedAt: 200 },
      { from: 100, pages: 0, records: 0, startedAt: 200 }
    ],
    ['a negative count', { ...good, pages: -1 }, undefined],
    ['a cursor of another type', { ...good, cursor: 7 }, undefined],
    ['an empty cursor', { ...good, cursor: '' }, undefined],
    ['a date as text', { ...good, from: '2026-01-01' }, undefined],
    ['with the prefixes it asks for', { ...good, prefixes: ['10.1103'] }, { ...good, prefixes: ['10.1103'] }],
    ['prefixes that are not a list', { ...good, prefixes: '10.1103' }, undefined],
    ['a prefix that is not one', { ...good, prefixes: ['10.1103', 'javascript:'] }, undefined],
    ['an empty list of prefixes', { ...good, prefixes: [] }, undefined],
    ['not an object', 'update', undefined],
    ['absent', undefined, undefined]
  ])('%s', (_, raw, expected) => {
    expect(updateStateOf(raw)).toEqual(expected)
  })
})

// Crossref REST API filters: `prefix` (a DOI prefix such as 10.5555), filters of the same name ORed;
// DataCite "Queries and filtering": `prefix` (10.5061); lupo splits it on commas (one terms query, ORed).
describe('the URL of a page limited to prefixes', () => {
  it.each<[string, string, string]>([
    [
      'Crossref: one prefix filter each, after the date',
      crossrefUpdatesUrl('https://api.crossref.org', T, undefined, undefined, ['10.1103', '10.1088']),
      'https://api.crossref.org/works?filter=from-update-date%3A2026-11-27%2Cprefix%3A10.1103%2Cprefix%3A10.1088&rows=1000&cursor=*'
    ],
    [
      'DataCite: the prefix filter, comma-separated',
      dataciteUpdatesUrl('https://api.datacite.org', T, ['10.5281', '10.5061']),
      'https://api.datacite.org/dois?query=updated%3A%5B2026-11-27T13%3A30%3A05Z%20TO%20*%5D&prefix=10.5281%2C10.5061&sort=updated&page%5Bsize%5D=1000&page%5Bcursor%5D=1'
    ],
    [
      "Crossref, a later page of a run's prefixes",
      pageUrl('crossref', 'https://api.crossref.org', { from: T, cursor: 'c', prefixes: ['10.1103'] }, undefined),
      'https://api.crossref.org/works?filter=from-update-date%3A2026-11-27%2Cprefix%3A10.1103&rows=1000&cursor=c'
    ]
  ])('%s', (_, made, expected) => {
    expect(made).toBe(expected)
  })
})

describe("a copy's scope (the prefixes it holds records of)", () => {
  it.each<[string, unknown, string[] | undefined]>([
    ['the prefixes recorded', { prefixes: ['10.1088', '10.1103'] }, ['10.1088', '10.1103']],
    ['any prefix, recorded', { any: true }, undefined],
    ['none recorded: any prefix', undefined, undefined],
    ['a damaged list: any prefix (asking for all is never wrong)', { prefixes: ['10.1103', 7] }, undefined],
    ['too many: any prefix', { prefixes: Array.from({ length: MAX_UPDATE_PREFIXES + 1 }, (_, i) => `10.${1000 + i}`) }, undefined]
  ])('read back: %s', (_, raw, expected) => {
    expect(scopeOf(raw)).toEqual(expected)
  })

  it.each<[string, string[] | undefined, boolean, string[] | undefined, string[] | undefined]>([
    ['an empty copy takes the prefixes of its first import', undefined, true, ['10.1103', '10.1088'], ['10.1088', '10.1103']],
    [
      'a scoped copy widens to the union, folded as keys',
      ['10.1103', '10.abc'],
      false,
      ['10.ABC', '10.1088'],
      ['10.1088', '10.1103', '10.abc']
    ],
    ['records of any prefix: any', ['10.1103'], false, undefined, undefined],
    ['a copy holding records and no scope stays any', undefined, false, ['10.1103'], undefined],
    ['past the most prefixes: any', Array.from({ length: MAX_UPDATE_PREFIXES }, (_, i) => `10.${1000 + i}`), false, ['10.99999'], undefined]
  ])('after an import or update: %s', (_, held, empty, prefixes, expected) => {
    expect(scopeAfter(held, empty, prefixes)).toEqual(expected)
  })

  it.each<[string, string[] | undefined, string[] | undefined, boolean]>([
    ['a run of all the agency covers any scope', undefined, undefined, true],
    ['a run of some prefixes does not cover a copy of any prefix', ['10.1103'], undefined, false],
    ['a run of the scope covers it', ['10.1103', '10.1088'], ['10.1088', '10.1103'], true],
    ['a run of more than the scope covers it', ['10.1103', '10.1088', '10.5555'], ['10.1103'], true],
    ['a run of part of the scope does not', ['10.1103'], ['10.1088', '10.1103'], false],
    ['prefixes compared as keys (ASCII folded)', ['10.ABC'], ['10.abc'], true]
  ])('whether the coverage may move: %s', (_, run, scope, expected) => {
    expect(runCoversScope(run, scope)).toBe(expected)
  })

  it.each<[string, string[] | undefined, string[] | undefined, boolean]>([
    ['all and all', undefined, undefined, true],
    ['all and some', undefined, ['10.1103'], false],
    ['the same in another order', ['10.1103', '10.1088'], ['10.1088', '10.1103'], true],
    ['one more', ['10.1103'], ['10.1103', '10.1088'], false]
  ])('the same prefixes asked: %s', (_, a, b, expected) => {
    expect(samePrefixes(a, b)).toBe(expected)
  })

  it.each<[string, string, boolean]>([
    ['a DOI of the prefix', '10.1103/PhysRev.47.777', true],
    ['its prefix folded', '10.ABC/x', true],
    ['another prefix', '10.1088/x', false],
    ['a prefix that only starts the same', '10.11030/x', false]
  ])('the updater keeps %s', (_, doi, kept) => {
    expect(inPrefixes(doi, new Set(['10.1103', '10.ABC']))).toBe(kept)
  })
})
