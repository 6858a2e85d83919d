/**
 * The health pages over a large history (issue 42 item 5, plan §10): the file `npm run bench:health-db` filled (10 M
 * checks by default) opened by the real app (`buildApp` with HEALTH_DB naming it, as the server's writer opens it;
 * not listening, so nothing is checked or pruned meanwhile), and each page asked through `app.inject` (the whole
 * answer read, the files streamed to their end): `/health`, the same filtered to one prefix, one DOI's history,
 * `/health.json`, `/health.csv`. p50/p95/max of `--repeat` runs after one warm-up each; the file's rows stated.
 * The clock is the file's last check plus a minute, so "this week" is the fill's last week.
 *
 *   npm run bench:health-db                          first: the 10 M-check file (about 8 minutes here)
 *   npm run bench:health-pages                       then the pages over it (a minute or two)
 *   npm run bench:health-pages -- --file bench/.tmp/health-db/health-100000.sqlite
 *
 * Prints its figures, then one line of JSON; bench/RESULTS.md's rows are written from them by hand.
 */
import { existsSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import { FAILURES } from '../src/handle/health/types.js'
import { openHealthDb } from '../src/resolve/health/db.js'
import { addEnvPair, forEachOption } from './lib/args.js'
import { codeVersion } from './lib/children.js'
import { freePort, TMP } from './lib/processes.js'
import { machine, runBench } from './lib/results.js'
import { medianP95Max } from './lib/load.js'

const DEFAULT_FILE = join(TMP, 'health-db', 'health-10000000.sqlite')

const HELP = `Usage: npm run bench:health-pages [-- options]
  --file PATH        the history (default ${DEFAULT_FILE.replace(/^.*\/bench\//, 'bench/')}, from npm run bench:health-db)
  --repeat N         timed runs of each page (default 20)
  --interval S       HEALTH_INTERVAL_SECONDS the file was filled with (default 604800, bench:health-db's)
  --server-env K=V   another setting for the app (repeatable)`

interface Args {
  file: string
  repeat: number
  interval: number
  env: Record<string, string>
}

function parseArgs(argv: string[]): Args {
  const args: Args = { file: DEFAULT_FILE, repeat: 20, interval: 604_800, env: {} }
  const whole = (arg: string, value: string): number => {
    const n = Number(value.replace(/_/g, ''))
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${arg} wants a whole number above 0, got "${value}"`)
    return n
  }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--file') args.file = value()
    else if (arg === '--repeat') args.repeat = whole(arg, value())
    else if (arg === '--interval') args.interval = whole(arg, value())
    else if (arg === '--server-env') addEnvPair(value(), args.env)
    else return false
    return true
  })
  return args
}

const log = { info() {}, warn: (obj: object, msg: string) => process.stderr.write(`${msg} ${JSON.stringify(obj)}\n`) }

/** What the file holds: rows, prefixes (most DOIs first), broken DOIs, the last check, a DOI with checks. */
async function describe(file: string) {
  const db = openHealthDb({ file, readonly: true, log })
  try {
    const q = <T>(sql: string, ...params: unknown[]): T => db.sqlite.prepare(sql).get(...params) as T
    const checks = q<{ n: number }>('SELECT count(*) AS n FROM checks').n
    const lastAt = q<{ at: number | null }>('SELECT max(at) AS at FROM checks').at
    const tally = db.sqlite.prepare('SELECT prefix, verdict, n FROM tally').all() as Array<{ prefix: string; verdict: string; n: number }>
    const byPrefix = new Map<string, number>()
    let broken = 0
    for (const t of tally) {
      byPrefix.set(t.prefix, (byPrefix.get(t.prefix) ?? 0) + t.n)
      if ((FAILURES as readonly string[]).includes(t.verdict)) broken += t.n
    }
    const prefixes = [...byPrefix.entries()].sort((a, b) => b[1] - a[1]).map(([p]) => p)
    const dois = [...byPrefix.values()].reduce((a, b) => a + b, 0)
    // A DOI with a history to show: the one of the last check.
    const doi = q<{ doi: string } | undefined>('SELECT d.doi FROM checks c JOIN dois d ON d.id = c.doi_id ORDER BY c.id DESC LIMIT 1')?.doi
    return { checks, lastAt, prefixes, dois, broken, doi }
  } finally {
    await db.close()
  }
}

const ms = (n: number): string => n.toFixed(n < 10 ? 2 : 1)

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  if (!existsSync(args.file)) {
    throw new Error(
      `${args.file} does not exist: fill it first with npm run bench:health-db (its --rows and --file), or name another with --file`
    )
  }
  const file = await describe(args.file)
  const [biggest, other] = file.prefixes
  process.stdout.write(`# bench:health-pages — ${args.file}\n`)
  process.stdout.write(`${machine()}; ${codeVersion()}; load average ${loadavg()[0]?.toFixed(2)} at the start\n`)
  process.stdout.write(
    `file: ${(statSync(args.file).size / 1e6).toFixed(0)} MB, ${file.checks.toLocaleString('en')} checks of ${file.dois.toLocaleString('en')} DOIs (prefixes ${file.prefixes.join(', ')}), ${file.broken.toLocaleString('en')} confirmed broken; the last check ${file.lastAt === null ? 'none' : new Date(file.lastAt).toISOString()}\n`
  )
  if (biggest === undefined) throw new Error(`${args.file} watches no DOI: nothing to show`)
  const now = (file.lastAt ?? Date.now()) + 60_000

  const env: Record<string, string> = {
    LOG_LEVEL: 'warn',
    UPSTREAM_URL: `http://127.0.0.1:${await freePort()}/api/handles`,
    LOCAL_STORE_DIR: '',
    CACHE_FILE: '',
    HEALTH_WATCH: file.prefixes.join(','),
    HEALTH_DB: args.file,
    HEALTH_INTERVAL_SECONDS: String(args.interval),
    ...args.env
  }
  const config = buildConfig(undefined, env)
  const opening = performance.now()
  const app = await buildApp(config, { now: () => now, logger: pino({ level: config.logLevel }, pino.destination(2)) })
  await app.ready()
  process.stdout.write(`the app built and the history opened in ${((performance.now() - opening) / 1000).toFixed(1)} s\n\n`)

  const filter = other ?? biggest
  const pages: Array<[string, string]> = [
    ['/health', 'the page: every prefix, 90 days of chart, the first 200 broken'],
    [`/health?prefix=${filter}`, 'the page, one prefix'],
    ...(file.doi === undefined
      ? []
      : ([[`/health?doi=${encodeURIComponent(file.doi)}`, "one DOI's last 100 checks"]] as Array<[string, string]>)),
    ['/health.json', 'every broken DOI, streamed'],
    ['/health.csv', 'every broken DOI, streamed'],
    [`/health.csv?prefix=${filter}`, 'one prefix']
  ]
  const results: Array<{ path: string; status: number; bytes: number; p50: number; p95: number; max: number }> = []
  const failed: string[] = []
  try {
    process.stdout.write(`| page | what | status | bytes | p50 ms | p95 ms | max ms |\n|---|---|--:|--:|--:|--:|--:|\n`)
    for (const [path, what] of pages) {
      const samples: number[] = []
      let status = 0
      let bytes = 0
      for (let i = 0; i <= args.repeat; i++) {
        const start = performance.now()
        const res = await app.inject({ method: 'GET', url: path })
        const took = performance.now() - start
        status = res.statusCode
        bytes = res.rawPayload.length
        // The first is a warm-up: SQLite's page cache and V8's code.
        if (i > 0) samples.push(took)
      }
      if (status !== 200) failed.push(`${path}: ${status}`)
      const p = medianP95Max(samples)
      results.push({ path, status, bytes, ...p })
      process.stdout.write(
        `| \`${path}\` | ${what} | ${status} | ${bytes.toLocaleString('en')} | ${ms(p.p50)} | ${ms(p.p95)} | ${ms(p.max)} |\n`
      )
    }
  } finally {
    await app.close()
  }
  process.stdout.write(
    `\nload average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}\n`
  )
  process.stdout.write(
    JSON.stringify({
      bench: 'health-pages',
      file: args.file,
      checks: file.checks,
      dois: file.dois,
      broken: file.broken,
      repeat: args.repeat,
      pages: results.map((r) => ({ ...r, p50: Number(r.p50.toFixed(2)), p95: Number(r.p95.toFixed(2)), max: Number(r.max.toFixed(2)) })),
      failed
    }) + '\n'
  )
  if (failed.length > 0) {
    process.stderr.write(`pages that did not answer 200: ${failed.join(', ')}\n`)
    process.exitCode = 1
  }
}

runBench(main)
