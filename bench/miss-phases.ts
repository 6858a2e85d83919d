/**
 * Where a miss's milliseconds go: one request at a time (nothing queues, nothing else runs), each for a
 * DOI never asked before, through our server built in this process in front of the bench fake upstream
 * (its own process). Node's diagnostics channels time four phases of each miss:
 *
 *   request   the request arrives (http.server.request.start) → our upstream request is created
 *             (undici:request:create): routing, the handle's rules, admission, the fair queue, the breakers
 *   upstream  → the upstream's headers arrive: the network and the upstream itself
 *   body      → its body has arrived: reading it
 *   answer    → our answer is written (http.server.response.finish): JSON, the record's checks, the
 *             cache entry, 10320/loc, the redirect page
 *
 * Run with the upstream's latency 0 (our own work alone, everything hot) and 30 ms (as in the cold scenario).
 *
 *   npm run bench:miss                 200 misses at each latency
 *   npm run bench:miss -- --misses 1000
 */
import * as dc from 'node:diagnostics_channel'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import type { Config } from '../src/config/schema.js'
import { forEachOption } from './lib/args.js'
import { percentile } from './lib/load.js'
import { startUpstream } from './lib/processes.js'
import { machine, runBench } from './lib/results.js'

const HELP = `Usage: npm run bench:miss [-- options]
  --misses N   misses measured at each upstream latency (default 200)`

const PHASES = ['request', 'upstream', 'body', 'answer'] as const
type Phase = (typeof PHASES)[number]

async function measure(latencyMs: number, misses: number): Promise<string[]> {
  const upstream = await startUpstream(latencyMs)
  const config: Config = {
    ...buildConfig(undefined, {}),
    upstreamUrl: upstream.apiUrl,
    localStoreDir: undefined,
    cacheFile: undefined,
    trustedNetworks: ['127.0.0.0/8'],
    maxEventLoopDelayMs: 0
  }
  const app = await buildApp(config)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const base = `http://127.0.0.1:${port}`
  const phases: Record<Phase, number[]> = { request: [], upstream: [], body: [], answer: [] }
  const total: number[] = []
  let on = false
  let t0 = 0
  let t1 = 0
  let t2 = 0
  let t3 = 0
  // Only the measured DOI's upstream request counts (a prefix's record is fetched once, during the warm-up).
  const ours = (message: unknown): boolean => on && String((message as { request: { path: string } }).request.path).includes('/miss.')
  const subscriptions: Array<[string, (message: unknown) => void]> = [
    [
      'http.server.request.start',
      () => {
        if (on) t0 = performance.now()
      }
    ],
    [
      'undici:request:create',
      (m) => {
        if (ours(m)) t1 = performance.now()
      }
    ],
    [
      'undici:request:headers',
      (m) => {
        if (ours(m)) t2 = performance.now()
      }
    ],
    [
      'undici:request:trailers',
      (m) => {
        if (ours(m)) t3 = performance.now()
      }
    ],
    [
      'http.server.response.finish',
      () => {
        if (!on || t1 === 0) return
        const t4 = performance.now()
        phases.request.push(t1 - t0)
        phases.upstream.push(t2 - t1)
        phases.body.push(t3 - t2)
        phases.answer.push(t4 - t3)
        total.push(t4 - t0)
        t1 = 0
      }
    ]
  ]
  for (const [name, fn] of subscriptions) dc.subscribe(name, fn)
  const ask = async (path: string): Promise<void> => {
    const res = await fetch(`${base}${path}`, { redirect: 'manual' })
    await res.arrayBuffer()
    if (res.status !== 302) throw new Error(`${path} answered ${res.status}`)
  }
  try {
    // Warm-up: the JIT, the connections, and the 50 prefixes' own records.
    for (let i = 0; i < 200; i++) await ask(`/10.${1000 + (i % 50)}/warm.${i}`)
    on = true
    for (let i = 0; i < misses; i++) await ask(`/10.${1000 + (i % 50)}/miss.${i}`)
    on = false
    const ms = (xs: readonly number[]): string => `${percentile(xs, 50).toFixed(2)} / ${percentile(xs, 99).toFixed(2)}`
    return [
      ...PHASES.map((p) => `| ${latencyMs} ms | ${p} | ${ms(phases[p])} |`),
      `| ${latencyMs} ms | **server total** | ${ms(total)} |`,
      `| ${latencyMs} ms | our own (total − upstream − body) | ${ms(total.map((t, i) => t - (phases.upstream[i] ?? 0) - (phases.body[i] ?? 0)))} |`
    ]
  } finally {
    for (const [name, fn] of subscriptions) dc.unsubscribe(name, fn)
    await app.close()
    await upstream.stop()
  }
}

async function main(): Promise<void> {
  let misses = 200
  forEachOption(process.argv.slice(2), HELP, (arg, value) => {
    if (arg !== '--misses') return false
    misses = Number(value())
    if (!Number.isInteger(misses) || misses < 1) throw new Error(`--misses must be a whole number above 0, not ${misses}`)
    return true
  })
  const lines = ['| Upstream latency | Phase | p50 / p99 ms |', '|---|---|--:|']
  for (const latency of [0, 30]) lines.push(...(await measure(latency, misses)))
  process.stdout.write(
    [
      `Machine: ${machine()}`,
      `${misses} misses at each latency, one at a time, each a DOI never asked before (bench/miss-phases.ts)`,
      '',
      ...lines,
      ''
    ].join('\n')
  )
}

runBench(main)
