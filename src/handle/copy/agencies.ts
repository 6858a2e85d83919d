import type { HandleValue } from '../types.js'
import type { Agency } from './types.js'

/**
 * The records the copy makes up offline (plan-43 §1.7), so Which RA? and content negotiation work unplugged:
 * a prefix record naming its agency's service handle (HS_SERV and HS_NAMESPACE `<locs>`, as doi.org's prefix
 * records do: behaviour.md R8, R9), and the agency's service record whose 10320/loc sends negotiated requests
 * to its metadata host (data.crossref.org, data.crosscite.org: handle/metadata-hosts.ts). Online these come
 * from the upstream. Pure: the timestamp comes in as seconds.
 */

/** Each agency's service handle (behaviour.md R8: ra.ts maps these to "Crossref" and "DataCite"). */
export const SERVICE_HANDLES: Readonly<Partial<Record<Agency, string>>> = {
  crossref: '10.SERV/CROSSREF',
  datacite: '10.SERV/DATACITE'
}

/** Where each agency answers negotiated requests ({hdl}: the DOI as one URL component, behaviour.md R3). */
const CONNEG_TEMPLATES: Readonly<Partial<Record<Agency, string>>> = {
  crossref: 'https://data.crossref.org/{hdl}',
  datacite: 'https://data.crosscite.org/{hdl}'
}

/** doi.org's relative TTL for these records (behaviour.md R11). */
const TTL = 86400

const value = (index: number, type: string, text: string, stamp: number): HandleValue => ({
  index,
  type,
  data: { format: 'string', value: text },
  ttl: TTL,
  timestamp: new Date(stamp * 1000).toISOString()
})

/** A prefix's record (`10.1234`) naming its agency's service, or undefined for an agency without one (`other`). */
export function prefixRecordOf(agency: Agency, stamp: number): HandleValue[] | undefined {
  const service = SERVICE_HANDLES[agency]
  if (service === undefined) return undefined
  return [value(1, 'HS_SERV', service, stamp), value(2, 'HS_NAMESPACE', `<HS_NAMESPACE><locs>${service}</locs></HS_NAMESPACE>`, stamp)]
}

/** The service record a handle names (`10.SERV/CROSSREF`), with its conneg location; undefined for any other handle. */
export function serviceRecordOf(handle: string, stamp: number): HandleValue[] | undefined {
  const upper = handle.toUpperCase()
  const agency = (Object.keys(SERVICE_HANDLES) as Agency[]).find((a) => SERVICE_HANDLES[a] === upper)
  const template = agency === undefined ? undefined : CONNEG_TEMPLATES[agency]
  if (template === undefined) return undefined
  return [
    value(1, '10320/loc', `<locations><location id="1" weight="0" http_role="conneg" href_template="${template}" /></locations>`, stamp)
  ]
}
