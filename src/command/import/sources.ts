import { createReadStream } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import { basename, join, relative, resolve } from 'node:path'
import { pipeline, Readable } from 'node:stream'
import { constants, createGunzip, gunzipSync } from 'node:zlib'
import { Parser } from 'tar'
import type { ReadEntry } from 'tar'
import { sniff, SNIFF_BYTES } from '../../handle/copy/sniff.js'
import { peek } from './worker.js'

/**
 * The inputs of `doi-proxy import PATH…`: each path a file or a directory (every file below it, in name
 * order, hidden ones left out), their sizes for the ETA; then each file's units: the file itself, or each
 * entry of a tar (gzipped or not), streamed in order. Bytes are counted as they are read from disk, so the
 * progress and ETA are in the file's own (compressed) bytes.
 */

export interface InputFile {
  /** Absolute. */
  path: string
  /** As the person named it, for messages: the path given, or below a directory given, that directory's name and the rest. */
  shown: string
  size: number
  mtimeMs: number
  /** Which PATH argument it came from. */
  arg: number
}

export interface InputArg {
  path: string
  shown: string
  directory: boolean
  files: InputFile[]
}

/** A PATH that cannot be read: a usage error, said before anything is written. */
export class PathError extends Error {
  override name = 'PathError'
}

const READ_CHUNK = 1024 * 1024
const GUNZIP_CHUNK = 128 * 1024
const MAX_DEPTH = 32

/** The files of the PATHs; `exclude`, the copy's own directory, is never read as an input. */
export async function listInputs(paths: readonly string[], cwd: string, exclude?: string): Promise<InputArg[]> {
  const args: InputArg[] = []
  for (const [arg, given] of paths.entries()) {
    const path = resolve(cwd, given)
    const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
      throw new PathError(
        `cannot read ${JSON.stringify(given)}: ${err.code === 'ENOENT' ? 'no such file or directory' : (err.code ?? err.message)}`
      )
    })
    if (info.isDirectory()) {
      const files: InputFile[] = []
      await walk(path, 0, exclude, async (file) => {
        const s = await stat(file)
        files.push({ path: file, shown: join(given, relative(path, file)), size: s.size, mtimeMs: s.mtimeMs, arg })
      })
      args.push({ path, shown: given, directory: true, files })
    } else if (info.isFile()) {
      args.push({ path, shown: given, directory: false, files: [{ path, shown: given, size: info.size, mtimeMs: info.mtimeMs, arg }] })
    } else {
      throw new PathError(`${JSON.stringify(given)} is neither a file nor a directory`)
    }
  }
  return args
}

async function walk(dir: string, depth: number, exclude: string | undefined, onFile: (path: string) => Promise<void>): Promise<void> {
  if (depth > MAX_DEPTH || dir === exclude) return
  const entries = await readdir(dir, { withFileTypes: true })
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const e of entries) {
    if (e.name.startsWith('.')) continue
    const path = join(dir, e.name)
    if (e.isDirectory()) await walk(path, depth + 1, exclude, onFile)
    else if (e.isFile()) await onFile(path)
  }
}

/** One unit of a file: the file itself (entry '') or an entry of it, a tar. */
export interface Unit {
  entry: string
  /** The entry's number in the tar (from 0, every entry counted); 0 for the file itself. */
  index: number
  chunks: AsyncIterable<Buffer>
}

export interface UnitsOptions {
  /** Bytes read from the file on disk. */
  onBytes: (n: number) => void
  /** A problem of the container (the tar, its gzip), not of an entry's items. */
  onWarning: (entry: string, message: string) => void
}

/**
 * The units of a file, in order. The caller reads a unit's chunks (or not: an entry done before is
 * passed over) and only then asks for the next; what it did not read is drained.
 */
export async function* unitsOf(file: InputFile, opts: UnitsOptions): AsyncGenerator<Unit, { tar: boolean }> {
  const raw = counted(createReadStream(file.path, { highWaterMark: READ_CHUNK }), opts.onBytes)
  let peeked = await peek(raw)
  let kind = sniff(peeked.head)
  let stream = peeked.stream
  if ('format' in kind && kind.format === 'gzip') {
    const inner = innerHead(peeked.head)
    if (inner !== undefined && !isTar(inner)) {
      // A gzipped file of items (the torrent's *.json.gz): the reading thread gunzips it, not this one.
      yield { entry: '', index: 0, chunks: peeked.stream }
      return { tar: false }
    }
    const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK })
    pipeline(Readable.from(peeked.stream), gunzip, () => {})
    try {
      peeked = await peek(gunzip)
    } catch (err) {
      opts.onWarning('', gzipWords(err))
      return { tar: false }
    }
    stream = peeked.stream
    kind = sniff(peeked.head)
  }
  if (!('format' in kind) || kind.format !== 'tar') {
    yield { entry: '', index: 0, chunks: stream }
    return { tar: false }
  }
  yield* tarEntries(stream, opts)
  return { tar: true }
}

async function* tarEntries(stream: AsyncIterable<Buffer>, opts: UnitsOptions): AsyncGenerator<Unit> {
  const parser = new Parser({ strict: false })
  const queue: ReadEntry[] = []
  let ended = false
  let wake: (() => void) | undefined
  let current = ''
  const poke = (): void => {
    const w = wake
    wake = undefined
    w?.()
  }
  parser.on('entry', (entry: ReadEntry) => {
    queue.push(entry)
    poke()
  })
  parser.on('warn', (code: string, message: string | Error) => {
    opts.onWarning(current, `the tar is damaged (${code}: ${message instanceof Error ? message.message : message})`)
  })
  // Set when the reader stops early (the disk full, Ctrl-C): the feeding stops waiting for a drain that will not come.
  let abandoned = false
  let release: (() => void) | undefined
  const feeding = (async () => {
    try {
      for await (const chunk of stream) {
        if (abandoned) break
        if (!parser.write(chunk)) {
          await new Promise<void>((resolve) => {
            release = resolve
            parser.once('drain', () => resolve())
          })
          release = undefined
        }
        if (abandoned) break
      }
    } catch (err) {
      opts.onWarning(current, gzipWords(err))
    } finally {
      if (!abandoned) parser.end()
      ended = true
      poke()
    }
  })()
  let index = 0
  try {
    for (;;) {
      const entry = queue.shift()
      if (entry === undefined) {
        if (ended) break
        await new Promise<void>((resolve) => {
          wake = resolve
        })
        continue
      }
      current = entry.path
      const i = index++
      if (entry.type === 'File' || entry.type === 'OldFile' || entry.type === 'ContiguousFile') {
        if (!basename(entry.path).startsWith('.')) yield { entry: entry.path, index: i, chunks: entry as unknown as AsyncIterable<Buffer> }
      }
      // Whatever of the entry was not read (passed over, or its reading stopped): drained, so the tar goes on.
      entry.resume()
    }
  } finally {
    if (!ended) {
      abandoned = true
      release?.()
    }
    await feeding
  }
}

// What the first bytes of a gzip may grow to when they are told apart (a tar or not): a few MiB at most, whatever they hold.
const INNER_HEAD_LIMIT = 4 * 1024 * 1024

/** The first bytes a gzip holds, from its first bytes alone; undefined when they cannot be read (the gunzip stream then says why). */
function innerHead(gzipHead: Buffer): Buffer | undefined {
  // Deflate grows 1 KiB to 1 MiB at most: a smaller piece is tried when a larger one would grow past the limit.
  for (const bytes of [SNIFF_BYTES, 8192, 1024]) {
    try {
      const out = gunzipSync(gzipHead.subarray(0, bytes), { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: INNER_HEAD_LIMIT })
      return out.subarray(0, SNIFF_BYTES)
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_BUFFER_TOO_LARGE') return undefined
    }
  }
  return undefined
}

function isTar(head: Buffer): boolean {
  const kind = sniff(head)
  return 'format' in kind && kind.format === 'tar'
}

function gzipWords(err: unknown): string {
  const e = err as { code?: string; message?: string }
  if (e?.code === 'Z_BUF_ERROR' || /unexpected end of file/i.test(e?.message ?? '')) {
    return 'the gzip data is cut off (a download not finished?): what came before it was read'
  }
  return `the file cannot be read on (${e?.message ?? String(err)}): what came before it was read`
}

async function* counted(stream: AsyncIterable<Buffer>, onBytes: (n: number) => void): AsyncGenerator<Buffer> {
  for await (const chunk of stream) {
    onBytes(chunk.length)
    yield chunk
  }
}
