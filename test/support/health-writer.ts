import { writeSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { CHECK_KINDS, CHECK_VERDICTS, FAILURES, SHOWN_VERDICTS } from '../../src/handle/health/types.js'
import type { CheckResult, CheckVerdict, DoiState, HealthEvent } from '../../src/handle/health/types.js'
import { openHealthDb } from '../../src/resolve/health/db.js'
import type { WatchedDoi } from '../../src/resolve/health/db.js'
import { seededRandom } from '../../bench/lib/random.js'

/**
 * Health events for the database's tests (issue 42), and a writer to kill: run as a script
 * (`node --import tsx test/support/health-writer.ts FILE`) it applies the events of `eventAt(i)` from the file's log
 * position on, one transaction each, with a sync of 200 listed DOIs every 50 events, and prints `applied <id>`
 * after each commit, until it is killed.
 */

/** A small deterministic generator (bench/lib/random.ts): event i is the same in every process. */
export const random = seededRandom

const pick = <T>(rnd: () => number, items: readonly T[]): T => items[Math.floor(rnd() * items.length)] as T

export function watched(n: number, prefix = n % 2 === 0 ? '10.5555' : '10.6666'): WatchedDoi {
  return { key: `${prefix}/k${n}`, doi: `${prefix}/K${n}`, prefix }
}

export const AT = Date.UTC(2026, 10, 1)

export function stateOf(verdict: DoiState['verdict'], at: number, more: Partial<DoiState> = {}): DoiState {
  return {
    verdict,
    since: verdict === 'unchecked' ? null : at,
    confirmedAt: verdict === 'unchecked' ? null : at,
    streak: 0,
    streakVerdict: null,
    streakFirstAt: null,
    streakLastAt: null,
    window: 1,
    retries: 0,
    nextAt: at + 604_800_000,
    ...more
  }
}

export function checkEvent(
  doi: WatchedDoi,
  at: number,
  verdict: CheckVerdict,
  more: { state?: DoiState; result?: Partial<CheckResult>; kind?: (typeof CHECK_KINDS)[number] } = {}
): HealthEvent {
  const host = `host${doi.key.length % 7}.example`
  return {
    v: 1,
    t: 'check',
    ...doi,
    at,
    kind: more.kind ?? 'scheduled',
    verdict,
    status: verdict === 'alive' ? 200 : 404,
    registeredUrl: `https://${host}/${doi.key}`,
    finalUrl: `https://www.${host}/article/${doi.key}`,
    evidence: verdict === 'alive' ? 'names the DOI' : `HTTP 404 at https://www.${host}/article/${doi.key}`,
    ms: 120,
    state: more.state ?? stateOf(verdict === 'error' ? 'unchecked' : verdict, at),
    ...more.result
  }
}

/** Event i of the crash writer (1-based): mostly checks of 300 DOIs, some `watch` announcements. */
export function eventAt(i: number): HealthEvent {
  const rnd = random(i * 7919)
  const doi = watched(Math.floor(rnd() * 300))
  const at = AT + i * 1000
  if (rnd() < 0.1) return { v: 1, t: 'watch', ...doi, source: 'seen' }
  const verdict = pick(rnd, CHECK_VERDICTS)
  const shown = pick(rnd, SHOWN_VERDICTS)
  return checkEvent(doi, at, verdict, {
    kind: pick(rnd, CHECK_KINDS),
    state: stateOf(shown, at, rnd() < 0.3 ? { streak: 1, streakVerdict: pick(rnd, FAILURES), streakFirstAt: at, streakLastAt: at } : {}),
    result: {
      // Many URLs and evidence lines, some new: the interning runs in the transactions too.
      finalUrl: rnd() < 0.2 ? null : `https://site${Math.floor(rnd() * 50)}.example/p/${Math.floor(rnd() * 1000)}`,
      evidence: `evidence ${Math.floor(rnd() * 500)}`
    }
  })
}

/** The id of event i in the crash writer's log. */
export const idOf = (i: number): string => `1700000000000-${i}`

/** A line on stdout before going on (synchronous: what the parent reads was said after the commit, nothing queued). */
function said(line: string): void {
  for (;;) {
    try {
      writeSync(1, line)
      return
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err
    }
  }
}

async function main(file: string): Promise<void> {
  const db = openHealthDb({ file, log: { info() {}, warn() {} }, checkpointEveryMs: 100, now: () => AT })
  let i = Number(db.logPosition().split('-')[1] ?? '0') + 1
  for (;;) {
    if (i % 50 === 0) {
      // A bigger transaction: a sync of the list, then its sweep.
      const generation = db.nextGeneration()
      const offset = Math.floor(random(i)() * 300)
      db.upsertWatched(
        'list',
        Array.from({ length: 200 }, (_, n) => watched((offset + n) % 300)),
        generation
      )
      db.sweepSources('list', generation)
    }
    db.applyEvent(idOf(i), eventAt(i))
    said(`applied ${idOf(i)}\n`)
    i++
    // Let the checkpointer's thread and the kill in now and then.
    if (i % 20 === 0) await new Promise((resolve) => setImmediate(resolve))
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2]
  if (file === undefined) throw new Error('usage: health-writer.ts FILE')
  main(file).catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
}
