import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { openHealthDb } from '../../../src/resolve/health/db.js'
import { eventAt, idOf, random } from '../../support/health-writer.js'

// Crash safety of the health history (issue 42 §3, plan D4): a writer process applying events as fast as it can,
// with a checkpointer thread and syncs of 200 DOIs in between, killed with SIGKILL at random moments, eleven times.
// After each kill the file is whole, the counts equal the DOIs counted, and the log position is the last event the
// writer said it applied or the one after it (committed, not yet said): never half an event, never one lost.

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-health-crash-'))
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

const WRITER = 'test/support/health-writer.ts'

/** Start the writer, let it apply events, kill it after `afterLines` more lines; the last id it printed. */
async function runAndKill(file: string, afterLines: number): Promise<string | undefined> {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, file], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
  let last: string | undefined
  let seen = 0
  // Every line to the end: the writer goes on between the line that decides the kill and the kill.
  for await (const line of createInterface({ input: child.stdout })) {
    const match = /^applied (\S+)$/.exec(line)
    if (match === null) continue
    last = match[1]
    // Mid-write: the writer does not wait for us to read its lines.
    if (++seen === afterLines) child.kill('SIGKILL')
  }
  const signal = await exited
  expect(signal, stderr).toBe('SIGKILL')
  return last
}

function checkWhole(file: string, lastSaid: string | undefined): void {
  // Opened raw first, as the crash left it (the WAL is replayed by SQLite itself).
  const raw = new Database(file, { readonly: true })
  try {
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok')
    const kept = raw.prepare('SELECT prefix, verdict, n FROM tally ORDER BY prefix, verdict').all()
    const counted = raw
      .prepare('SELECT prefix, verdict, count(*) AS n FROM dois WHERE sources <> 0 GROUP BY prefix, verdict ORDER BY prefix, verdict')
      .all()
    expect(kept).toEqual(counted)
    expect(raw.prepare('SELECT count(*) AS n FROM checks WHERE doi_id NOT IN (SELECT id FROM dois)').get()).toEqual({ n: 0 })
    const position = (raw.prepare("SELECT value FROM meta WHERE key = 'log_position'").get() as { value: string } | undefined)?.value
    const applied = Number(position?.split('-')[1] ?? '0')
    const said = Number(lastSaid?.split('-')[1] ?? '0')
    expect([said, said + 1]).toContain(applied)
    // Every check event up to the position is there, once: none lost, none doubled.
    let checks = 0
    for (let i = 1; i <= applied; i++) if (eventAt(i).t === 'check') checks++
    expect(raw.prepare('SELECT count(*) AS n FROM checks').get()).toEqual({ n: checks })
  } finally {
    raw.close()
  }
}

describe('the health history, its writer killed mid-write', () => {
  it('is whole after each of eleven kills at random moments, and resumes after the last event applied', { timeout: 180_000 }, async () => {
    const file = join(root, 'health.sqlite')
    const rnd = random(Number(process.env.CRASH_SEED ?? Date.now() % 100_000))
    let lastSaid: string | undefined
    for (let kill = 0; kill < 11; kill++) {
      lastSaid = (await runAndKill(file, 20 + Math.floor(rnd() * 600))) ?? lastSaid
      checkWhole(file, lastSaid)
    }
    // The next writer goes on from there: the event at the position is not applied twice.
    const db = openHealthDb({ file, log: { info() {}, warn() {} }, checkpointEveryMs: 0 })
    try {
      const position = db.logPosition()
      expect(Number(position.split('-')[1])).toBeGreaterThan(200)
      const at = Number(position.split('-')[1])
      expect(db.applyEvent(idOf(at), eventAt(at))).toBe(false)
      expect(db.applyEvent(idOf(at + 1), eventAt(at + 1))).toBe(true)
    } finally {
      await db.close()
    }
  })
})
