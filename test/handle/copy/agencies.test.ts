import { describe, expect, it } from 'vitest'
import { prefixRecordOf, serviceRecordOf } from '../../../src/handle/copy/agencies.js'
import { raDisplayName, raServiceHandle } from '../../../src/handle/ra.js'
import { namespaceLocHandles } from '../../../src/handle/locations.js'

// Sources: behaviour.md R8 (Which RA? reads a prefix record's HS_NAMESPACE <DOI.RA>, else HS_SERV; 10.SERV/X → RA),
// R9 (HS_NAMESPACE <locs> names the handles whose 10320/loc applies to every DOI of the prefix), plan-43 §1.7.

const STAMP = 1741929161 // 2025-03-14T05:12:41Z

describe('the records the copy makes up offline', () => {
  it.each([
    ['crossref', '10.SERV/CROSSREF', 'Crossref'],
    ['datacite', '10.SERV/DATACITE', 'DataCite']
  ] as const)('a %s prefix names its service, and Which RA? reads it', (agency, service, name) => {
    const values = prefixRecordOf(agency, STAMP) ?? []
    expect(raServiceHandle(values)).toBe(service)
    expect(raDisplayName(service)).toBe(name)
    expect(namespaceLocHandles(values)).toEqual([service])
    expect(values.every((v) => v.timestamp === '2025-03-14T05:12:41.000Z' && v.ttl === 86400)).toBe(true)
  })

  it('a prefix of no known agency has no made-up record', () => {
    expect(prefixRecordOf('other', STAMP)).toBeUndefined()
  })

  it.each([
    ['10.SERV/CROSSREF', 'https://data.crossref.org/{hdl}'],
    ['10.serv/datacite', 'https://data.crosscite.org/{hdl}'] // handles fold ASCII case
  ])('the service %s negotiates at %s', (handle, template) => {
    const [loc] = serviceRecordOf(handle, STAMP) ?? []
    expect(loc?.type).toBe('10320/loc')
    expect(loc?.data.value).toBe(`<locations><location id="1" weight="0" http_role="conneg" href_template="${template}" /></locations>`)
  })

  it('any other handle is not a service the copy makes up', () => {
    expect(serviceRecordOf('10.SERV/ETH', STAMP)).toBeUndefined()
  })
})
