/**
 * The benchmark runner: `npm run bench` (all scenarios, under 10 minutes), `npm run bench:quick`
 * (under 2 minutes), `npm run bench -- --scenario hot[,zipf…]`, `npm run bench -- --profile`,
 * `npm run bench -- --before <git-ref>` (that commit, built in bench/.tmp, measured beside ours).
 * Writes bench/RESULTS.md (except with --profile, whose numbers are slowed by the profiler); the batch
 * scenario (`npm run bench:batch`) writes its own section.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { addEnvPair, forEachOption } from './lib/args.js'
import { ensureBuilt, nginxAvailable, NGINX_MISSING, PROFILE_DIR, startUpstream } from './lib/processes.js'
import { speedSection, writeSection, RESULTS_PATH } from './lib/results.js'
import { rowsFromResults, writeSpeedCharts } from './lib/charts.js'
import { RUNNERS } from './lib/scenarios.js'
import { SCENARIOS, settingsFor } from './lib/scenario-context.js'
import type { Row, ScenarioName } from './lib/scenario-context.js'
import { buildBefore } from './lib/before.js'
import type { BeforeBuild } from './lib/before.js'
import { codeVersion } from './lib/children.js'
import { chooseGenerator } from './lib/wrk.js'
import { describePinning, pinCores } from './lib/pinning.js'
import type { GeneratorName } from './lib/wrk.js'

const HELP = `Usage: node --import tsx bench/run.ts [options]
  --quick                 short runs and fewer DOIs (under 2 minutes)
  --scenario NAME[,NAME]  only these (${SCENARIOS.join(', ')}); repeatable
  --profile               start our server with --cpu-prof (profiles in bench/.tmp/profiles),
                          no baselines, print the top functions; default scenario: hot
  --no-nginx              skip the nginx baseline even if nginx is installed
  --no-pin                leave every process where the scheduler puts it (default: the servers
                          under test on the last core, the rest on the others, with taskset)
  --latency MS            the fake upstream's latency (default 30)
  --server-env KEY=VALUE  extra environment for our server (e.g. LOG_LEVEL=warn); repeatable
  --generator wrk|autocannon  what drives the load (default wrk, installed with apt-get when
                          missing; autocannon only as a fallback: it is slower than the floor here)
  --before GIT-REF        also run that commit of this repository (built in bench/.tmp, removed
                          afterwards) wherever our server runs, as "doi-proxy before (<sha>)"`

interface Args {
  quick: boolean
  scenarios: ScenarioName[]
  profile: boolean
  nginx: boolean
  pin: boolean
  latencyMs: number
  serverEnv: Record<string, string>
  before?: string
  generator?: GeneratorName
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, scenarios: [], profile: false, nginx: true, pin: true, latencyMs: 30, serverEnv: {} }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--quick') args.quick = true
    else if (arg === '--profile') args.profile = true
    else if (arg === '--no-nginx') args.nginx = false
    else if (arg === '--no-pin') args.pin = false
    else if (arg === '--latency') args.latencyMs = Number(value())
    else if (arg === '--scenario') {
      for (const name of value().split(',')) {
        if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario "${name}"; known: ${SCENARIOS.join(', ')}`)
        args.scenarios.push(name as ScenarioName)
      }
    } else if (arg === '--server-env') addEnvPair(value(), args.serverEnv)
    else if (arg === '--before') args.before = value()
    else if (arg === '--generator') {
      const g = value()
      if (g !== 'wrk' && g !== 'autocannon') throw new Error('--generator wants wrk or autocannon')
      args.generator = g
    } else return false
    return true
  })
  if (args.scenarios.length === 0) args.scenarios = args.profile ? ['hot'] : [...SCENARIOS]
  // The client's own ceiling goes with every speed run (not with --profile or the batch alone).
  if (!args.profile && !args.scenarios.includes('client') && args.scenarios.some((n) => n !== 'batch')) args.scenarios.unshift('client')
  if (!Number.isFinite(args.latencyMs) || args.latencyMs < 0) throw new Error('--latency wants a number of ms')
  if (args.before !== undefined && args.profile) {
    throw new Error('--before and --profile do not go together: --profile runs our server alone')
  }
  return args
}

function log(line: string): void {
  process.stdout.write(`${line}\n`)
}

function newestProfile(since: number): string | undefined {
  if (!existsSync(PROFILE_DIR)) return undefined
  return readdirSync(PROFILE_DIR)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(PROFILE_DIR, f))
    .filter((f) => statSync(f).mtimeMs >= since)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const started = Date.now()
  const settings = settingsFor(args.quick)
  ensureBuilt(log)
  const nginx = args.nginx && nginxAvailable()
  if (args.nginx && !nginx && !args.profile) log(NGINX_MISSING)
  const generator = chooseGenerator(args.generator, log)
  log(`load generator: ${generator.name} (${generator.why})`)
  const pinning = args.pin ? pinCores() : '--no-pin'
  log(describePinning(pinning))

  let before: BeforeBuild | undefined
  const rows: Row[] = []
  try {
    if (args.before !== undefined) before = buildBefore(args.before, log)
    const upstream = await startUpstream(args.latencyMs)
    try {
      for (const name of args.scenarios) {
        log(`${name}:`)
        const t0 = Date.now()
        rows.push(
          ...(await RUNNERS[name]({
            settings,
            upstream,
            nginx,
            profile: args.profile,
            serverEnv: args.serverEnv,
            before,
            generator: generator.name,
            log
          }))
        )
        log(`  (${((Date.now() - t0) / 1000).toFixed(1)} s)`)
      }
    } finally {
      await upstream.stop()
    }
  } finally {
    before?.remove()
  }

  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  const envLine =
    Object.keys(args.serverEnv).length === 0
      ? 'our server on its defaults (but TRUSTED_NETWORKS=127.0.0.0/8: the load generator is one client standing for many readers)'
      : `our server with ${Object.entries(args.serverEnv)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
  const settingsLine =
    `${settings.connections} connections (cold: ${settings.coldConnections}); ` +
    `hot, not-found, api, conneg and metadata: every server started at once (linkout: one after the other), ${settings.warmupS} s warm-up each, then measured in ${settings.rounds} alternating rounds of ${settings.roundS} s per server (${settings.rounds * settings.roundS} s each; each round in its own order, shuffled with a seed); ` +
    `cold: ${settings.warmupS} s warm-up + ${settings.measureS} s measured per server; ` +
    `zipf ${settings.zipfDois} DOIs, ${settings.zipfWarmupRequests} warm-up requests then ${settings.zipfMeasureRequests} measured; fake upstream latency ${args.latencyMs} ms; ${envLine}; ` +
    "zipf twice for ours: on its defaults (UPSTREAM_MAX_CONCURRENT=16) and at nginx's upstream concurrency (each row says which); " +
    'the floor of hot, not-found, api, conneg, metadata and linkout writes the same bytes as our answer (status, headers, body; Node writes Date itself); ' +
    `load generator: ${generator.name === 'wrk' ? '`wrk -t1 -cN` (bench/lib/wrk.lua)' : "autocannon in the runner's process"}, ${generator.why}, on the same machine (the client row shows its own ceiling); ${describePinning(pinning)}; whole run ${seconds} s.`
  if (args.profile) {
    const profile = newestProfile(started)
    if (profile === undefined) {
      log(`no .cpuprofile found in ${PROFILE_DIR}`)
    } else {
      log(`\nprofile: ${profile}`)
      spawnSync(process.execPath, [join(import.meta.dirname, 'profile-summary.mjs'), profile, '--top', '15'], { stdio: 'inherit' })
    }
    log('(--profile: RESULTS.md not written; profiled numbers are slower than real ones)')
    return
  }
  const mode = args.quick ? 'quick (`npm run bench:quick`)' : 'full (`npm run bench`)'
  const subset = args.scenarios.length === SCENARIOS.length ? '' : `; scenarios ${args.scenarios.join(', ')} only`
  const code =
    `doi-proxy is ${codeVersion()}` +
    (before === undefined
      ? ''
      : `; ${before.name} is commit ${before.short} (${before.subject}), built in bench/.tmp against today's node_modules and started like doi-proxy`)
  if (rows.length === 0) {
    log(`\nwrote ${RESULTS_PATH} (${seconds} s)`) // the batch scenario alone: its own section only
    return
  }
  writeSection('speed', speedSection({ mode: mode + subset, settingsLine, code, rows }))
  // Drawn from the table as written (rounded), so the pictures show exactly the published numbers.
  // The client's ceiling is about the load generator, not a server: left out of the pictures.
  const charts = writeSpeedCharts(rowsFromResults(readFileSync(RESULTS_PATH, 'utf8')))
  log(`\nwrote ${RESULTS_PATH} and ${charts.join(', ')} (${seconds} s)`)
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error)?.stack ?? String(err)}\n`)
  process.exit(1)
})
