import { describe, expect, it } from 'vitest'
import { registeredWorkOf, yearOfCslDate } from '../../../src/handle/verify/csl.js'

// CSL-JSON as Crossref and DataCite negotiate it (https://citeproc-js.readthedocs.io/en/latest/csl-json/markup.html).
describe('the registered work of a CSL-JSON record', () => {
  it('reads a Crossref record: title and subtitle apart, online and print years, family and given names', () => {
    const csl = {
      type: 'journal-article',
      title: 'Deep nets for <i>cats</i>',
      subtitle: ['a study'],
      'short-title': ['Deep nets'],
      issued: { 'date-parts': [[2020, 3]] },
      'published-online': { 'date-parts': [[2019, 11, 2]] },
      'published-print': { 'date-parts': [[2020, 3]] },
      author: [
        { family: 'Müller', given: 'Hans', sequence: 'first' },
        { family: 'Smith', given: 'J.' }
      ]
    }
    expect(registeredWorkOf(csl)).toEqual({
      titles: ['Deep nets for <i>cats</i>', 'Deep nets for <i>cats</i>: a study', 'Deep nets'],
      years: { issued: 2020, online: 2019, print: 2020 },
      authors: [
        { family: 'Müller', given: 'Hans' },
        { family: 'Smith', given: 'J.' }
      ]
    })
  })

  it('reads a DataCite record: a title array, a raw date, an organisation, a preprint posted', () => {
    const csl = {
      type: 'dataset',
      title: ['Soil microbes of Iowa', 'Bodenmikroben in Iowa'],
      'original-title': 'Bodenmikroben in Iowa',
      issued: { raw: '2018-05-01' },
      posted: { 'date-parts': [['2017']] },
      author: [{ literal: 'Iowa Soil Consortium' }]
    }
    expect(registeredWorkOf(csl)).toEqual({
      titles: ['Soil microbes of Iowa', 'Bodenmikroben in Iowa'],
      years: { issued: 2018, posted: 2017 },
      authors: [{ literal: 'Iowa Soil Consortium' }]
    })
  })

  it('names the editors when no author is named', () => {
    expect(registeredWorkOf({ title: 'A book', editor: [{ family: 'Doe', given: 'J.' }] })?.authors).toEqual([
      { family: 'Doe', given: 'J.' }
    ])
  })

  it.each([null, 'a string', 42, [], [{ title: 'a' }, { title: 'b' }]])('%j is not a record', (csl) => {
    expect(registeredWorkOf(csl)).toBeUndefined()
  })

  it('reads what it can of a hostile record: wrong types skipped, strings and counts bounded', () => {
    const work = registeredWorkOf({
      title: [42, 'x'.repeat(10_000), null],
      issued: { 'date-parts': 'soon' },
      author: [...Array.from({ length: 1000 }, () => ({ family: 'A' })), 'nobody']
    })
    expect(work?.titles).toEqual(['x'.repeat(2_000)])
    expect(work?.years).toEqual({})
    expect(work?.authors).toHaveLength(50)
  })

  it('a one-record array is that record', () => {
    expect(registeredWorkOf([{ title: 'A' }])?.titles).toEqual(['A'])
  })
})

describe('the year of a CSL date', () => {
  it.each([
    [{ 'date-parts': [[2019, 3, 1]] }, 2019],
    [{ 'date-parts': [['2019']] }, 2019],
    [{ raw: '2019-03-01' }, 2019],
    [{ literal: 'Spring 2019' }, 2019],
    [{ 'date-parts': [[null]] }, undefined],
    [{ 'date-parts': [[99999]] }, undefined],
    [{ raw: 'no date' }, undefined],
    ['2019', undefined]
  ])('%j → %j', (date, year) => {
    expect(yearOfCslDate(date)).toBe(year)
  })
})
