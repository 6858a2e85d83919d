import type { Mapped, MapOptions } from './types.js'

/**
 * One record of our own format (`{handle, values[, metadata]}`: the local store's, `doi-proxy mirror`'s) as
 * a copy record: its first URL value, or its HS_ALIAS; its stored CSL-JSON if any; the newest value's
 * timestamp as the stamp (plan-43 §2, T2).
 * STUB (issue 43, T1): the signature is agreed; task T2 writes the body.
 */
export function mirrorRecordOf(item: unknown, opts: MapOptions): Mapped {
  throw new Error('mirrorRecordOf is not built yet (issue 43, task T2)')
}
