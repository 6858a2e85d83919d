/**
 * One upstream request per DOI when Redis is slow (issue 25, item 7): `npm run bench:redis-storm`
 * (`-- --runs N`, `-- --before <git-ref>` to run an older build in the same run, alternating). Writes
 * bench/REDIS-STORM.md.
 *
 * Two replicas per build (`node dist/main.js`, REDIS_COMMAND_TIMEOUT_MS 100, the default) share one
 * redis-server in front of the bench fake upstream (200 ms), their prefix already known. Each run sends
 * 500 requests at once (250 to each replica) for 20 DOIs nobody asked before; a run with more than 20
 * upstream requests fetched some DOI twice. After a run with a Redis timeout the next waits 6 s. Two cases:
 * Redis answering normally, and Redis paused for 250 ms (DEBUG SLEEP) as the storm's first upstream
 * request arrives (one replica fetching, the other waiting on Redis), so that commands in flight time out. Reported: runs with duplicate upstream requests, out of N, per build and case.
 */
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { Pool } from 'undici'
import { buildBefore } from './lib/before.js'
import type { BeforeBuild } from './lib/before.js'
import { forEachOption } from './lib/args.js'
import { ensureBuilt, ROOT, startOurs, startUpstream } from './lib/processes.js'
import type { Target, UpstreamProcess } from './lib/processes.js'
import { startRedis } from './lib/redis.js'
import type { RedisProcess } from './lib/redis.js'
import { machine, runBench, writeReport } from './lib/results.js'

const HELP = `Usage: node --import tsx bench/redis-storm.ts [options]
  --runs N          runs per build and case (default 20)
  --requests N      requests sent at once per run (default 500)
  --latency MS      the fake upstream's latency (default 200: while it answers, the other replica waits on Redis)
  --before GIT-REF  also run that commit (built in bench/.tmp), alternating with ours
  --output FILE     where the report goes (default bench/REDIS-STORM.md; - for stdout only)`

interface Args {
  runs: number
  requests: number
  latencyMs: number
  before: string | undefined
  output: string
}

function parseArgs(argv: string[]): Args {
  const args: Args = { runs: 20, requests: 500, latencyMs: 200, before: undefined, output: join(ROOT, 'bench', 'REDIS-STORM.md') }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--runs') args.runs = Number(value())
    else if (arg === '--requests') args.requests = Number(value())
    else if (arg === '--latency') args.latencyMs = Number(value())
    else if (arg === '--before') args.before = value()
    else if (arg === '--output') args.output = value()
    else return false
    return true
  })
  if (!Number.isInteger(args.runs) || args.runs < 1) throw new Error('--runs wants a whole number ≥ 1')
  if (!Number.isInteger(args.requests) || args.requests < 2) throw new Error('--requests wants a whole number ≥ 2')
  return args
}

const log = (line: string): void => {
  process.stdout.write(line + '\n')
}
const DOIS = 20
const UNIQUE_HANDLES = DOIS // the prefix and its service handle are fetched before the runs
// Longer than any pause the shared tier takes after Redis failures (shared-tier.ts).
const SETTLE_MS = 6_000
const PAUSE_S = 0.25

interface Build {
  name: string
  dir?: string
}
interface Case {
  name: string
  pause: boolean
}
interface Run {
  upstream: number
  timeouts: number
  statuses: Record<string, number>
}

async function metricSum(targets: Target[], pattern: RegExp): Promise<number> {
  let sum = 0
  for (const t of targets) {
    const m = pattern.exec(await (await fetch(`${t.baseUrl}/metrics`)).text())
    sum += m === null ? 0 : Number(m[1])
  }
  return sum
}

interface Replicas {
  build: Build
  targets: Target[]
  pools: Pool[]
}

/** Two replicas of a build, started one after the other (a loaded machine starts them slowly), the prefix warm. */
async function startReplicas(build: Build, requests: number, upstream: UpstreamProcess, redis: RedisProcess): Promise<Replicas> {
  // No load shedding: 500 requests at once on a small shared machine lag the event loop past its 1 s
  // default, and the runs measure sharing, not shedding (every lookup must reach the shared tier).
  const env = { LOG_LEVEL: 'warn', REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT_MS: '100', MAX_EVENT_LOOP_DELAY_MS: '0' }
  const targets: Target[] = []
  for (let i = 0; i < 2; i++) {
    targets.push(
      await startOurs({ upstream, env, readyTimeoutMs: 120_000, ...(build.dir === undefined ? {} : { dir: build.dir, name: build.name }) })
    )
  }
  // The prefix and its service handle, fetched once: each run's storm is then its 20 DOIs alone.
  for (const t of targets) await (await fetch(`${t.baseUrl}/10.7300/warm`, { redirect: 'manual' })).arrayBuffer()
  return { build, targets, pools: targets.map((t) => new Pool(t.baseUrl, { connections: Math.ceil(requests / targets.length) })) }
}

async function stopReplicas(r: Replicas): Promise<void> {
  await Promise.all(r.pools.map(async (p) => await p.close()))
  await Promise.all(r.targets.map(async (t) => await t.stop()))
}

const TIMEOUTS = /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m

async function pauseRedisOnceFetching(upstream: UpstreamProcess, client: Redis): Promise<void> {
  const until = performance.now() + 30_000
  while ((await upstream.requests()) === 0 && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 5))
  await client.call('DEBUG', 'SLEEP', String(PAUSE_S)).catch(() => {})
}

async function oneRun(replicas: Replicas, c: Case, run: number, requests: number, upstream: UpstreamProcess, client: Redis): Promise<Run> {
  const { pools, targets } = replicas
  const statuses: Record<string, number> = {}
  const timeoutsBefore = await metricSum(targets, TIMEOUTS)
  await upstream.reset()
  const tag = `${replicas.build.dir === undefined ? 'o' : 'b'}${c.pause ? 'p' : 'n'}${run}`
  const sent = Array.from({ length: requests }, async (_, i) => {
    const pool = pools[i % pools.length]!
    const res = await pool.request({ path: `/10.7300/${tag}-${i % DOIS}`, method: 'GET' })
    await res.body.dump()
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
  })
  // The pause comes while the first replica's fetches are at the upstream and the other replica waits on Redis.
  const pause = c.pause ? pauseRedisOnceFetching(upstream, client) : Promise.resolve()
  await Promise.all([...sent, pause])
  const result = { upstream: await upstream.requests(), timeouts: (await metricSum(targets, TIMEOUTS)) - timeoutsBefore, statuses }
  // A replica may have set Redis aside for a while after timeouts: the next run starts after that.
  if (result.timeouts > 0) await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  return result
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const started = Date.now()
  ensureBuilt(log)
  let before: BeforeBuild | undefined
  const builds: Build[] = [{ name: 'doi-proxy' }]
  const redis = await startRedis()
  const upstream = await startUpstream(args.latencyMs)
  const cases: Case[] = [
    { name: 'Redis answering', pause: false },
    { name: `Redis paused ${PAUSE_S * 1000} ms mid-storm`, pause: true }
  ]
  const results = new Map<string, Run[]>()
  let client: Redis | undefined
  try {
    if (args.before !== undefined) {
      before = buildBefore(args.before, log)
      builds.push({ name: before.name, dir: before.dir })
    }
    // Our own connection for DEBUG SLEEP: open before the storm, so the pause is sent at once.
    client = new Redis(redis.url)
    const running = []
    for (const build of builds) running.push(await startReplicas(build, args.requests, upstream, redis))
    try {
      for (let run = 0; run < args.runs; run++) {
        for (const c of cases) {
          for (const replicas of running) {
            const r = await oneRun(replicas, c, run, args.requests, upstream, client)
            const key = `${replicas.build.name}\u0000${c.name}`
            results.set(key, [...(results.get(key) ?? []), r])
            log(
              `run ${run + 1}/${args.runs} ${replicas.build.name}, ${c.name}: ${r.upstream} upstream requests for ${UNIQUE_HANDLES} DOIs, ${r.timeouts} Redis timeouts, ${JSON.stringify(r.statuses)}`
            )
          }
        }
      }
    } finally {
      for (const r of running) await stopReplicas(r)
    }
  } finally {
    client?.disconnect()
    before?.remove()
    await upstream.stop()
    await redis.stop()
  }

  const rows = [...results].map(([key, runs]) => {
    const [build = '', c = ''] = key.split('\u0000')
    const dup = runs.filter((r) => r.upstream > UNIQUE_HANDLES)
    const extra = runs.reduce((a, r) => a + Math.max(0, r.upstream - UNIQUE_HANDLES), 0)
    const withTimeouts = runs.filter((r) => r.timeouts > 0).length
    const statuses: Record<string, number> = {}
    for (const r of runs) for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v
    const worst = Math.max(...runs.map((r) => r.upstream))
    return `| ${build} | ${c} | ${dup.length} of ${runs.length} | ${extra} | ${worst} | ${withTimeouts} of ${runs.length} | ${Object.entries(
      statuses
    )
      .map(([k, v]) => `${k}×${v}`)
      .join(' ')} |`
  })
  const text = [
    '# One upstream request per DOI when Redis is slow',
    '',
    '<!-- Written by bench/redis-storm.ts (`npm run bench:redis-storm`). Do not edit by hand. -->',
    `Machine: ${machine()}  `,
    `Date: ${new Date().toISOString()}  `,
    `Two replicas per build (\`node dist/main.js\`, LOG_LEVEL=warn, REDIS_COMMAND_TIMEOUT_MS=100, MAX_EVENT_LOOP_DELAY_MS=0 so that no lookup is shed, CACHE_FILE empty) share a redis-server ${redis.version} on loopback and ` +
      `the bench fake upstream (${args.latencyMs} ms), their prefix already known. Each run sends ${args.requests} requests at once (half to each replica) for ${DOIS} DOIs nobody asked before: ` +
      `a run with more than ${UNIQUE_HANDLES} upstream requests fetched a DOI twice; after a run with a Redis timeout the next waits ${SETTLE_MS / 1000} s. "Redis paused": DEBUG SLEEP ${PAUSE_S} s sent as the first upstream request of the storm arrives (one replica fetching, the other waiting on Redis), ` +
      `so the commands in flight time out. ${args.runs} runs per build and case, builds alternating; whole run ${((Date.now() - started) / 1000).toFixed(0)} s. ` +
      "Everything (replicas, Redis, upstream, load) shares the machine's cores, which other work was using too: compare rows of this run.",
    '',
    '| Build | Case | Runs with duplicate upstream requests | Extra upstream requests, all runs | Most upstream requests in a run | Runs with a Redis timeout | Answers |',
    '|---|---|--:|--:|--:|--:|---|',
    ...rows,
    ''
  ].join('\n')
  writeReport(args.output, text, log)
}

runBench(main)
