import type { DataciteStateRow, Mapped, MapOptions } from './types.js'

/**
 * DataCite's records as copy records (plan-43 §2, T2): a JSON line of its data file or an item of a REST
 * page (`{id, type: "dois", attributes}` or bare attributes): `url`, `updated` as the stamp, the attributes
 * mapped to CSL-JSON; and a row of its DOI/state CSV, a `registered` record for a DOI without a public URL.
 * STUB (issue 43, T1): the signatures are agreed; task T2 writes the bodies.
 */
export function dataciteRecordOf(line: unknown, opts: MapOptions): Mapped {
  throw new Error('dataciteRecordOf is not built yet (issue 43, task T2)')
}

/** A row of the DOI/state CSV as a record, or why it is none (a Findable DOI comes with its JSON line instead). */
export function dataciteStateOf(row: DataciteStateRow): Mapped | undefined {
  throw new Error('dataciteStateOf is not built yet (issue 43, task T2)')
}
