/**
 * Noticing changes to the local store's directory: fs.watch with a debounce, or polling a cheap signature of the
 * store files when fs.watch cannot hear them; and a reloader that runs one reload at a time, so a burst of
 * changes costs at most one more reload. Reading and swapping in the records is local-store.ts's job.
 */
import { watch } from 'node:fs'
import type { FSWatcher } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { isStoreFileName } from './file-format.js'

/** What watching needs of the store's options (LocalStoreOptions extends it). */
export interface WatchOptions {
  /** Look for changes by polling instead of fs.watch (network or container mounts where fs.watch hears nothing): LOCAL_STORE_POLL_MS. Default false. */
  poll?: boolean
  /** How often to look for changes when polling (also the fallback when fs.watch fails). Default 2000 ms. */
  pollIntervalMs?: number
  /** Only warns: when fs.watch fails and polling takes over. */
  log: { warn(obj: object, msg: string): void }
}

/** The store files directly in dir, sorted: one listing for loading and for the signature, so both count the same files. */
export async function storeFileNames(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true })
  return entries
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && isStoreFileName(e.name))
    .map((e) => e.name)
    .sort()
}

export interface SerialReloader {
  /** Ask for a reload; a request made while one runs is served by one more reload after it. */
  request(reason: string): void
  /** Resolves when no reload is running or pending. */
  idle(): Promise<void>
}

export function createSerialReloader(reload: (reason: string) => Promise<void>): SerialReloader {
  let running: Promise<void> | undefined
  let pendingReason: string | undefined
  function run(reason: string): void {
    running = reload(reason).finally(() => {
      running = undefined
      if (pendingReason !== undefined) {
        const next = pendingReason
        pendingReason = undefined
        run(next)
      }
    })
  }
  return {
    request(reason) {
      if (running !== undefined) pendingReason = reason
      else run(reason)
    },
    async idle() {
      for (let current = running; current !== undefined; current = running) await current
    }
  }
}

const DEBOUNCE_MS = 100
/** A file written continuously (a mirror appending) must still be picked up now and then. */
const MAX_DEBOUNCE_MS = 1000

/**
 * Watch the directory with fs.watch; when that is impossible or fails, poll. Returns the stop function.
 * Known limits of fs.watch (docs/local-records.md, "How changes are noticed"): it hears nothing, and reports
 * no error, for changes made by another machine on NFS/SMB or from the host into some container mounts
 * (Docker Desktop); nor for the target of a symlink, nor once the directory itself is replaced. Not
 * recursive, which suits a store read from the top level only; rename-saves are seen (we watch the directory).
 * chokidar would be one more dependency with the same limits: it uses fs.watch too, unless told to poll.
 */
export function startWatching(dir: string, opts: WatchOptions, reloader: SerialReloader, loaded: () => string | undefined): () => void {
  let timer: NodeJS.Timeout | undefined
  let firstEventAt: number | undefined
  let watcher: FSWatcher | undefined
  let stopPolling: (() => void) | undefined
  let stopped = false

  const fire = (): void => {
    timer = undefined
    firstEventAt = undefined
    if (!stopped) reloader.request('change')
  }
  const onEvent = (): void => {
    const now = Date.now()
    firstEventAt ??= now
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(fire, Math.max(0, Math.min(DEBOUNCE_MS, firstEventAt + MAX_DEBOUNCE_MS - now)))
    timer.unref()
  }
  const intervalMs = opts.pollIntervalMs ?? 2000
  const fallBackToPolling = (err: unknown): void => {
    watcher?.close()
    watcher = undefined
    if (stopped || stopPolling !== undefined) return
    opts.log.warn({ err, dir, intervalMs }, 'local store: cannot watch the directory; checking it for changes every few seconds instead')
    stopPolling = startPolling(dir, intervalMs, onEvent, loaded)
  }

  if (opts.poll === true) {
    stopPolling = startPolling(dir, intervalMs, onEvent, loaded)
  } else {
    try {
      watcher = watch(dir, { persistent: false }, onEvent)
      watcher.on('error', fallBackToPolling)
    } catch (err) {
      fallBackToPolling(err)
    }
  }

  return () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
    watcher?.close()
    stopPolling?.()
  }
}

/** Every intervalMs, compare the directory with what was last loaded; a difference asks for a reload. */
function startPolling(dir: string, intervalMs: number, onChange: () => void, loaded: () => string | undefined): () => void {
  let busy = false
  const look = async (): Promise<void> => {
    if (busy) return
    busy = true
    try {
      const signature = await directorySignature(dir)
      const known = loaded()
      if (known !== undefined && signature !== known) onChange()
    } finally {
      busy = false
    }
  }
  const lookQuietly = (): void => {
    look().catch(() => {})
  } // look() handles its own errors
  const interval = setInterval(lookQuietly, intervalMs)
  interval.unref()
  return () => clearInterval(interval)
}

/** Each store file's name, size, mtime and inode: polling compares this with the signature taken when the store last loaded. */
export async function directorySignature(dir: string): Promise<string> {
  try {
    const names = await storeFileNames(dir)
    const parts = await Promise.all(
      names.map(async (name) => {
        try {
          const s = await stat(join(dir, name))
          return `${name}:${s.size}:${s.mtimeMs}:${s.ino}`
        } catch {
          return `${name}:gone`
        }
      })
    )
    return parts.join('\n')
  } catch (err) {
    return `unreadable:${(err as { code?: string }).code ?? ''}`
  }
}
