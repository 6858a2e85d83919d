/**
 * A lock file for writers of one directory (RECORD_TO's servers): created exclusively (O_EXCL, atomic on
 * local file systems), holding a token of its holder's own, so a writer removes only its own lock.
 *
 * A lock older than `staleMs` was left by a writer that died mid-write (a write takes milliseconds) and is
 * taken over; the taking over is itself done under a second lock (`LOCK.break`), and the lock is looked at
 * again under it, so two waiters never both remove a lock, and never a fresh one another waiter just took.
 */
import { randomBytes } from 'node:crypto'
import { open, readFile, rm, stat } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'

export interface LockOptions {
  /** How long to wait for another writer before failing. */
  waitMs: number
  /** A lock older than this is taken over (30 s by default). */
  staleMs?: number
}

/** Run `fn` holding `lock`; another writer waits, polling, up to `waitMs`. */
export async function withLock<T>(lock: string, opts: LockOptions, fn: () => Promise<T>): Promise<T> {
  const staleMs = opts.staleMs ?? 30_000
  const token = `${process.pid}.${randomBytes(8).toString('hex')}`
  const deadline = Date.now() + opts.waitMs
  while (!(await create(lock, token))) {
    if (await isStale(lock, staleMs)) {
      await breakStale(lock, staleMs)
      continue
    }
    if (Date.now() > deadline) {
      throw new Error(
        `RECORD_TO: another writer has held ${lock} for over ${Math.round(opts.waitMs / 1000)} s; if no other doi-proxy records here, remove it`
      )
    }
    await sleep(10 + Math.random() * 40)
  }
  try {
    return await fn()
  } finally {
    // Ours unless it was taken over as stale (we held it past staleMs): then it is the new holder's.
    if ((await readFile(lock, 'utf8').catch(() => undefined)) === token) await rm(lock, { force: true })
  }
}

/** The lock created, holding `token`; false when another writer holds it. */
async function create(path: string, token: string): Promise<boolean> {
  let handle
  try {
    handle = await open(path, 'wx')
  } catch (err) {
    if ((err as { code?: string }).code === 'EEXIST') return false
    throw err
  }
  try {
    await handle.writeFile(token)
  } finally {
    await handle.close()
  }
  return true
}

async function isStale(path: string, staleMs: number): Promise<boolean> {
  return await stat(path).then(
    (s) => Date.now() - s.mtimeMs > staleMs,
    () => false
  )
}

/** Remove a stale lock, one waiter at a time, looking at it again under the break lock. */
async function breakStale(lock: string, staleMs: number): Promise<void> {
  const breaker = `${lock}.break`
  const token = randomBytes(8).toString('hex')
  if (!(await create(breaker, token))) {
    // Another waiter is breaking it (a matter of milliseconds); one that died doing so left a stale break lock.
    if (await isStale(breaker, staleMs)) await rm(breaker, { force: true })
    await sleep(10 + Math.random() * 40)
    return
  }
  try {
    if (await isStale(lock, staleMs)) await rm(lock, { force: true })
  } finally {
    if ((await readFile(breaker, 'utf8').catch(() => undefined)) === token) await rm(breaker, { force: true })
  }
}
