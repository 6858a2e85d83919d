import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { withLock } from '../../../src/resolve/recording/file-lock.js'

// RECORD_TO's lock (src/resolve/recording/file-lock.ts), on the real file system: several servers write one directory.

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-lock-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A lock left by a writer that died an hour ago. */
function staleLock(path: string): void {
  writeFileSync(path, 'a writer that died')
  const anHourAgo = new Date(Date.now() - 3_600_000)
  utimesSync(path, anHourAgo, anHourAgo)
}

describe('RECORD_TO lock file', () => {
  it('a stale lock and several writers at once: it is taken over, and never two hold the lock', async () => {
    const dir = tempDir()
    const lock = join(dir, '.recorded.ndjson.lock')
    let holders = 0
    let most = 0
    let ran = 0
    for (let round = 0; round < 20; round++) {
      staleLock(lock)
      await Promise.all(
        Array.from({ length: 6 }, async (_, n) => {
          await sleep(n % 3) // staggered: one looks at the lock while another takes it over
          await withLock(lock, { waitMs: 20_000 }, async () => {
            most = Math.max(most, ++holders)
            await sleep(2)
            holders--
            ran++
          })
        })
      )
      expect(existsSync(lock)).toBe(false)
    }
    expect(ran).toBe(120)
    expect(most).toBe(1)
  }, 60_000)

  it("a writer whose lock was taken over as stale (it held it too long) leaves the new holder's lock in place", async () => {
    const dir = tempDir()
    const lock = join(dir, '.recorded.ndjson.lock')
    let bHolds = false
    let aDone = false
    const a = withLock(lock, { waitMs: 20_000, staleMs: 100 }, async () => {
      await vi.waitFor(
        () => {
          expect(bHolds).toBe(true)
        },
        { timeout: 20_000, interval: 10 }
      )
    }).then(() => {
      aDone = true
    })
    await sleep(20)
    let lockWhileBHeld = ''
    const b = withLock(lock, { waitMs: 20_000, staleMs: 100 }, async () => {
      bHolds = true
      await vi.waitFor(
        () => {
          expect(aDone).toBe(true)
        },
        { timeout: 20_000, interval: 10 }
      )
      lockWhileBHeld = readFileSync(lock, 'utf8')
    })
    await Promise.all([a, b])
    expect(lockWhileBHeld).toMatch(new RegExp(`^${process.pid}\\.`))
    expect(existsSync(lock)).toBe(false)
  }, 60_000)
})
