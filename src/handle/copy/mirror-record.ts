import { hasControlChar } from '../name.js'
import { aliasTarget, firstUrlValue } from '../record.js'
import { isHandleValue, valueString } from '../types.js'
import type { HandleValue } from '../types.js'
import { copyUrlOf, secondsOfIso } from './csl.js'
import { checkedDoi } from './key.js'
import type { Csl, Mapped, MapOptions } from './types.js'

/** The media type whose stored body is CSL-JSON (docs/metadata.md; the local store's `metadata` keys). */
const CSL_TYPE = 'application/vnd.citationstyles.csl+json'

/** Most values a record may hold: doi.org's records have a handful; 1,000 is far above any real one. */
export const MAX_VALUES = 1000

/**
 * One record of our own format (`{handle, values[, metadata]}`: the local store's, `doi-proxy mirror`'s) as
 * a copy record: its HS_ALIAS (the first, as the resolver follows it), else its URL (the legacy URL choice,
 * behaviour.md R2) under the redirect rule; its stored CSL-JSON if any; the newest value's timestamp as the
 * stamp (0 when no value has one: any agency's dated record is newer). The agency is `other`: the record
 * does not say who registered it. Never throws.
 */
export function mirrorRecordOf(item: unknown, opts: MapOptions): Mapped {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return 'the item is not a record ({"handle", "values"})'
  const o = item as Record<string, unknown>
  const checked = checkedDoi(o.handle)
  if ('problem' in checked) return checked.problem
  const doi = checked.doi
  if (!Array.isArray(o.values)) return `${doi}: "values" is not an array`
  if (o.values.length > MAX_VALUES) return `${doi}: more than ${MAX_VALUES} values (${o.values.length})`
  const bad = o.values.findIndex((v) => !isHandleValue(v))
  if (bad >= 0) return `${doi}: values[${bad}] is not a handle value ({index, type, data: {format, value}, ttl})`
  const values = o.values as HandleValue[]
  const stamp = newestStamp(values)
  const csl = cslOf(o.metadata, opts)
  if (typeof csl === 'string') return `${doi}: ${csl}`
  const extra = { ...(csl.csl === undefined ? {} : { csl: csl.csl }), ...(csl.dropped ? { abstractDropped: true } : {}) }
  const alias = aliasTarget(values)?.trim()
  if (alias !== undefined && alias !== '') {
    if (hasControlChar(alias)) return `${doi}: the HS_ALIAS target has a control character`
    return { doi, kind: 'alias', agency: 'other', aliasOf: alias, stamp, ...extra }
  }
  const urlValue = firstUrlValue(values)
  const url = copyUrlOf(urlValue === undefined ? undefined : valueString(urlValue), opts.schemes)
  if ('problem' in url) return `${doi}: ${url.problem}`
  return { doi, kind: 'work', agency: 'other', url: url.url, stamp, ...extra }
}

function newestStamp(values: readonly HandleValue[]): number {
  let newest = 0
  for (const v of values) newest = Math.max(newest, secondsOfIso(v.timestamp) ?? 0)
  return newest
}

/** The record's stored CSL-JSON (an object, or an array of one, as agencies answer), or why it is unusable. */
function cslOf(metadata: unknown, opts: MapOptions): { csl?: Csl; dropped: boolean } | string {
  if (metadata === undefined || metadata === null || typeof metadata !== 'object') return { dropped: false }
  const entry = Object.entries(metadata as Record<string, unknown>).find(
    ([type]) => type.split(';')[0]?.trim().toLowerCase() === CSL_TYPE
  )?.[1]
  if (entry === undefined) return { dropped: false }
  const body = (entry as { body?: unknown } | null)?.body
  let parsed: unknown
  try {
    parsed = typeof body === 'string' ? JSON.parse(body) : undefined
  } catch {
    parsed = undefined
  }
  const one = Array.isArray(parsed) && parsed.length === 1 ? parsed[0] : parsed
  if (one === null || typeof one !== 'object' || Array.isArray(one)) return `metadata["${CSL_TYPE}"] is not one CSL-JSON item`
  const csl = one as Record<string, unknown>
  if (opts.abstracts || csl.abstract === undefined) return { csl, dropped: false }
  const { abstract: _dropped, ...rest } = csl
  return { csl: rest, dropped: true }
}
