import type { Mapped, MapOptions } from './types.js'

/**
 * A Crossref work (its public data file's items, a REST API page's `message.items`) as a copy record:
 * `resource.primary.URL`, `indexed` as the stamp, the work mapped to CSL-JSON (plan-43 §2, T2).
 * STUB (issue 43, T1): the signature is agreed; task T2 writes the body.
 */
export function crossrefRecordOf(work: unknown, opts: MapOptions): Mapped {
  throw new Error('crossrefRecordOf is not built yet (issue 43, task T2)')
}
