/**
 * The file RECORD_TO writes (recorder.ts): its names in the directory, its lines (a local-record file,
 * docs/local-records.md), read whole and written whole with one writer's changes over what is there.
 */
import { randomBytes } from 'node:crypto'
import { readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cacheKey } from '../../handle/name.js'
import type { HandleValue } from '../../handle/types.js'

export const RECORD_FILE = 'recorded.ndjson'

export interface RecordedMetadata {
  contentType: string
  body: string
}

/** One handle as recorded: its values (undefined while only its metadata is, its record coming from the cache) and metadata by type. */
export interface Entry {
  handle: string
  values: readonly HandleValue[] | undefined
  metadata: Map<string, RecordedMetadata>
}

/** What this writer recorded for a handle since its last write: only that is put over what is on disk. */
export interface Change {
  values: boolean
  types: Set<string>
}

export interface RecordFiles {
  dir: string
  /** The shared file, DIR/recorded.ndjson. */
  path: string
  /** This writer's own temporary name: two servers' writes never meet in one file. */
  tmp: string
  /** The lock file every writer of DIR holds while it writes (file-lock.ts). */
  lock: string
}

export function recordFiles(dir: string): RecordFiles {
  return {
    dir,
    path: join(dir, RECORD_FILE),
    tmp: join(dir, `.${RECORD_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`),
    lock: join(dir, `.${RECORD_FILE}.lock`)
  }
}

/**
 * Our changes written over what the shared file holds now (what other servers recorded into it since is
 * kept): the whole set to our temporary file, renamed over the old one. The caller holds the lock.
 */
export async function writeOver(
  files: RecordFiles,
  ours: ReadonlyMap<string, Entry>,
  changes: ReadonlyMap<string, Change>
): Promise<{ union: Map<string, Entry>; records: number }> {
  const union = overlaid(await readRecorded(files.path), ours, changes)
  const lines = linesOf(union.values())
  await writeFile(files.tmp, lines.length === 0 ? '' : lines.join('\n') + '\n')
  await rename(files.tmp, files.path)
  return { union, records: lines.length }
}

/**
 * At close, when the shared file cannot be written (another writer holds the lock too long): what is
 * pending goes to a file of this writer's own in the directory, which LOCAL_STORE_DIR reads too (it
 * sorts after recorded.ndjson, so its newer answers win). Returns its path and count.
 */
export async function writeAside(
  files: RecordFiles,
  ours: ReadonlyMap<string, Entry>,
  pending: ReadonlyMap<string, Change>
): Promise<{ file: string; records: number }> {
  const file = join(files.dir, `recorded.unwritten-${process.pid}-${randomBytes(4).toString('hex')}.ndjson`)
  // The shared file read without the lock (it is replaced whole, by rename): its metadata for these handles is kept.
  const onDisk = await readRecorded(files.path).catch(() => new Map<string, Entry>())
  const union = overlaid(onDisk, ours, pending)
  const lines = linesOf([...pending.keys()].flatMap((key) => union.get(key) ?? []))
  if (lines.length > 0) await writeFile(file, lines.join('\n') + '\n', { flag: 'wx' })
  return { file, records: lines.length }
}

/** The records on disk with what we changed over them: our values and metadata types where we changed them, theirs elsewhere. */
function overlaid(onDisk: Map<string, Entry>, ours: ReadonlyMap<string, Entry>, changes: ReadonlyMap<string, Change>): Map<string, Entry> {
  for (const [key, change] of changes) {
    const e = ours.get(key)
    if (e === undefined) continue
    const theirs = onDisk.get(key)
    const metadata = new Map(theirs?.metadata)
    for (const type of change.types) {
      const answer = e.metadata.get(type)
      if (answer !== undefined) metadata.set(type, answer)
    }
    const values = change.values || theirs === undefined
    onDisk.set(key, { handle: values ? e.handle : theirs.handle, values: values ? e.values : theirs.values, metadata })
  }
  return onDisk
}

function linesOf(entries: Iterable<Entry>): string[] {
  const lines: string[] = []
  for (const e of entries) {
    // Metadata alone (its record came from the cache) is no local record: kept until it has one.
    if (e.values === undefined) continue
    const line: { handle: string; values: readonly HandleValue[]; metadata?: Record<string, RecordedMetadata> } = {
      handle: e.handle,
      values: e.values
    }
    if (e.metadata.size > 0) line.metadata = Object.fromEntries(e.metadata)
    lines.push(JSON.stringify(line))
  }
  return lines
}

/** The lines an earlier run wrote (a missing file is an empty one). */
export async function readRecorded(path: string): Promise<Map<string, Entry>> {
  const out = new Map<string, Entry>()
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return out
    throw err
  }
  // The file is rewritten whole from what is read here: a line that cannot be read stops the start rather than being lost.
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return
    let o: { handle?: unknown; values?: unknown; metadata?: unknown } | undefined
    try {
      o = JSON.parse(line) as typeof o
    } catch {}
    if (o === null || typeof o !== 'object' || typeof o.handle !== 'string' || !Array.isArray(o.values)) {
      throw new Error(
        `RECORD_TO: line ${i + 1} of ${path} is not a record {"handle": …, "values": […]}; mend or remove it, or record into another directory`
      )
    }
    const metadata = new Map<string, RecordedMetadata>(
      o.metadata !== null && typeof o.metadata === 'object' ? Object.entries(o.metadata as Record<string, RecordedMetadata>) : []
    )
    out.set(cacheKey(o.handle), { handle: o.handle, values: o.values as HandleValue[], metadata })
  })
  return out
}
