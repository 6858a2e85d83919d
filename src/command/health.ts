/**
 * `doi-proxy health` (issue 42, plan §7): the server's health checks once, from the command line, for a
 * repository's own CI. It builds the server's services in this process from the environment (as `check
 * --upstream` does), with the DOIs to watch from --watch and --list and the history in --db (else in memory),
 * checks every DOI now, checks each failure again --confirm-gap apart until HEALTH_CONFIRM in a row confirm it
 * (or one does not), and writes the report. Exit 1 when a DOI is confirmed broken.
 */
import { constants, existsSync } from 'node:fs'
import { access, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { loadConfig } from '../config/load.js'
import { OPTIONS } from '../config/schema.js'
import type { Config } from '../config/schema.js'
import { configuredBaseUrl } from '../http/base-url.js'
import type { Health } from '../resolve/health/health-service.js'
import { REASON_WORDS } from '../resolve/upstream/reachability.js'
import type { ServiceDeps, Services } from '../services.js'
import { visible } from './check/visible.js'
import { HEALTH_FORMATS, readReport, renderReport, watchedCount } from './health-report.js'
import type { HealthFormat } from './health-report.js'
import { EXIT_INTERRUPTED, onInterrupt } from './interrupt.js'

export const HEALTH_HELP = `doi-proxy health: are the DOIs we own still reaching their pages?

Usage:
  doi-proxy health [--watch PREFIX[,...]] [--list FILE] [options]

Resolves each DOI and looks at its landing page, as a doi-proxy with HEALTH_WATCH
does on a schedule (docs/health.md): alive (the page names the DOI or its title),
unconfirmed, blocked (a bot wall), dead, taken over (another domain, the DOI gone
from the page), not found (not registered) or no URL. A failure is checked again
--confirm-gap seconds later until HEALTH_CONFIRM (default 3) failures in a row
confirm it, or one check does not fail. Resolves through the same code and
settings as the server ($UPSTREAM_URL, $LOCAL_STORE_DIR, $LANDING_*, ...).

options:
  -w, --watch PREFIXES     the DOIs of these prefixes (comma-separated, 10.5555) in
                           the local store ($LOCAL_STORE_DIR) and in --db
  -l, --list FILE          a file of DOIs, one a line (10.5555/abc, doi:..., or a
                           https://doi.org/... URL; # starts a comment), any prefix
  -f, --format FORMAT      text (default), json, csv (one row per broken DOI: doi,
                           verdict, since, url, evidence) or html (a page)
  -o, --out FILE           write the report to FILE instead of standard output
      --db FILE            keep the history in this SQLite file: a failure's streak
                           carries over to the next run (cache it in CI); default:
                           in memory, forgotten at exit
      --confirm-gap S      seconds between the checks that confirm a failure, 0 to
                           604800 (default: 30)
HEALTH_WATCH, HEALTH_LIST_FILE and HEALTH_DB are not read: the options say what to check.

Exit status: 0 when no DOI is confirmed broken; 1 when one or more is; 2 for a
usage error or nothing to check; 69 when the upstream cannot be reached; 130
when interrupted.

Examples:
  doi-proxy health --list our-dois.txt
  doi-proxy health --watch 10.5555 --format csv --out broken.csv --db .cache/health.sqlite
`

const EXIT_USAGE = 2
const EXIT_UNAVAILABLE = 69 // sysexits.h EX_UNAVAILABLE, as mirror
const DEFAULT_CONFIRM_GAP_SECONDS = 30
const MAX_CONFIRM_GAP_SECONDS = 604_800

export interface HealthCommand {
  watch: string[]
  /** Absolute paths (resolved against the working directory). */
  list: string | undefined
  format: HealthFormat
  out: string | undefined
  db: string | undefined
  confirmGapSeconds: number
}

export class HealthUsageError extends Error {}

interface Io {
  cwd: string
  env: NodeJS.ProcessEnv
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
}

/** The options, checked; paths resolved against `cwd`. Throws HealthUsageError (or parseArgs' own error). */
export function parseHealthArgs(args: string[], cwd: string): HealthCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      watch: { type: 'string', short: 'w', multiple: true, default: [] },
      list: { type: 'string', short: 'l' },
      format: { type: 'string', short: 'f', default: 'text' },
      out: { type: 'string', short: 'o' },
      db: { type: 'string' },
      'confirm-gap': { type: 'string', default: String(DEFAULT_CONFIRM_GAP_SECONDS) },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) return 'help'
  if (positionals.length > 0) {
    throw new HealthUsageError(
      `unexpected argument ${JSON.stringify(positionals[0])} (the DOIs are given with --watch PREFIX or --list FILE)`
    )
  }
  const watch = values.watch.flatMap((w) => w.split(',')).map((p) => p.trim())
  if (watch.some((p) => p === '')) {
    throw new HealthUsageError(`--watch takes comma-separated prefixes such as 10.5555, got ${JSON.stringify(values.watch.join(','))}`)
  }
  if (watch.length === 0 && values.list === undefined) {
    throw new HealthUsageError("nothing to check: give --watch PREFIX (the local store's DOIs of a prefix) or --list FILE (one DOI a line)")
  }
  const format = values.format as HealthFormat
  if (!HEALTH_FORMATS.includes(format)) {
    throw new HealthUsageError(`--format must be one of ${HEALTH_FORMATS.join(', ')}, got ${JSON.stringify(values.format)}`)
  }
  const gap = values['confirm-gap'].trim()
  const confirmGapSeconds = /^\d{1,7}$/.test(gap) ? Number(gap) : NaN
  if (!(confirmGapSeconds <= MAX_CONFIRM_GAP_SECONDS)) {
    throw new HealthUsageError(
      `--confirm-gap must be a whole number of seconds from 0 to ${MAX_CONFIRM_GAP_SECONDS}, got ${JSON.stringify(values['confirm-gap'])}`
    )
  }
  const file = (option: string, raw: string | undefined): string | undefined => {
    if (raw === undefined) return undefined
    if (raw.trim() === '' || raw === '-') throw new HealthUsageError(`${option} must name a file, got ${JSON.stringify(raw)}`)
    return resolve(cwd, raw)
  }
  return {
    watch,
    list: file('--list', values.list),
    format,
    out: file('--out', values.out),
    db: file('--db', values.db),
    confirmGapSeconds
  }
}

/** The files named, usable before anything is checked: a run that would fail at its end fails at its start. */
async function checkFiles(cmd: HealthCommand): Promise<void> {
  if (cmd.list !== undefined) {
    const kind = await stat(cmd.list).then(
      (s) => (s.isFile() ? undefined : 'not a file'),
      (err: NodeJS.ErrnoException) => err.code ?? String(err)
    )
    const readable =
      kind ??
      (await access(cmd.list, constants.R_OK).then(
        () => undefined,
        (err: NodeJS.ErrnoException) => err.code ?? String(err)
      ))
    if (readable !== undefined) throw new HealthUsageError(`cannot read --list ${JSON.stringify(cmd.list)} (${readable})`)
  }
  for (const [option, path] of [
    ['--db', cmd.db],
    ['--out', cmd.out]
  ] as const) {
    if (path === undefined) continue
    const why = await access(dirname(path), constants.W_OK).then(
      () => undefined,
      (err: NodeJS.ErrnoException) => err.code ?? String(err)
    )
    if (why !== undefined) {
      throw new HealthUsageError(`cannot write ${option} ${JSON.stringify(path)}: its directory cannot be written (${why})`)
    }
  }
}

/** The server's settings from the environment, with the options' DOIs and history (a setting's error named by its option). */
function configOf(cmd: HealthCommand, env: NodeJS.ProcessEnv, cwd: string): Config {
  let config: Config
  try {
    config = loadConfig({ ...env, HEALTH_WATCH: cmd.watch.join(','), HEALTH_LIST_FILE: cmd.list ?? '', HEALTH_DB: cmd.db ?? '' })
  } catch (err) {
    const message = (err as Error).message
      .replace(/healthWatch \((?:env )?HEALTH_WATCH\)/g, '--watch')
      .replace(/healthListFile \((?:env )?HEALTH_LIST_FILE\)/g, '--list')
      .replace(/healthDb \((?:env )?HEALTH_DB\)/g, '--db')
    throw new HealthUsageError(message)
  }
  // As check --upstream: no cache file read or written; the default local store only where it exists.
  const dir = config.localStoreDir === undefined ? undefined : resolve(cwd, config.localStoreDir)
  const absentDefault = config.localStoreDir === OPTIONS.localStoreDir.default && dir !== undefined && !existsSync(dir)
  return { ...config, cacheFile: undefined, localStoreDir: absentDefault ? undefined : dir }
}

/** Where the DOIs were looked for, for the message when none was found. */
function nothingFound(cmd: HealthCommand, config: Config): string {
  if (cmd.watch.length === 0) return `no DOI to check: --list ${JSON.stringify(cmd.list)} holds none`
  const store =
    config.localStoreDir === undefined
      ? 'the local store (LOCAL_STORE_DIR is not set, and config/sample-records is not here)'
      : `the local store (LOCAL_STORE_DIR ${JSON.stringify(config.localStoreDir)})`
  const places = [
    store,
    ...(cmd.db === undefined ? [] : [`--db ${JSON.stringify(cmd.db)}`]),
    ...(cmd.list === undefined ? [] : [`--list ${JSON.stringify(cmd.list)}`])
  ]
  return `no DOI to check: none of ${cmd.watch.join(', ')} in ${places.join(', nor in ')}`
}

/** Written whole or not at all: a temporary file beside it, renamed. */
async function writeWhole(path: string, text: string): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`
  try {
    await writeFile(temporary, text)
    await rename(temporary, path)
  } catch (err) {
    await unlink(temporary).catch(() => {})
    throw err
  }
}

/** Checks that could not be made this run (the `error` verdict: the upstream, a breaker; not the DOI's fault). */
async function ourFailures(services: Services): Promise<number> {
  const counted = await services.metrics.healthChecks.get()
  return counted.values.filter((v) => v.labels.verdict === 'error').reduce((sum, v) => sum + v.value, 0)
}

/** Run the command; returns the exit status. Usage errors are printed here. */
export async function runHealth(args: string[], io: Io, deps: ServiceDeps = {}): Promise<number> {
  let cmd: HealthCommand | 'help'
  let config: Config
  try {
    cmd = parseHealthArgs(args, io.cwd)
    if (cmd === 'help') {
      io.stdout.write(HEALTH_HELP)
      return 0
    }
    await checkFiles(cmd)
    config = configOf(cmd, io.env, io.cwd)
  } catch (err) {
    return usage(io.stderr, err)
  }
  // The server's logger, on standard error: warnings only unless LOG_LEVEL says otherwise.
  const log = pino({ level: io.env.LOG_LEVEL ?? 'warn' }, io.stderr)
  const { createServices } = await import('../services.js')
  let built: Awaited<ReturnType<typeof createServices>>
  try {
    built = await createServices(config, deps, { log, lifecycle: { ready: true } })
  } catch (err) {
    io.stderr.write(`doi-proxy health: cannot check in this process: ${visible((err as Error).message)}\n`)
    return EXIT_USAGE
  }
  const { services, hooks } = built
  const stop = onInterrupt((text) => io.stderr.write(text), 'the checks in flight are dropped')
  try {
    // services.ts builds it, not started, when health is on (as the options make it).
    const health = (services as Services & { health?: Health | undefined }).health
    if (health === undefined) throw new Error('health checks were not built (HEALTH_WATCH or HEALTH_LIST_FILE unset)')
    let broken: number
    try {
      broken = await health.runOnce(cmd.confirmGapSeconds * 1000, stop.signal)
    } catch (err) {
      if (!stop.signal.aborted) throw err
      io.stderr.write(`doi-proxy health: interrupted${cmd.db === undefined ? '' : `; the checks made so far are in ${cmd.db}`}\n`)
      return EXIT_INTERRUPTED
    }
    const report = readReport(
      health.reader,
      {
        intervalSeconds: config.healthIntervalSeconds,
        confirm: config.healthConfirm,
        confirmGapSeconds: cmd.confirmGapSeconds,
        keepDays: config.healthKeepDays
      },
      services.now(),
      cmd.format
    )
    const watched = watchedCount(report)
    if (watched === 0) {
      io.stderr.write(`doi-proxy health: ${visible(nothingFound(cmd, config))}\n`)
      return EXIT_USAGE
    }
    const text = renderReport(cmd.format, report, configuredBaseUrl(config.publicBaseUrl) ?? './')
    if (cmd.out === undefined) io.stdout.write(text)
    else await writeWhole(cmd.out, text)
    const failed = await ourFailures(services)
    io.stderr.write(
      `doi-proxy health: ${watched} DOI${watched === 1 ? '' : 's'}, ${broken} confirmed broken` +
        (failed > 0 ? `; ${failed} check${failed === 1 ? '' : 's'} could not be made (our side: the upstream, a breaker)` : '') +
        (cmd.out === undefined ? '' : `; the report is in ${visible(cmd.out)}`) +
        '\n'
    )
    const upstream = services.upstreamState()
    if (failed > 0 && upstream.state === 'unreachable') {
      io.stderr.write(
        `doi-proxy health: cannot reach the upstream ${visible(config.upstreamUrl)}: ${REASON_WORDS[upstream.reason]} (${visible(upstream.detail)}). ` +
          'Check the network and UPSTREAM_URL, then run the same command again.\n'
      )
      return EXIT_UNAVAILABLE
    }
    return broken > 0 ? 1 : 0
  } finally {
    stop.dispose()
    await hooks.onClose()
  }
}

function usage(stderr: NodeJS.WritableStream, err: unknown): number {
  const e = err as { code?: string; message?: string }
  if (!(err instanceof HealthUsageError) && e?.code?.startsWith('ERR_PARSE_ARGS') !== true) throw err
  // parseArgs explains at length how to pass a value starting with '-'; its first sentence names the problem.
  const message = err instanceof HealthUsageError ? err.message : ((e.message ?? '').split(/\.\s/)[0] ?? '')
  stderr.write(`doi-proxy health: ${visible(message)}\nRun "doi-proxy health --help" for the options.\n`)
  return EXIT_USAGE
}
