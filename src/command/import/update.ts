import type { Config } from '../../config/schema.js'

/** The agencies whose APIs `doi-proxy import --update` asks for what changed. */
export const UPDATE_AGENCIES = ['crossref', 'datacite'] as const
export type UpdateAgency = (typeof UPDATE_AGENCIES)[number]

export interface ImportUpdateOptions {
  agency: UpdateAgency
  /** The copy's directory (`--to`, else REGISTRY_COPY). */
  dir: string
  /** The settings: CROSSREF_API_URL, DATACITE_API_URL, CONTACT_EMAIL, REGISTRY_COPY_* limits. */
  config: Config
  /** One line for the person running it (progress, the summary). */
  say: (line: string) => void
  /** Stops between pages, the state saved (Ctrl-C). */
  signal?: AbortSignal
}

export interface ImportUpdateResult {
  /** 0 done, 73 the copy cannot be written, 75 disk full, 130 interrupted, 69 the agency unreachable. */
  exitCode: number
  pages: number
  records: number
}

/**
 * `doi-proxy import --update crossref|datacite`: what changed at the agency since the copy's coverage,
 * page by page, resumable (plan-43 §1.12).
 * STUB (issue 43, T1): the signature is agreed; task T4 writes the body (through resolve/copy/updater.ts `runUpdate`).
 */
export async function importUpdate(opts: ImportUpdateOptions): Promise<ImportUpdateResult> {
  throw new Error('doi-proxy import --update is not built yet (issue 43, task T4)')
}
