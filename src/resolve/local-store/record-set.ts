/**
 * One complete set of the local store's records, pure: parsed files turned into the lookup maps requests read,
 * with handles found twice reported. Built off to the side and swapped in whole (local-store.ts).
 */
import { cacheKey } from '../../handle/name.js'
import type { HandleValue } from '../../handle/types.js'
import type { StoredMetadata } from './metadata.js'
import type { LocalRecord, ParsedFile } from './file-format.js'

/** Counts for logs and /metrics (LocalStore.stats). */
export interface LocalStoreStats {
  /** Distinct handles held. */
  records: number
  /** Files read and used (possibly with some records skipped). */
  files: number
  /** Files that could not be used at all (unreadable, not JSON, wrong shape). */
  rejectedFiles: number
  /** Every problem found: skipped records, rejected files, duplicate handles. */
  problems: number
}

export interface Duplicate {
  handle: string
  /** The file whose record is kept (the later one). */
  kept: string
  /** The file whose record is dropped. */
  dropped: string
}

/** The lookup maps, keyed by cacheKey(handle), with the counts and duplicates found building them. */
export interface Snapshot {
  records: Map<string, HandleValue[]>
  metadata: Map<string, StoredMetadata>
  stats: LocalStoreStats
  duplicates: Duplicate[]
}

/**
 * One complete set of records from parsed files, in file-name order: for a handle found twice the later one
 * wins (a later file, or a later line of the same file), and the duplicate is reported.
 */
export function buildSnapshot(files: readonly ParsedFile[]): Snapshot {
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const records = new Map<string, HandleValue[]>()
  const metadata = new Map<string, StoredMetadata>()
  const source = new Map<string, string>()
  const duplicates: Duplicate[] = []
  let problems = 0
  for (const file of sorted) {
    problems += file.problems.length
    for (const record of file.records) {
      const key = cacheKey(record.handle)
      const earlier = source.get(key)
      if (earlier !== undefined) duplicates.push({ handle: record.handle, kept: file.name, dropped: earlier })
      records.set(key, record.values)
      const stored = (record as LocalRecord).metadata
      if (stored !== undefined) metadata.set(key, stored)
      else metadata.delete(key)
      source.set(key, file.name)
    }
  }
  const rejectedFiles = sorted.filter((f) => f.rejected).length
  return {
    records,
    metadata,
    duplicates,
    stats: { records: records.size, files: sorted.length - rejectedFiles, rejectedFiles, problems: problems + duplicates.length }
  }
}
