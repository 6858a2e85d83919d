/**
 * Instructions per answer, counted rather than timed, for a cached answer (hot: our server and the
 * same-bytes floor answering the hot scenario's 1,000 cached DOIs) and for a miss (ours and the miss floor,
 * bare node:http + undici, each answering DOIs never asked before): each server runs under valgrind's
 * callgrind, and the instructions of its main thread are counted over a fixed number of answers. A count does not move with the machine's
 * neighbours, the scheduler or the CPU's clock, which on this 2-core virtual machine move req/s by more
 * than the gap being measured (bench/README.md, "Counted, not timed"). Writes bench/COUNT.md.
 *
 * Needs valgrind (`apt-get install -y valgrind`). About 10 minutes: valgrind runs node 20–50× slower.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { forEachOption } from './lib/args.js'
import { codeVersion } from './lib/children.js'
import { captureAnswer, describeAnswer, writeAnswerFile, writeAnswersFile } from './lib/floor-answer.js'
import type { CapturedAnswer } from './lib/floor-answer.js'
import { ensureBuilt, ROOT, startFloor, startMissFloor, startOurs, startUpstream, TMP } from './lib/processes.js'
import type { Target, UpstreamProcess } from './lib/processes.js'
import { machine, runBench } from './lib/results.js'
import { doiPath } from './lib/scenarios.js'
import { runWrk } from './lib/wrk.js'

const HELP = `Usage: node --import tsx bench/count.ts [--scenario hot,miss] [--answers N] [--warm N]
  --scenario    hot (cached answers), miss (DOIs never asked before), or both (default)
  --answers N   answers counted per server (default 20000 for hot, 3000 for miss)
  --warm N      answers before counting starts (default 40000 for hot, 5000 for miss: under valgrind
                V8's optimizing compiler runs late, and a count taken before it has finished measures
                the interpreter)`

const OUT = join(ROOT, 'bench', 'COUNT.md')
const DIR = join(TMP, 'count')
const IDLE_S = 5

interface Counted {
  name: string
  answers: number
  /** Main-thread instructions over the counted answers. */
  instructions: number
  /** Main-thread instructions per second with nothing to answer (timers), for the counted stretch's length. */
  idlePerSecond: number
  seconds: number
}

type Scenario = 'hot' | 'miss'

interface Args {
  scenarios: Scenario[]
  answers?: number
  warm?: number
}

function parseArgs(argv: string[]): Args {
  const args: Args = { scenarios: [] }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--answers') args.answers = wholeNumber(arg, value())
    else if (arg === '--warm') args.warm = wholeNumber(arg, value())
    else if (arg === '--scenario') {
      for (const name of value().split(',')) {
        if (name !== 'hot' && name !== 'miss') throw new Error(`--scenario: unknown scenario "${name}"; known: hot, miss`)
        args.scenarios.push(name)
      }
    } else return false
    return true
  })
  if (args.scenarios.length === 0) args.scenarios = ['hot', 'miss']
  return args
}

function wholeNumber(option: string, text: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${option} wants a whole number above 0, got ${JSON.stringify(text)}`)
  return n
}

function has(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore' })
  return r.error === undefined && r.status === 0
}

/**
 * callgrind_control -z (zero the counts) or -d (dump them). It talks to valgrind through vgdb, whose pipe
 * is named after HOST on both sides (every server here has HOST=127.0.0.1), and which a process blocked
 * in a system call (a server with no timer of its own, waiting for a request) does not hear: the server
 * is kept awake with a request every 50 ms until the command is through (a few requests next to the
 * thousands counted).
 */
async function control(pid: number, what: '-z' | '-d', baseUrl: string): Promise<void> {
  const child = spawn('callgrind_control', [what, String(pid)], {
    env: { ...process.env, HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let err = ''
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  while (child.exitCode === null && child.signalCode === null) {
    await fetch(`${baseUrl}/readyz`)
      .then(async (r) => await r.arrayBuffer())
      .catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  if ((await exited) !== 0) throw new Error(`callgrind_control ${what} ${pid} failed: ${err}`)
}

function dumps(base: string): string[] {
  const dir = join(base, '..')
  const prefix = base.slice(dir.length + 1)
  return readdirSync(dir)
    .filter((f) => f.startsWith(`${prefix}.`))
    .map((f) => join(dir, f))
}

/** Ask for a dump and wait until its file is written. */
async function dump(pid: number, base: string, baseUrl: string): Promise<string> {
  const before = new Set(dumps(base))
  await control(pid, '-d', baseUrl)
  for (let i = 0; i < 100; i++) {
    const fresh = dumps(base).filter((f) => !before.has(f))
    if (fresh.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      return fresh.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0] ?? ''
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`no callgrind dump for ${base} after 20 s`)
}

/** Instructions of the main thread in a dump: everything under __libc_start_main (V8's helper threads start elsewhere). */
function mainThreadInstructions(dump: string): number {
  const r = spawnSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 })
  const line = r.stdout.split('\n').find((l) => l.includes('__libc_start_main'))
  const n = Number(line?.trim().split(/\s+/)[0]?.replaceAll(',', ''))
  if (!Number.isFinite(n)) throw new Error(`no main thread in ${dump}`)
  return n
}

async function count(
  target: Target,
  outBase: string,
  paths: readonly string[],
  warm: number,
  answers: number,
  warmPaths = paths
): Promise<Counted> {
  const pid = target.pid
  if (pid === undefined) throw new Error(`${target.name} has no pid`)
  await runWrk({ baseUrl: target.baseUrl, connections: 8, paths: warmPaths, amount: warm })
  await control(pid, '-z', target.baseUrl)
  const run = await runWrk({ baseUrl: target.baseUrl, connections: 8, paths, amount: answers })
  const instructions = mainThreadInstructions(await dump(pid, outBase, target.baseUrl))
  // What its timers cost with nothing to answer, per second: valgrind makes every answer take longer, so
  // the same timers fall on fewer answers than they would at full speed; taken out of the count (with the
  // few requests that kept it awake for the commands).
  await control(pid, '-z', target.baseUrl)
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000))
  const idlePerSecond = mainThreadInstructions(await dump(pid, outBase, target.baseUrl)) / IDLE_S
  if ((run.statuses['302'] ?? 0) !== run.requests) throw new Error(`${target.name}: answers not all 302: ${JSON.stringify(run.statuses)}`)
  return { name: target.name, answers: run.requests, instructions, idlePerSecond, seconds: run.durationS }
}

function perAnswer(c: Counted): number {
  return (c.instructions - c.idlePerSecond * c.seconds) / c.answers
}

interface Pair {
  ours: Counted
  floor: Counted
  floorSays: string
}

/** Cached answers: ours, then the floor writing ours' captured answer for each path. */
async function countHot(upstream: UpstreamProcess, wrap: (name: string) => string[], warm: number, answers: number): Promise<Pair> {
  const paths = Array.from({ length: 1000 }, (_, i) => doiPath('hot', i, 1000))
  const ours = await startOurs({ upstream, wrap: wrap('ours-hot'), readyTimeoutMs: 300_000, env: OURS_ENV })
  let answersFile: string
  let first: CapturedAnswer | undefined
  let oursCount: Counted
  try {
    // Asked a few times first, as the runner's same-bytes floor does: later hits get the prepared answer.
    for (let i = 0; i < 3; i++) for (const p of paths) await captureAnswer(ours.baseUrl, p)
    const captured: Array<[string, CapturedAnswer]> = []
    for (const p of paths) captured.push([p, await captureAnswer(ours.baseUrl, p)])
    first = captured[0]?.[1]
    answersFile = writeAnswersFile(captured)
    log(`hot: counting ${ours.name} (${warm} answers to warm up, ${answers} counted)`)
    oursCount = await count(ours, join(DIR, 'ours-hot'), paths, warm, answers)
  } finally {
    await ours.stop()
  }
  const floor = await startFloor({ answersFile, name: 'floor (node:http, same bytes)', wrap: wrap('floor-hot') })
  try {
    log(`hot: counting ${floor.name}`)
    return {
      ours: oursCount,
      floor: await count(floor, join(DIR, 'floor-hot'), paths, warm, answers),
      floorSays: `writes our captured answer for each path (${first === undefined ? '' : describeAnswer(first)})`
    }
  } finally {
    await floor.stop()
  }
}

/** Misses: ours and the miss floor, each asked DOIs neither has seen (the same list for both). */
async function countMiss(upstream: UpstreamProcess, wrap: (name: string) => string[], warm: number, answers: number): Promise<Pair> {
  const tag = Date.now().toString(36)
  const warmPaths = Array.from({ length: warm }, (_, i) => doiPath(`miss.w.${tag}`, i, 1000))
  const paths = Array.from({ length: answers }, (_, i) => doiPath(`miss.m.${tag}`, i, 1000))
  const ours = await startOurs({ upstream, wrap: wrap('ours-miss'), readyTimeoutMs: 300_000, env: OURS_ENV })
  let template: CapturedAnswer & { url: string }
  let oursCount: Counted
  try {
    const answer = await captureAnswer(ours.baseUrl, `/10.1000/miss.template.${tag}`)
    const url = answer.headers.find(([name]) => name.toLowerCase() === 'location')?.[1]
    if (url === undefined) throw new Error(`ours answered a miss with ${answer.status} and no Location`)
    template = { ...answer, url }
    log(`miss: counting ${ours.name} (${warm} misses to warm up, ${answers} counted)`)
    oursCount = await count(ours, join(DIR, 'ours-miss'), paths, warm, answers, warmPaths)
  } finally {
    await ours.stop()
  }
  const floor = await startMissFloor(upstream, writeAnswerFile(template), wrap('floor-miss'))
  try {
    log(`miss: counting ${floor.name}`)
    return {
      ours: oursCount,
      floor: await count(floor, join(DIR, 'floor-miss'), paths, warm, answers, warmPaths),
      floorSays: `asks the upstream with undici and writes our answer to a miss around the record's URL (${describeAnswer(template)})`
    }
  } finally {
    await floor.stop()
  }
}

function log(line: string): void {
  process.stdout.write(`${line}\n`)
}

// Load shedding off: valgrind's slowness is event-loop delay to it, and it would refuse the misses.
const OURS_ENV = { TRUSTED_NETWORKS: '127.0.0.0/8', MAX_EVENT_LOOP_DELAY_MS: '0' }

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  if (!has('valgrind', ['--version']) || !has('callgrind_control', ['-h'])) {
    throw new Error('valgrind is not installed: `apt-get install -y valgrind` (Debian/Ubuntu), then run again')
  }
  ensureBuilt(log)
  rmSync(DIR, { recursive: true, force: true })
  mkdirSync(DIR, { recursive: true })
  const wrap = (name: string): string[] => ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(DIR, name)}`]
  const started = Date.now()
  const upstream = await startUpstream(0)
  const sections: string[] = []
  try {
    for (const scenario of args.scenarios) {
      const warm = args.warm ?? (scenario === 'hot' ? 40_000 : 5_000)
      const answers = args.answers ?? (scenario === 'hot' ? 20_000 : 3_000)
      const pair = scenario === 'hot' ? await countHot(upstream, wrap, warm, answers) : await countMiss(upstream, wrap, warm, answers)
      const row = (c: Counted): string =>
        `| ${c.name} | ${c.answers} | ${(c.instructions / c.answers / 1000).toFixed(1)}k | ${((c.idlePerSecond * c.seconds) / c.answers / 1000).toFixed(1)}k | **${(perAnswer(c) / 1000).toFixed(1)}k** | ${(perAnswer(c) / perAnswer(pair.floor)).toFixed(2)}× |`
      sections.push(
        [
          scenario === 'hot' ? '## A cached answer (hot)' : '## A miss (cold)',
          '',
          `${warm} ${scenario === 'hot' ? 'answers' : 'misses'} to warm up, then ${answers} counted; the floor ${pair.floorSays}.`,
          '',
          '| Server | Answers | Instructions per answer | of which timers | Per answer, timers out | ÷ floor |',
          '|---|--:|--:|--:|--:|--:|',
          row(pair.ours),
          row(pair.floor),
          ''
        ].join('\n')
      )
    }
  } finally {
    await upstream.stop()
  }
  const text = [
    '# Instructions per answer',
    '',
    '<!-- Written by bench/count.ts: `npm run bench:count`. Do not edit by hand. -->',
    'How to read this: [bench/README.md](README.md#counted-not-timed).',
    '',
    `Machine: ${machine()}  `,
    `Date: ${new Date().toISOString()}  `,
    `Code: ${codeVersion()}  `,
    `Method: each server under valgrind's callgrind in front of the fake upstream (latency 0), one at a time, driven by \`wrk -t1 -c8\`; ours on its defaults but TRUSTED_NETWORKS=127.0.0.0/8 and MAX_EVENT_LOOP_DELAY_MS=0 (valgrind's slowness would otherwise shed the misses; a prepared answer never consults it). Counted: the instructions of the main thread (V8's compiler and GC helper threads left out), less what its timers cost in as long with nothing to answer (${IDLE_S} s counted idle). Whole run ${((Date.now() - started) / 1000).toFixed(0)} s.`,
    '',
    ...sections
  ].join('\n')
  writeFileSync(OUT, text)
  log(`${text}\nwrote ${OUT}`)
  rmSync(DIR, { recursive: true, force: true })
}

runBench(main)
