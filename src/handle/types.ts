/**
 * The shapes of handle records, as the Handle REST API returns them
 * (reference-proxy.md §7). Unknown fields the upstream sends are kept untouched.
 */

export interface HandleValueData {
  format: string
  value: unknown
}

export interface HandleValue {
  index: number
  type: string
  data: HandleValueData
  /** Relative seconds (number) or an absolute ISO-8601 expiry (string). */
  ttl: number | string
  timestamp?: string
  permissions?: string
  references?: unknown[]
  [extra: string]: unknown
}

/** A whole handle record: every value, no filter applied. */
export interface HandleRecord {
  handle: string
  values: HandleValue[]
}

/** The string form of a value's data, when it has one (format "string"). */
export function valueString (value: HandleValue): string | undefined {
  const v = value.data?.value
  return typeof v === 'string' ? v : undefined
}
