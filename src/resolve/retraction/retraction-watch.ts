/**
 * The Retraction Watch data set (RETRACTIONS_FILE, RETRACTIONS_FROM=file): Crossref's CSV, one row per
 * notice, read once at start into the notices of each work, for `verify=retraction` offline. Streamed
 * through csv-parse (a 60 MB file is never held whole as text), gzip or not; rows are read defensively
 * (handle/verify/retraction.ts noticesOfRetractionWatch), a file that is not this data set is the setting's mistake.
 */
import type { Readable } from 'node:stream'
import { parse } from 'csv-parse'
import { ConfigError } from '../../config/schema.js'
import { cacheKey } from '../../handle/name.js'
import { noticesOfRetractionWatch } from '../../handle/verify/retraction.js'
import type { Notice } from '../../handle/verify/retraction.js'
import { openMaybeGzipped } from '../files/maybe-gzipped.js'

/** The columns read; any other may come and go between exports. */
export const RETRACTION_WATCH_COLUMNS = ['OriginalPaperDOI', 'RetractionDOI', 'RetractionDate', 'RetractionNature'] as const

export interface RetractionWatchNotices {
  /** The notices about a DOI (none: an empty list), by its cache key (case folded as DOIs are). */
  noticesOf(doi: string): readonly Notice[]
  /** How the file read: rows, those kept, skipped (no DOI, another nature) and dropped over the bound. */
  counts: { rows: number; kept: number; skipped: number; dropped: number; works: number }
}

export interface RetractionWatchOptions {
  /** Most notices kept (the real file has about 60,000 rows); more are counted as dropped. */
  maxNotices?: number
  /** The longest row read, in characters; a longer one is the file's mistake. */
  maxRowChars?: number
}

const MAX_NOTICES = 2_000_000
const MAX_ROW_CHARS = 1024 * 1024

function settingError(path: string, why: string): ConfigError {
  return new ConfigError(`invalid setting retractionsFile (RETRACTIONS_FILE): ${JSON.stringify(path)} ${why}`)
}

/** Read the Retraction Watch CSV at `path`: every work's notices. Throws a ConfigError naming RETRACTIONS_FILE when it is not that file. */
export async function loadRetractionWatch(path: string, opts: RetractionWatchOptions = {}): Promise<RetractionWatchNotices> {
  const maxNotices = opts.maxNotices ?? MAX_NOTICES
  const byWork = new Map<string, Notice[]>()
  const counts = { rows: 0, kept: 0, skipped: 0, dropped: 0, works: 0 }
  let input: Readable | undefined
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: opts.maxRowChars ?? MAX_ROW_CHARS,
    columns: (header: string[]) => {
      const missing = RETRACTION_WATCH_COLUMNS.filter((name) => !header.includes(name))
      if (missing.length > 0) throw settingError(path, `is not the Retraction Watch CSV: no column ${missing.join(', ')}`)
      return header
    }
  })
  try {
    input = await openMaybeGzipped(path)
    const source = input
    source.on('error', (err: Error) => parser.destroy(err))
    for await (const row of source.pipe(parser) as AsyncIterable<Record<string, unknown>>) {
      counts.rows++
      const found = noticesOfRetractionWatch(row)
      if (found === undefined) {
        counts.skipped++
        continue
      }
      if (counts.kept >= maxNotices) {
        counts.dropped++
        continue
      }
      const key = cacheKey(found.original)
      const kept = byWork.get(key)
      if (kept === undefined) byWork.set(key, [...found.notices])
      else kept.push(...found.notices)
      counts.kept += found.notices.length
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err
    throw settingError(path, `cannot be read as the Retraction Watch CSV (gzip or not): ${(err as Error).message}`)
  } finally {
    input?.destroy()
  }
  counts.works = byWork.size
  return {
    noticesOf: (doi) => byWork.get(cacheKey(doi)) ?? [],
    counts
  }
}
