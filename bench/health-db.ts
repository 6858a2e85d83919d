/**
 * The health history at size (issue 42 item 5, plan §10): a SQLite file filled with N checks through the real
 * `HealthDb.applyEvent` (10,000 events to a transaction, the writer as it runs: WAL, checkpoints on a thread), of
 * 100,000 DOIs on 1,000 hosts over 365 days, their states moved by the real confirmation rule; then
 *
 * - bytes a check: the file after a TRUNCATE checkpoint ÷ checks, and each table's and index's share (dbstat);
 * - every query the pages make, on a read-only connection as the other workers open it: p50/p95 of 20 runs;
 * - one check written (`applyEvent`, its own transaction) on the loop: p50/p95 of 1,000;
 * - one prune day (HEALTH_KEEP_DAYS one day short of the history: its oldest day of checks goes): its batches, the
 *   worst of them on the loop, the whole run.
 *
 *   npm run bench:health-db                         10,000,000 checks (about 8 minutes here, I/O bound)
 *   npm run bench:health-db -- --rows 1000000       a million
 *   npm run bench:health-db -- --reuse              the file of the last run of the same size, not filled again
 *
 * Prints its figures; bench/RESULTS.md's rows are written from them by hand in the commit (T8).
 */
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { advance, uncheckedState } from '../src/handle/health/confirm.js'
import { slotOf } from '../src/handle/health/schedule.js'
import { cacheKey } from '../src/handle/name.js'
import type { CheckVerdict, DoiState, HealthEvent } from '../src/handle/health/types.js'
import { openHealthDb } from '../src/resolve/health/db.js'
import type { HealthDb, WatchedDoi } from '../src/resolve/health/db.js'
import { createPruner } from '../src/resolve/health/prune.js'
import { createHealthReader } from '../src/resolve/health/reader.js'
import { forEachOption } from './lib/args.js'
import { TMP } from './lib/processes.js'
import { machine, runBench } from './lib/results.js'
import { seededRandom as random } from './lib/random.js'
import { medianP95Max } from './lib/load.js'

const HELP = `Usage: npm run bench:health-db [-- options]
  --rows N      checks in the file (default 10000000)
  --dois N      watched DOIs (default 100000)
  --hosts N     hosts they are on (default 1000)
  --days N      days the checks span (default 365)
  --repeat N    runs of each query (default 20)
  --reuse       keep the file of an earlier run of the same size instead of filling it again
  --file PATH   the file (default bench/.tmp/health-db/health-<rows>.sqlite)`

interface Args {
  rows: number
  dois: number
  hosts: number
  days: number
  repeat: number
  reuse: boolean
  file?: string
}

function wholeNumber(arg: string, value: string): number {
  const n = Number(value.replace(/_/g, ''))
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${arg} wants a whole number above 0, got "${value}"`)
  return n
}

function parseArgs(argv: string[]): Args {
  const args: Args = { rows: 10_000_000, dois: 100_000, hosts: 1000, days: 365, repeat: 20, reuse: false }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--rows') args.rows = wholeNumber(arg, value())
    else if (arg === '--dois') args.dois = wholeNumber(arg, value())
    else if (arg === '--hosts') args.hosts = wholeNumber(arg, value())
    else if (arg === '--days') args.days = wholeNumber(arg, value())
    else if (arg === '--repeat') args.repeat = wholeNumber(arg, value())
    else if (arg === '--reuse') args.reuse = true
    else if (arg === '--file') args.file = value()
    else return false
    return true
  })
  return args
}

const DAY = 86_400_000
const START = Date.UTC(2025, 10, 1)
const INTERVAL = 7 * DAY
const RULES = { confirm: 3, gapMs: 6 * 3_600_000, intervalMs: INTERVAL }
const log = { info() {}, warn: (obj: object, msg: string) => process.stderr.write(`${msg} ${JSON.stringify(obj)}\n`) }

/** What a check finds, in proportions a repository might see: mostly alive, a few broken for a while. */
function verdictFor(rnd: () => number, broken: boolean): CheckVerdict {
  if (broken) return rnd() < 0.9 ? 'dead' : 'not-found'
  const r = rnd()
  if (r < 0.9) return 'alive'
  if (r < 0.94) return 'unconfirmed'
  if (r < 0.96) return 'blocked'
  if (r < 0.98) return 'dead'
  if (r < 0.99) return 'error'
  if (r < 0.995) return 'takeover'
  return 'no-url'
}

interface Doi extends WatchedDoi {
  host: number
  slot: number
  state: DoiState
  /** Broken for good from this check on (3 % of the DOIs, from a random point of the year). */
  brokenFrom: number
}

function doisOf(args: Args): Doi[] {
  const rnd = random(1)
  return Array.from({ length: args.dois }, (_, n) => {
    const prefix = n % 10 === 9 ? '10.6666' : '10.5555'
    // The key as the app computes it from the DOI (ASCII folded to upper case), so `?doi=` finds it.
    const key = cacheKey(`${prefix}/bench.${n}`)
    const slot = slotOf(key, INTERVAL)
    return {
      key,
      doi: `${prefix}/BENCH.${n}`,
      prefix,
      host: n % args.hosts,
      slot,
      state: uncheckedState(START, slot, INTERVAL),
      brokenFrom: rnd() < 0.03 ? Math.floor(rnd() * 1e9) : Number.POSITIVE_INFINITY
    }
  })
}

async function fill(db: HealthDb, args: Args, dois: Doi[]): Promise<{ seconds: number; now: number }> {
  const started = performance.now()
  let clock = START
  const pruner = createPruner(db, { keepDays: args.days + 10, now: () => clock })
  for (let i = 0; i < dois.length; i += 10_000) db.upsertWatched('store', dois.slice(i, i + 10_000), db.nextGeneration())
  const rounds = Math.ceil(args.rows / dois.length)
  const period = (args.days * DAY) / rounds
  const rnd = random(2)
  let seq = 0
  let day = -1
  const batch = db.sqlite.transaction((events: Array<[string, HealthEvent]>) => {
    for (const [id, event] of events) db.applyEvent(id, event)
  })
  let events: Array<[string, HealthEvent]> = []
  for (let round = 0; round < rounds && seq < args.rows; round++) {
    for (let n = 0; n < dois.length && seq < args.rows; n++) {
      const doi = dois[n] as Doi
      const at = Math.floor(START + round * period + (n / dois.length) * period)
      const today = Math.floor((at - START) / DAY)
      if (today !== day) {
        // The hourly rollup, once a day here: the chart's points.
        batch.immediate(events)
        events = []
        clock = at
        pruner.rollup()
        day = today
      }
      const verdict = verdictFor(rnd, (round * dois.length + n) / args.rows >= doi.brokenFrom / 1e9)
      const kind = doi.state.streak > 0 ? 'confirm' : 'scheduled'
      const moved = advance(doi.state, { verdict, kind }, { ...RULES, slot: doi.slot }, at)
      doi.state = moved.state
      const host = `journal${doi.host}.example`
      const final = verdict === 'takeover' ? `https://casino${doi.host % 50}.example/` : `https://www.${host}/article/${n}`
      events.push([
        `${at}-${seq++}`,
        {
          v: 1,
          t: 'check',
          key: doi.key,
          doi: doi.doi,
          prefix: doi.prefix,
          at,
          kind,
          verdict,
          status: verdict === 'alive' ? 200 : verdict === 'dead' ? 404 : verdict === 'blocked' ? 403 : null,
          registeredUrl: verdict === 'not-found' || verdict === 'error' ? null : `https://${host}/doi/${n}`,
          finalUrl: verdict === 'not-found' || verdict === 'error' || verdict === 'no-url' ? null : final,
          evidence:
            verdict === 'alive'
              ? 'the page names the DOI'
              : verdict === 'takeover'
                ? `landed on casino${doi.host % 50}.example; alive on ${host} until 2026-05-02`
                : verdict === 'dead'
                  ? 'HTTP 404'
                  : verdict === 'error'
                    ? 'the upstream timed out'
                    : `${verdict}: no DOI or title on the page`,
          ms: 100 + Math.floor(rnd() * 900),
          state: moved.state
        }
      ])
      if (events.length === 10_000) {
        batch.immediate(events)
        events = []
        // A turn of the loop: the checkpointer's thread takes the log meanwhile.
        await new Promise((resolve) => setImmediate(resolve))
        if (seq % 1_000_000 === 0) {
          process.stderr.write(`  ${seq.toLocaleString('en')} checks, ${((performance.now() - started) / 1000).toFixed(0)} s\n`)
        }
      }
    }
  }
  batch.immediate(events)
  clock = START + args.days * DAY
  pruner.rollup()
  return { seconds: (performance.now() - started) / 1000, now: clock }
}

function timeIt(repeat: number, fn: () => unknown): { p50: number; p95: number; max: number; rows: number } {
  const samples: number[] = []
  let rows = 0
  for (let i = 0; i < repeat; i++) {
    const start = performance.now()
    const result = fn()
    samples.push(performance.now() - start)
    rows = Array.isArray(result) ? result.length : ((result as { rows?: unknown[] } | null)?.rows?.length ?? 1)
  }
  return { ...medianP95Max(samples), rows }
}

const ms = (n: number): string => n.toFixed(n < 1 ? 3 : n < 10 ? 2 : 1)

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const dir = join(TMP, 'health-db')
  mkdirSync(dir, { recursive: true })
  const file = args.file ?? join(dir, `health-${args.rows}.sqlite`)
  const dois = doisOf(args)
  let end = START + args.days * DAY
  process.stdout.write(
    `# bench:health-db — ${args.rows.toLocaleString('en')} checks, ${args.dois.toLocaleString('en')} DOIs, ${args.hosts} hosts, ${args.days} days\n`
  )
  process.stdout.write(`${machine()}\n\n`)

  if (!(args.reuse && existsSync(file))) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
    const writer = openHealthDb({ file, log, now: () => START, intervalMs: INTERVAL, maxDois: 10_000_000 })
    // The page cache of the plan's fill (256 MiB): the indexes stay in memory while they grow.
    writer.sqlite.pragma('cache_size = -262144')
    const filled = await fill(writer, args, dois)
    end = filled.now
    await writer.close()
    process.stdout.write(`fill: ${filled.seconds.toFixed(0)} s, ${Math.round(args.rows / filled.seconds).toLocaleString('en')} checks/s\n`)
  }

  // Size: the log copied in and truncated first, so the file is all there is.
  const writer = openHealthDb({ file, log, now: () => end, intervalMs: INTERVAL, checkpointEveryMs: 0 })
  writer.sqlite.pragma('wal_checkpoint(TRUNCATE)')
  const checks = (writer.sqlite.prepare('SELECT count(*) AS n FROM checks').get() as { n: number }).n
  const bytes = statSync(file).size
  process.stdout.write(
    `file: ${(bytes / 1e6).toFixed(0)} MB for ${checks.toLocaleString('en')} checks = ${(bytes / checks).toFixed(1)} B/check\n`
  )
  try {
    const shares = writer.sqlite.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as Array<{
      name: string
      bytes: number
    }>
    process.stdout.write(`  ${shares.map(({ name, bytes: b }) => `${name} ${((100 * b) / bytes).toFixed(1)} %`).join(', ')}\n`)
  } catch (err) {
    process.stdout.write(`  (no dbstat: ${(err as Error).message})\n`)
  }

  // The pages' queries, on a read-only connection (the other workers').
  const reading = openHealthDb({ file, readonly: true, log })
  const reader = createHealthReader(reading, { watched: ['10.5555'], now: () => end })
  const firstPage = reader.broken({ limit: 200 })
  let deep = firstPage
  for (let i = 0; i < 4 && deep.next !== null; i++) deep = reader.broken({ after: deep.next, limit: 200 })
  const someKey = dois[Math.floor(dois.length / 2)]?.key ?? ''
  const queries: Array<[string, () => unknown]> = [
    ['summary (counts, newly broken, overdue; 90 days of history)', () => reader.summary({ days: 90 })],
    ['daily (one prefix, 365 days)', () => reader.daily('10.5555', 365)],
    ['broken, first page of 200', () => reader.broken({ limit: 200 })],
    ['broken, 6th page of 200 (after=)', () => reader.broken({ after: deep.next ?? undefined, limit: 200 })],
    ['broken, one prefix, 1,000 (a CSV page)', () => reader.broken({ prefix: '10.6666', limit: 1000 })],
    ['newly broken this week', () => reader.newlyBroken(end - 7 * DAY)],
    ["one DOI's state and last 100 checks", () => reader.history(someKey, 100)],
    ['checker status (last check, overdue, gap)', () => reader.checkerStatus()],
    ['due: 500 DOIs (the scheduler)', () => reading.due(end, 500)],
    ['next due time', () => reading.nextDueAt()]
  ]
  process.stdout.write(`\nqueries (ms, ${args.repeat} runs, read-only connection):\n`)
  process.stdout.write('| query | rows | p50 | p95 | max |\n|---|---:|---:|---:|---:|\n')
  for (const [name, fn] of queries) {
    const t = timeIt(args.repeat, fn)
    process.stdout.write(`| ${name} | ${t.rows} | ${ms(t.p50)} | ${ms(t.p95)} | ${ms(t.max)} |\n`)
  }
  await reading.close()

  // One check written, as the fleet log's consumer writes it: its own transaction.
  const writes: number[] = []
  const base = writer.logPosition()
  const [baseMs] = base.split('-').map(Number)
  for (let i = 0; i < 1000; i++) {
    const doi = dois[(i * 97) % dois.length] as Doi
    const event: HealthEvent = {
      v: 1,
      t: 'check',
      key: doi.key,
      doi: doi.doi,
      prefix: doi.prefix,
      at: end + i,
      kind: 'scheduled',
      verdict: 'alive',
      status: 200,
      registeredUrl: `https://journal${doi.host}.example/doi/x${i}`,
      finalUrl: `https://www.journal${doi.host}.example/article/x${i}`,
      evidence: 'the page names the DOI',
      ms: 300,
      state: { ...doi.state, verdict: 'alive', nextAt: end + INTERVAL }
    }
    const start = performance.now()
    writer.applyEvent(`${(baseMs ?? 0) + 1 + i}-0`, event)
    writes.push(performance.now() - start)
  }
  const w = medianP95Max(writes)
  process.stdout.write(`\none check written (applyEvent, 1,000): p50 ${ms(w.p50)} ms, p95 ${ms(w.p95)} ms, max ${ms(w.max)} ms\n`)
  await writer.close()

  // One prune day, with the writer as it runs (checkpoints on the thread).
  const pruning = openHealthDb({ file, log, now: () => end, intervalMs: INTERVAL })
  const { n: before } = pruning.sqlite.prepare('SELECT count(*) AS n FROM checks').get() as { n: number }
  // The oldest day goes (a file reused from an earlier run has lost its first days already; the last good checks
  // of watched DOIs stay, whatever their age).
  const { first } = pruning.sqlite
    .prepare(
      'SELECT min(c.at) AS first FROM checks c WHERE NOT EXISTS (SELECT 1 FROM dois d WHERE d.sources <> 0 AND d.last_good_check_id = c.id)'
    )
    .get() as { first: number }
  const keepDays = Math.ceil((end - first) / DAY) - 1
  const started = performance.now()
  const result = await createPruner(pruning, { keepDays, now: () => end }).runOnce()
  const total = performance.now() - started
  process.stdout.write(
    `prune one day (keep ${keepDays} days): ${result.checks.toLocaleString('en')} of ${before.toLocaleString('en')} checks in ${result.batches} transactions, worst ${ms(result.worstBatchMs)} ms on the loop, ${ms(total)} ms in all\n`
  )
  await pruning.close()
  // On 2 cores, a load above 2 means other processes shared the CPU: the times above are longer than alone.
  process.stdout.write(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')}\n`
  )
}

runBench(main)
