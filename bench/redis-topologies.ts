/**
 * Redis topologies (issue 27): `npm run bench:redis` (`-- --quick` for a shorter run, `-- --records N`).
 * Writes bench/REDIS.md.
 *
 * 1. Requests per second through the shared tier: one `node dist/main.js` (WORKERS=1) whose own cache
 *    holds one record (CACHE_MAX_ENTRIES=1), so nearly every request is a local miss that Redis answers,
 *    in front of (a) one redis-server and (b) a three-master Redis Cluster, rounds alternating a, b, a, b…
 *    on the same DOIs; and the same server with no Redis answering from its own cache (the ceiling).
 * 2. Redis memory per cached record: N records as the shared tier writes them (the bench upstream's
 *    realistic records, encodeEntry, a TTL), INFO memory used_memory after − before, ÷ N, in one server
 *    and summed over the cluster's masters.
 * Every server: Debian's redis-server on loopback, no persistence.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Cluster } from 'ioredis'
import type { Redis } from 'ioredis'
import { cacheKey } from '../src/handle/name.js'
import { encodeEntry } from '../src/resolve/cache/entry-codec.js'
import { TestCluster, TestRedis } from '../test/support/redis.js'
import { answerFor } from './fake-upstream.js'
import { forEachOption } from './lib/args.js'
import { runLoad, warm } from './lib/load.js'
import { seededRandom } from './lib/random.js'
import type { LoadResult } from './lib/load.js'
import { ensureBuilt, ROOT, startOurs, startUpstream } from './lib/processes.js'
import type { Target } from './lib/processes.js'
import { machine } from './lib/results.js'

const HELP = `Usage: node --import tsx bench/redis-topologies.ts [options]
  --quick          shorter rounds, 100k records for the memory figure
  --records N      records written for the memory figure (default 1000000)
  --output FILE    where the report goes (default bench/REDIS.md; - for stdout only)`

interface Args {
  quick: boolean
  records: number
  output: string
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, records: 1_000_000, output: join(ROOT, 'bench', 'REDIS.md') }
  let records: number | undefined
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--quick') args.quick = true
    else if (arg === '--records') records = Number(value())
    else if (arg === '--output') args.output = value()
    else return false
    return true
  })
  args.records = records ?? (args.quick ? 100_000 : 1_000_000)
  if (!Number.isInteger(args.records) || args.records < 1000 || args.records > 10_000_000) {
    throw new Error('--records wants 1000 to 10000000')
  }
  return args
}

const log = (line: string): void => {
  process.stdout.write(line + '\n')
}
const DOIS = 2_000
const path = (i: number): string => `/10.${7000 + (i % 10)}/redis.${i}`

async function metricValue(target: Target, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${target.baseUrl}/metrics`)).text()
  let sum = 0
  for (const m of text.matchAll(pattern)) sum += Number(m[1])
  return sum
}

async function usedMemory(clients: Redis[]): Promise<number> {
  let sum = 0
  for (const client of clients) sum += Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1] ?? NaN)
  return sum
}

/** N records as the shared tier writes them: the key, encodeEntry's text, a day and a half of TTL. */
async function fillRecords(write: (key: string, value: string) => Promise<unknown>, n: number): Promise<void> {
  const now = Date.now()
  const batch: Array<Promise<unknown>> = []
  for (let i = 0; i < n; i++) {
    const handle = `10.${7000 + (i % 10)}/mem.${i}`
    const answer = answerFor(handle)
    if (answer.status !== 200) throw new Error(`the bench upstream has no record for ${handle}`)
    const entry = { kind: 'found' as const, values: answer.body.values as never, storedAt: now, freshUntil: now + 86_400_000 }
    batch.push(write(`doi-proxy:v1:r:${cacheKey(handle)}`, encodeEntry(entry)))
    if (batch.length === 2000) await Promise.all(batch.splice(0))
  }
  await Promise.all(batch)
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const started = Date.now()
  ensureBuilt(log)
  const upstream = await startUpstream(30)
  const single = await TestRedis.start()
  const cluster = await TestCluster.start()
  const targets: Target[] = []
  try {
    const common = {
      LOG_LEVEL: 'warn',
      WORKERS: '1',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      REDIS_COMMAND_TIMEOUT_MS: '1000',
      RATE_LIMIT_MAX: '100000000'
    }
    const throughRedis = await startOurs({ upstream, name: 'one Redis', env: { ...common, CACHE_MAX_ENTRIES: '1', REDIS_URL: single.url } })
    targets.push(throughRedis)
    const throughCluster = await startOurs({
      upstream,
      name: '3-master cluster',
      env: { ...common, CACHE_MAX_ENTRIES: '1', REDIS_CLUSTER_NODES: cluster.nodeList }
    })
    targets.push(throughCluster)
    const local = await startOurs({ upstream, name: 'no Redis, local cache', env: { ...common } })
    targets.push(local)

    const paths = Array.from({ length: DOIS }, (_, i) => path(i))
    log(`filling: ${DOIS} DOIs through each (upstream 30 ms)`)
    for (const target of targets) await warm(target.baseUrl, paths, { concurrency: 64 })

    const rounds = args.quick ? 2 : 4
    const seconds = args.quick ? 3 : 8
    const results = new Map<string, LoadResult[]>()
    for (let round = 0; round < rounds; round++) {
      for (const target of targets) {
        const random = seededRandom(round + 1)
        const next = (): string => paths[Math.floor(random() * DOIS)] ?? '/'
        await runLoad({ baseUrl: target.baseUrl, connections: 32, durationS: 1, nextPath: next })
        const r = await runLoad({ baseUrl: target.baseUrl, connections: 32, durationS: seconds, nextPath: next, countCache: true })
        results.set(target.name, [...(results.get(target.name) ?? []), r])
        log(
          `  round ${round + 1} ${target.name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, local hits ${((100 * r.cacheHits) / Math.max(1, r.cacheAnswers)).toFixed(1)} %, statuses ${JSON.stringify(r.statuses)}`
        )
      }
    }
    const shared = await Promise.all(
      [throughRedis, throughCluster].map(async (t) => ({
        hits: await metricValue(t, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/gm),
        errors: await metricValue(t, /^doi_proxy_shared_cache_errors_total\{[^}]*\} (\d+)/gm)
      }))
    )

    // Memory: a fresh server and a flushed cluster.
    log(`memory: writing ${args.records} records`)
    const memory: Array<{ name: string; bytes: number }> = []
    {
      const client = single.client()
      await client.flushall()
      const before = await usedMemory([client])
      await fillRecords(async (key, value) => await client.set(key, value, 'PX', 129_600_000), args.records)
      memory.push({ name: 'one Redis', bytes: ((await usedMemory([client])) - before) / args.records })
      log(`  one Redis: ${memory[0]?.bytes.toFixed(0)} B/record, dbsize ${await client.dbsize()}`)
      await client.flushall()
      client.disconnect()
    }
    {
      const masters = cluster.masters.map((m) => m.client())
      for (const m of masters) await m.flushall()
      const before = await usedMemory(masters)
      const client = new Cluster(
        cluster.masters.map((m) => ({ host: '127.0.0.1', port: m.port })),
        { enableAutoPipelining: true }
      )
      await fillRecords(async (key, value) => await client.set(key, value, 'PX', 129_600_000), args.records)
      memory.push({ name: '3-master cluster (sum over masters)', bytes: ((await usedMemory(masters)) - before) / args.records })
      log(`  cluster: ${memory[1]?.bytes.toFixed(0)} B/record`)
      client.disconnect()
      for (const m of masters) m.disconnect()
    }

    const row = (name: string): { rps: number; p50: number; p99: number } => {
      const rs = results.get(name) ?? []
      const sorted = (xs: number[]): number => {
        xs.sort((a, b) => a - b)
        const mid = xs.length / 2
        return Number.isInteger(mid) ? ((xs[mid - 1] ?? NaN) + (xs[mid] ?? NaN)) / 2 : (xs[Math.floor(mid)] ?? NaN)
      }
      return { rps: sorted(rs.map((r) => r.rps)), p50: sorted(rs.map((r) => r.p50)), p99: sorted(rs.map((r) => r.p99)) }
    }
    const base = row('one Redis')
    const lines = [
      '# Redis topologies (issue 27)',
      '',
      `\`npm run bench:redis${args.quick ? ' -- --quick' : ''}\`, ${new Date().toISOString().slice(0, 10)}. ${machine()}`,
      `The machine was busy with other work during the run (2 cores shared): compare the ratios, measured in the same run, not the absolute figures. Load generator, servers and every redis-server (${cluster.masters.length + 1} processes) on the same machine; ${rounds} alternating rounds of ${seconds} s, 32 connections, uniform over ${DOIS} DOIs; the median of the rounds is shown. Whole run ${Math.round((Date.now() - started) / 1000)} s.`,
      '',
      '## Requests per second through the shared tier',
      '',
      "One server (WORKERS=1) whose own cache holds one record, so nearly every request is a local miss that Redis answers (a GETRANGE, plus the prefix's record), against the same server answering from its own cache.",
      '',
      '| through | req/s | p50 ms | p99 ms | req/s vs one Redis |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...['one Redis', '3-master cluster', 'no Redis, local cache'].map((name) => {
        const r = row(name)
        return `| ${name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${(r.rps / base.rps).toFixed(2)}× |`
      }),
      '',
      `Shared-tier hits during the run: ${shared[0]?.hits} through one Redis, ${shared[1]?.hits} through the cluster; shared-tier errors: ${shared[0]?.errors} and ${shared[1]?.errors}.`,
      '',
      '## Redis memory per cached record',
      '',
      `${args.records.toLocaleString('en')} records as the shared tier writes them (the bench upstream's records: 2–4 values, encodeEntry's text, a TTL), INFO memory \`used_memory\` after − before, ÷ records.`,
      '',
      '| where | bytes per record |',
      '| --- | ---: |',
      ...memory.map((m) => `| ${m.name} | ${m.bytes.toFixed(0)} |`),
      ''
    ]
    const report = lines.join('\n')
    if (args.output !== '-') writeFileSync(args.output, report)
    log(report)
  } finally {
    for (const t of targets) await t.stop()
    await upstream.stop()
    await single.close()
    await cluster.close()
  }
}

await main()
