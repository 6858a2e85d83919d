/**
 * Metadata kept in local records (docs/local-records.md, "Metadata"): a record may carry, next to its
 * `values`, a `metadata` object keyed by media type, each `{ "contentType": …, "body": … }`, which answers
 * content-negotiated requests for the record with no agency and no network. Checked here when the store
 * loads; pure.
 */
import { hasControlChar } from '../../handle/name.js'
import { normaliseMediaType } from '../../handle/metadata-types.js'

export interface StoredMetadataEntry {
  contentType: string
  body: string
}

/** Media type (normalised, as `normaliseMediaType` writes it) → what to answer; in the record's order. */
export type StoredMetadata = ReadonlyMap<string, StoredMetadataEntry>

/** The record's metadata checked (undefined when it has none), or a message naming what is wrong. */
export function checkMetadata(raw: unknown, handle: string): StoredMetadata | undefined | string {
  if (raw === undefined) return undefined
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return `${handle}: "metadata" must be an object keyed by media type, such as {"application/x-bibtex": {"contentType": …, "body": …}}`
  }
  const out = new Map<string, StoredMetadataEntry>()
  for (const [key, entry] of Object.entries(raw as Record<string, unknown>)) {
    const where = `${handle}: metadata[${JSON.stringify(key)}]`
    const type = normaliseMediaType(key)
    if (type === undefined) return `${where}: the key must be a media type such as application/x-bibtex (no wildcard, no q)`
    if (out.has(type)) return `${where}: the media type ${type} is given twice`
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      return `${where} must be an object {"contentType": …, "body": …}`
    }
    const { contentType, body } = entry as Record<string, unknown>
    if (
      typeof contentType !== 'string' ||
      hasControlChar(contentType) ||
      !/^[\x20-\x7e]+$/.test(contentType) ||
      normaliseMediaType(contentType.split(';')[0] ?? '') === undefined
    ) {
      return `${where}.contentType must be a Content-Type such as "application/x-bibtex; charset=utf-8"`
    }
    if (typeof body !== 'string') return `${where}.body must be a string`
    out.set(type, { contentType, body })
  }
  return out.size === 0 ? undefined : out
}
