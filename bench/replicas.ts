/**
 * Replicas sharing one Redis (issue 14, behaviour.md §11): `npm run bench:replicas`
 * (`-- --quick` for a shorter run, `-- --replicas 2`). Writes bench/REPLICAS.md.
 *
 * Every server is `node dist/main.js` in its own process, in front of the bench fake upstream (30 ms),
 * with CACHE_FILE empty (cold starts). Redis is the Debian `redis-server` on a free loopback port,
 * no persistence. Measured, in one run:
 *
 * 1. Upstream requests per unique handle, with 1 replica, N replicas without Redis and N replicas with
 *    Redis: (a) every DOI asked of every replica at the same moment (the worst case: a cold DOI
 *    arriving at all replicas together); (b) a Zipf(1.0) mix sent round-robin to the replicas, as a
 *    load balancer does, with the local hit ratio (X-Cache: HIT) and the share answered by Redis.
 * 2. The cost of the shared tier on a local hit: one replica with REDIS_URL and one without, the same
 *    hot set under the same load (req/s, p50, p99, ratios).
 * 3. A local miss that Redis answers, against a local hit and an upstream miss, on the same replica:
 *    each DOI asked once at low concurrency, per-request latency p50/p99.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { Pool } from 'undici'
import { addEnvPair, forEachOption } from './lib/args.js'
import { runLoad, warm, zipfSampler } from './lib/load.js'
import { seededRandom } from './lib/random.js'
import type { LoadResult } from './lib/load.js'
import { ensureBuilt, ROOT, startOurs, startUpstream } from './lib/processes.js'
import { startRedis } from './lib/redis.js'
import type { Target, UpstreamProcess } from './lib/processes.js'
import { machine, runBench, writeReport } from './lib/results.js'

const HELP = `Usage: node --import tsx bench/replicas.ts [options]
  --quick                 shorter runs, fewer DOIs
  --replicas N            replicas sharing Redis (default 3)
  --latency MS            the fake upstream's latency (default 30)
  --server-env KEY=VALUE  extra environment for every replica; repeatable
  --output FILE           where the report goes (default bench/REPLICAS.md; - for stdout only)`

interface Args {
  quick: boolean
  replicas: number
  latencyMs: number
  serverEnv: Record<string, string>
  output: string
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, replicas: 3, latencyMs: 30, serverEnv: {}, output: join(ROOT, 'bench', 'REPLICAS.md') }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--quick') args.quick = true
    else if (arg === '--replicas') args.replicas = Number(value())
    else if (arg === '--latency') args.latencyMs = Number(value())
    else if (arg === '--server-env') addEnvPair(value(), args.serverEnv)
    else if (arg === '--output') args.output = value()
    else return false
    return true
  })
  if (!Number.isInteger(args.replicas) || args.replicas < 2 || args.replicas > 8) throw new Error('--replicas wants 2 to 8')
  return args
}

const log = (line: string): void => {
  process.stdout.write(line + '\n')
}
const PREFIXES = 10

function doi(kind: string, i: number): string {
  return `/10.${7000 + (i % PREFIXES)}/${kind}.${i}`
}

function flushRedis(url: string): void {
  spawnSync('redis-cli', ['-u', url, 'flushall'], { stdio: 'ignore' })
}

// ------------------------------------------------------------------ helpers

async function startMany(n: number, upstream: UpstreamProcess, env: Record<string, string>): Promise<Target[]> {
  return await Promise.all(Array.from({ length: n }, async () => await startOurs({ upstream, env })))
}

async function stopAll(targets: Target[]): Promise<void> {
  await Promise.all(targets.map(async (t) => await t.stop()))
}

async function metricSum(targets: Target[], name: string): Promise<number> {
  let sum = 0
  for (const t of targets) {
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text()
    const m = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+(?:\\.\\d+)?)$`, 'm').exec(text)
    sum += m === null ? 0 : Number(m[1])
  }
  return sum
}

interface Timed {
  p50: number
  p99: number
  count: number
  statuses: Record<string, number>
}

/** Ask each path once over `concurrency` connections, timing every answer. */
async function timedOnce(baseUrl: string, paths: readonly string[], concurrency: number): Promise<Timed> {
  const pool = new Pool(baseUrl, { connections: concurrency })
  const times: number[] = []
  const statuses: Record<string, number> = {}
  let next = 0
  async function worker(): Promise<void> {
    while (next < paths.length) {
      const path = paths[next++] ?? '/'
      const started = performance.now()
      const res = await pool.request({ path, method: 'GET' })
      await res.body.dump()
      times.push(performance.now() - started)
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    await pool.close()
  }
  times.sort((a, b) => a - b)
  const at = (p: number): number => times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? NaN
  return { p50: at(0.5), p99: at(0.99), count: times.length, statuses }
}

/** Every path asked of every target at the same moment, `parallel` paths at a time; answers by status and X-Cache. */
async function everywhereAtOnce(targets: Target[], paths: readonly string[], parallel: number): Promise<Record<string, number>> {
  const pools = targets.map((t) => new Pool(t.baseUrl, { connections: parallel }))
  const seen: Record<string, number> = {}
  let next = 0
  async function worker(): Promise<void> {
    while (next < paths.length) {
      const path = paths[next++] ?? '/'
      await Promise.all(
        pools.map(async (pool) => {
          const res = await pool.request({ path, method: 'GET' })
          await res.body.dump()
          const key = `${res.statusCode}`
          seen[key] = (seen[key] ?? 0) + 1
        })
      )
    }
  }
  try {
    await Promise.all(Array.from({ length: parallel }, worker))
  } finally {
    await Promise.all(pools.map(async (p) => await p.close()))
  }
  return seen
}

/** A Zipf mix sent round-robin over the targets (a load balancer), `connections` per target. */
async function roundRobinZipf(
  targets: Target[],
  paths: readonly string[],
  requests: number,
  connections: number
): Promise<{ results: LoadResult[]; unique: number }> {
  const sample = zipfSampler(paths.length, 1.0, seededRandom(42))
  const sequence = Array.from({ length: requests }, () => sample())
  const unique = new Set(sequence).size
  const perTarget = targets.map((_, k) => sequence.filter((_, i) => i % targets.length === k))
  const results = await Promise.all(
    targets.map(async (t, k) => {
      const mine = perTarget[k] ?? []
      let i = 0
      return await runLoad({
        baseUrl: t.baseUrl,
        connections,
        amount: mine.length,
        nextPath: () => paths[mine[i++ % mine.length] ?? 0] ?? '/',
        countCache: true
      })
    })
  )
  return { results, unique }
}

function f(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '—'
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const started = Date.now()
  const n = args.replicas
  ensureBuilt(log)
  const redis = await startRedis()
  const upstream = await startUpstream(args.latencyMs)
  const base = { LOG_LEVEL: 'warn', ...args.serverEnv }
  const withRedis = { ...base, REDIS_URL: redis.url }
  const out: string[] = []
  const stormDois = args.quick ? 300 : 1_000
  const zipfDois = args.quick ? 5_000 : 20_000
  const zipfRequests = args.quick ? 20_000 : 60_000
  const hotDois = 1_000
  const measureS = args.quick ? 3 : 8
  try {
    // 1a. Every DOI at every replica at once.
    log(`storm: ${stormDois} DOIs, each asked of every replica at the same moment`)
    const storm: Array<{ name: string; upstream: number; statuses: Record<string, number> }> = []
    const stormPaths = Array.from({ length: stormDois }, (_, i) => doi('storm', i))
    const uniqueHandles = stormDois + PREFIXES + 1 // the DOIs, their prefixes, the prefixes' service handle
    for (const [name, count, env] of [
      ['1 replica', 1, base],
      [`${n} replicas, no Redis`, n, base],
      [`${n} replicas, one Redis`, n, withRedis]
    ] as const) {
      flushRedis(redis.url)
      const targets = await startMany(count, upstream, env)
      await upstream.reset()
      const statuses = await everywhereAtOnce(targets, stormPaths, 16)
      storm.push({ name, upstream: await upstream.requests(), statuses })
      log(`  ${name}: ${await upstream.requests()} upstream requests for ${uniqueHandles} handles (${JSON.stringify(statuses)})`)
      await stopAll(targets)
    }

    // 1b. A Zipf mix through a round-robin balancer.
    log(`zipf: ${zipfRequests} requests over ${zipfDois} DOIs, round-robin over the replicas`)
    const zipfPaths = Array.from({ length: zipfDois }, (_, i) => doi('zipf', i))
    const zipf: Array<{
      name: string
      requests: number
      unique: number
      upstream: number
      hit: number
      sharedHit: number
      rps: number
      statuses: string
    }> = []
    for (const [name, count, env] of [
      ['1 replica', 1, base],
      [`${n} replicas, no Redis`, n, base],
      [`${n} replicas, one Redis`, n, withRedis]
    ] as const) {
      flushRedis(redis.url)
      const targets = await startMany(count, upstream, env)
      await upstream.reset()
      const t0 = performance.now()
      const { results, unique } = await roundRobinZipf(targets, zipfPaths, zipfRequests, Math.max(4, Math.floor(32 / count)))
      const seconds = (performance.now() - t0) / 1000
      const requests = results.reduce((a, r) => a + r.requests, 0)
      const hits = results.reduce((a, r) => a + r.cacheHits, 0)
      const answers = results.reduce((a, r) => a + r.cacheAnswers, 0)
      const sharedHit = await metricSum(targets, 'doi_proxy_shared_cache_total{result="hit"}')
      const statuses: Record<string, number> = {}
      for (const r of results) for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v
      const row = {
        name,
        requests,
        unique,
        upstream: await upstream.requests(),
        hit: hits / Math.max(1, answers),
        sharedHit,
        rps: requests / seconds,
        statuses: Object.entries(statuses)
          .map(([k, v]) => `${k}×${v}`)
          .join(' ')
      }
      zipf.push(row)
      log(`  ${name}: upstream ${row.upstream} for ${unique} DOIs; local hit ratio ${f(row.hit, 3)}; Redis answered ${sharedHit}`)
      await stopAll(targets)
    }

    // 2. A local hit, with and without the shared tier configured.
    log(`local hits: ${hotDois} hot DOIs, ${measureS} s each, 32 connections`)
    const hotPaths = Array.from({ length: hotDois }, (_, i) => doi('hot', i))
    const hot: Array<{ name: string; r: LoadResult }> = []
    for (const [name, env] of [
      ['without REDIS_URL', base],
      ['with REDIS_URL', withRedis],
      ['without REDIS_URL (again)', base],
      ['with REDIS_URL (again)', withRedis]
    ] as const) {
      const [target] = await startMany(1, upstream, env)
      if (target === undefined) throw new Error('no server')
      await warm(target.baseUrl, hotPaths)
      const random = seededRandom(7)
      const next = (): string => hotPaths[Math.floor(random() * hotPaths.length)] ?? '/'
      await runLoad({ baseUrl: target.baseUrl, connections: 32, durationS: 1, nextPath: next })
      const r = await runLoad({ baseUrl: target.baseUrl, connections: 32, durationS: measureS, nextPath: next })
      hot.push({ name, r })
      log(`  ${name}: ${f(r.rps, 0)} req/s, p50 ${f(r.p50)} ms, p99 ${f(r.p99)} ms`)
      await target.stop()
    }

    // 3. A miss Redis answers, next to a local hit and an upstream miss, on the same replica.
    const missDois = args.quick ? 1_000 : 3_000
    log(`misses: ${missDois} DOIs each, 8 connections`)
    flushRedis(redis.url)
    const [a, b] = await startMany(2, upstream, withRedis)
    if (a === undefined || b === undefined) throw new Error('no servers')
    const filled = Array.from({ length: missDois }, (_, i) => doi('filled', i))
    const cold = Array.from({ length: missDois }, (_, i) => doi('cold', i))
    await warm(a.baseUrl, filled) // in Redis now (and in a's memory), not in b's
    await warm(
      b.baseUrl,
      [...Array(PREFIXES).keys()].map((i) => doi('warm-prefix', i))
    ) // b knows the prefixes
    const redisAnswered = await timedOnce(b.baseUrl, filled, 8)
    const localHit = await timedOnce(b.baseUrl, filled, 8) // the same DOIs again: in b's memory now
    const upstreamMiss = await timedOnce(b.baseUrl, cold, 8)
    await stopAll([a, b])
    log(
      `  Redis answered: p50 ${f(redisAnswered.p50)} ms p99 ${f(redisAnswered.p99)}; local hit p50 ${f(localHit.p50)} p99 ${f(localHit.p99)}; upstream miss p50 ${f(upstreamMiss.p50)} p99 ${f(upstreamMiss.p99)}`
    )

    // ------------------------------------------------------------------ report
    const seconds = ((Date.now() - started) / 1000).toFixed(0)
    const one = storm[0]?.upstream ?? NaN
    out.push(
      '# Replicas sharing one Redis',
      '',
      '<!-- Written by bench/replicas.ts (`npm run bench:replicas`). Do not edit by hand. -->',
      `Machine: ${machine()}  `,
      `Date: ${new Date().toISOString()}  `,
      `Mode: ${args.quick ? 'quick (`npm run bench:replicas -- --quick`)' : 'full (`npm run bench:replicas`)'}; ${n} replicas; fake upstream latency ${args.latencyMs} ms; ` +
        `servers \`node dist/main.js\` with LOG_LEVEL=warn, CACHE_FILE empty${
          Object.keys(args.serverEnv).length > 0
            ? `, ${Object.entries(args.serverEnv)
                .map(([k, v]) => `${k}=${v}`)
                .join(' ')}`
            : ''
        }, REDIS_URL to a local redis-server ${redis.version} (no persistence); load generator on the same machine; whole run ${seconds} s.`,
      '',
      'Everything runs on the same cores (the replicas, Redis, the fake upstream, the load generator): compare rows of this run, not absolute numbers across machines.',
      '',
      '## Upstream requests per unique handle',
      '',
      `Every one of ${stormDois} cold DOIs asked of every replica at the same moment (16 DOIs at a time). Unique handles: the DOIs, their ${PREFIXES} prefixes and the prefixes' service handle = ${uniqueHandles}. Goal with Redis: ≈ 1.0, as one replica.`,
      '',
      '| Servers | Upstream requests | ÷ unique handles | ÷ one replica | Answers |',
      '|---|--:|--:|--:|---|',
      ...storm.map(
        (s) =>
          `| ${s.name} | ${s.upstream} | ${f(s.upstream / uniqueHandles, 3)} | ${f(s.upstream / one, 2)}× | ${Object.entries(s.statuses)
            .map(([k, v]) => `${k}×${v}`)
            .join(' ')} |`
      ),
      '',
      `A Zipf(1.0) mix of ${zipfRequests} requests over ${zipfDois} DOIs, sent round-robin to the replicas (32 connections in all), from a cold start. *Local hit ratio*: answers with X-Cache: HIT (from the replica's own memory). *Redis answered*: local misses answered by the shared tier. Upstream per unique DOI counts the prefixes' requests too.`,
      '',
      '| Servers | Requests | Unique DOIs | Upstream requests | Upstream ÷ unique DOIs | Local hit ratio | Redis answered | Answered without the upstream | req/s | Answers |',
      '|---|--:|--:|--:|--:|--:|--:|--:|--:|---|',
      ...zipf.map(
        (z) =>
          `| ${z.name} | ${z.requests} | ${z.unique} | ${z.upstream} | ${f(z.upstream / z.unique, 3)} | ${f(z.hit, 3)} | ${z.sharedHit} | ${f(1 - z.upstream / z.requests, 3)} | ${f(z.rps, 0)} | ${z.statuses} |`
      ),
      '',
      '## The cost of the shared tier on a local hit',
      '',
      `One replica, ${hotDois} hot DOIs already in its memory, uniform random, 32 connections, ${measureS} s measured after 1 s of warm-up; with and without REDIS_URL, twice each, alternating. A local hit never touches Redis, so the goal is no difference beyond the run-to-run noise the repeated rows show.`,
      '',
      '| Server | req/s | p50 ms | p99 ms | req/s ÷ first row | p99 ÷ first row |',
      '|---|--:|--:|--:|--:|--:|',
      ...hot.map(
        (h) =>
          `| ${h.name} | ${f(h.r.rps, 0)} | ${f(h.r.p50)} | ${f(h.r.p99)} | ${f(h.r.rps / (hot[0]?.r.rps ?? NaN))}× | ${f(h.r.p99 / (hot[0]?.r.p99 ?? NaN))}× |`
      ),
      '',
      '## A local miss that Redis answers',
      '',
      `Replica A resolved ${missDois} DOIs (so Redis holds them); replica B then asked each once (a local miss Redis answers), then each again (a local hit), then ${missDois} DOIs nobody had asked (an upstream miss, ${args.latencyMs} ms away). 8 connections, every answer timed.`,
      '',
      '| On replica B | Answers | p50 ms | p99 ms | p50 ÷ local hit | p99 ÷ local hit |',
      '|---|--:|--:|--:|--:|--:|',
      ...[
        ['local hit', localHit],
        ['local miss, Redis answered', redisAnswered],
        ['upstream miss', upstreamMiss]
      ].map(([name, t]) => {
        const x = t as Timed
        return `| ${name as string} | ${Object.entries(x.statuses)
          .map(([k, v]) => `${k}×${v}`)
          .join(' ')} | ${f(x.p50)} | ${f(x.p99)} | ${f(x.p50 / localHit.p50)}× | ${f(x.p99 / localHit.p99)}× |`
      }),
      ''
    )
  } finally {
    await upstream.stop()
    await redis.stop()
  }
  const text = out.join('\n')
  writeReport(args.output, text, log)
}

runBench(main)
