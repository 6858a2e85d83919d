/**
 * The benchmark scenarios. Each starts the servers it needs fresh (so "cold" really is cold),
 * drives them with the same request sequence, stops them, and returns one row per server.
 */
import { Pool } from 'undici'
import type { LoadResult } from './load.js'
import { probe, runLoad, seededRandom, warm, zipfSampler } from './load.js'
import type { Target, UpstreamProcess } from './processes.js'
import { NGINX_MISSING, startFloor, startNginx, startOurs } from './processes.js'
import { startBenchAgency } from './bench-agency.js'

export const SCENARIOS = ['hot', 'zipf', 'cold', 'storm', 'not-found', 'api', 'conneg', 'metadata'] as const
export type ScenarioName = typeof SCENARIOS[number]

export interface Settings {
  quick: boolean
  /** Measured seconds per server (after a warm-up run of warmupS). */
  measureS: number
  warmupS: number
  connections: number
  hotDois: number
  zipfDois: number
  /** Zipf warm-up and measured periods are counted in requests, so every server sees exactly the same sequence. */
  zipfWarmupRequests: number
  zipfMeasureRequests: number
  /** Cold requests wait on the upstream; more connections than the upstream pool would measure queueing, not us. */
  coldConnections: number
  stormSize: number
  notFoundDois: number
}

export function settingsFor (quick: boolean): Settings {
  return {
    quick,
    measureS: quick ? 3 : 10,
    warmupS: quick ? 1 : 2,
    connections: 64,
    hotDois: 1_000,
    zipfDois: quick ? 20_000 : 100_000,
    zipfWarmupRequests: quick ? 10_000 : 100_000,
    zipfMeasureRequests: quick ? 10_000 : 100_000,
    coldConnections: 8,
    stormSize: 1_000,
    notFoundDois: 10
  }
}

export interface Row {
  scenario: ScenarioName
  server: string
  result?: LoadResult
  /** Share of answers with X-Cache: HIT during the measured period. */
  hitRatio?: number
  /** Upstream requests per client request during the measured period. */
  upstreamPerRequest?: number
  /** Our latency minus the upstream's configured latency (cold). */
  addedP50?: number
  addedP99?: number
  note?: string
  skipped?: string
}

export interface Context {
  settings: Settings
  upstream: UpstreamProcess
  nginx: boolean
  /** --profile: only our server, started with --cpu-prof. */
  profile: boolean
  serverEnv: Record<string, string>
  log: (line: string) => void
}

type Starter = () => Promise<Target>

function starters (ctx: Context): { ours: Starter, floor: Starter, nginx: Starter } {
  return {
    ours: async () => await startOurs({ upstream: ctx.upstream, profile: ctx.profile, env: ctx.serverEnv }),
    floor: startFloor,
    nginx: async () => await startNginx(ctx.upstream)
  }
}

/** Servers to compare in a scenario: ours, then the baselines that make sense there. */
function lineup (ctx: Context, withNginx: boolean, withFloor = true): Starter[] {
  const s = starters(ctx)
  if (ctx.profile) return [s.ours]
  const out = [s.ours]
  if (withFloor) out.push(s.floor)
  if (withNginx && ctx.nginx) out.push(s.nginx)
  return out
}

async function withTarget<T> (startTarget: Starter, fn: (t: Target) => Promise<T>): Promise<T> {
  const target = await startTarget()
  try {
    return await fn(target)
  } finally {
    await target.stop()
  }
}

function statusNote (result: LoadResult): string {
  const parts = Object.entries(result.statuses).map(([code, n]) => `${code}×${n}`)
  if (result.errors > 0) parts.push(`errors ${result.errors}`)
  if (result.timeouts > 0) parts.push(`timeouts ${result.timeouts}`)
  return parts.join(' ')
}

function uniform (paths: readonly string[], seed: number): () => string {
  const random = seededRandom(seed)
  return () => paths[Math.floor(random() * paths.length)] ?? '/'
}

/** Prefixes spread over several registrants, so prefix-level lookups are realistic too. */
function doiPath (kind: string, i: number, prefixBase: number, prefixes = 20): string {
  return `/10.${prefixBase + (i % prefixes)}/${kind}.${i}`
}

/** Warm a set, then a discarded warm-up run (JIT, connections), then the measured run. */
async function steadyRun (ctx: Context, scenario: ScenarioName, target: Target, paths: string[], headers?: Record<string, string>): Promise<Row> {
  const { settings: s } = ctx
  const warmStatuses = await warm(target.baseUrl, paths, headers === undefined ? {} : { headers })
  await runLoad({ baseUrl: target.baseUrl, connections: s.connections, durationS: s.warmupS, nextPath: uniform(paths, 7), ...(headers === undefined ? {} : { headers }) })
  const before = await ctx.upstream.requests()
  const result = await runLoad({ baseUrl: target.baseUrl, connections: s.connections, durationS: s.measureS, nextPath: uniform(paths, 1), ...(headers === undefined ? {} : { headers }) })
  const upstream = (await ctx.upstream.requests()) - before
  ctx.log(`  ${target.name}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms (${statusNote(result)}; warm-up answers ${JSON.stringify(warmStatuses)})`)
  return { scenario, server: target.name, result, upstreamPerRequest: upstream / Math.max(1, result.requests), note: statusNote(result) }
}

// ------------------------------------------------------------------ hot

async function hot (ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => doiPath('hot', i, 1000))
  const rows: Row[] = []
  for (const start of lineup(ctx, true)) rows.push(await withTarget(start, async (t) => await steadyRun(ctx, 'hot', t, paths)))
  if (!ctx.nginx && !ctx.profile) rows.push({ scenario: 'hot', server: 'nginx proxy_cache', skipped: NGINX_MISSING })
  return rows
}

// ------------------------------------------------------------------ zipf

async function zipf (ctx: Context): Promise<Row[]> {
  const s = ctx.settings
  // A few extra: autocannon may send a little more than `amount` before it stops.
  const listLength = s.zipfWarmupRequests + s.zipfMeasureRequests + 10_000
  const sample = zipfSampler(s.zipfDois, 1.0, seededRandom(42))
  const ranks = new Uint32Array(listLength)
  for (let i = 0; i < listLength; i++) ranks[i] = sample()
  ctx.log(`  zipf: ${s.zipfDois} DOIs, ${listLength} precomputed requests`)
  const rows: Row[] = []
  for (const start of lineup(ctx, true)) {
    rows.push(await withTarget(start, async (t) => {
      let next = 0
      const nextPath = (): string => doiPath('zipf', ranks[next++ % listLength] ?? 0, 2000, 50)
      await runLoad({ baseUrl: t.baseUrl, connections: s.connections, amount: s.zipfWarmupRequests, nextPath })
      // Every server starts measuring at the same point of the sequence.
      next = s.zipfWarmupRequests
      const before = await ctx.upstream.requests()
      const result = await runLoad({ baseUrl: t.baseUrl, connections: s.connections, amount: s.zipfMeasureRequests, nextPath, countCache: true })
      const upstream = (await ctx.upstream.requests()) - before
      const hitRatio = result.cacheAnswers > 0 ? result.cacheHits / result.cacheAnswers : undefined
      ctx.log(`  ${t.name}: ${result.rps.toFixed(0)} req/s, p99 ${result.p99.toFixed(2)} ms, hit ratio ${hitRatio?.toFixed(3) ?? '—'}, upstream/request ${(upstream / Math.max(1, result.requests)).toFixed(3)}`)
      return { scenario: 'zipf', server: t.name, result, upstreamPerRequest: upstream / Math.max(1, result.requests), ...(hitRatio === undefined ? {} : { hitRatio }), note: `${statusNote(result)}; requests ${s.zipfWarmupRequests + 1}–${s.zipfWarmupRequests + s.zipfMeasureRequests} of the sequence` }
    }))
  }
  if (!ctx.nginx && !ctx.profile) rows.push({ scenario: 'zipf', server: 'nginx proxy_cache', skipped: NGINX_MISSING })
  return rows
}

// ------------------------------------------------------------------ cold

async function cold (ctx: Context): Promise<Row[]> {
  const s = ctx.settings
  const latency = ctx.upstream.latencyMs
  const run = Date.now().toString(36)
  const measure = async (name: string, baseUrl: string, pathFor: (n: number) => string): Promise<Row> => {
    let n = 0
    const nextPath = (): string => pathFor(n++)
    await runLoad({ baseUrl, connections: s.coldConnections, durationS: s.warmupS, nextPath })
    const before = await ctx.upstream.requests()
    const result = await runLoad({ baseUrl, connections: s.coldConnections, durationS: s.measureS, nextPath })
    const upstream = (await ctx.upstream.requests()) - before
    const row: Row = {
      scenario: 'cold',
      server: name,
      result,
      upstreamPerRequest: upstream / Math.max(1, result.requests),
      addedP50: result.p50 - latency,
      addedP99: result.p99 - latency,
      note: `${statusNote(result)}; ${s.coldConnections} connections; upstream latency ${latency} ms`
    }
    ctx.log(`  ${name}: ${result.rps.toFixed(0)} req/s, added latency p50 ${row.addedP50?.toFixed(2)} ms, p99 ${row.addedP99?.toFixed(2)} ms`)
    return row
  }
  const rows = [await withTarget(starters(ctx).ours, async (t) => await measure(t.name, t.baseUrl, (n) => `/10.3000/cold.${run}.${n}`))]
  // What the upstream alone takes, asked directly: the part of our latency that is not ours.
  if (!ctx.profile) rows.push(await measure('fake upstream (direct)', ctx.upstream.origin, (n) => `/api/handles/10.3000/direct.${run}.${n}`))
  return rows
}

// ------------------------------------------------------------------ storm

async function storm (ctx: Context): Promise<Row[]> {
  const n = ctx.settings.stormSize
  return [await withTarget(starters(ctx).ours, async (t) => {
    // The prefix's own records (prefix, namespace locations) are fetched first, so the storm counts the DOI alone.
    await warm(t.baseUrl, ['/10.4000/storm-primer'])
    const pool = new Pool(t.baseUrl, { connections: n, pipelining: 1 })
    try {
      // Open every connection before the storm, so the requests really arrive together.
      await Promise.all(Array.from({ length: n }, async () => { await (await pool.request({ path: '/healthz', method: 'GET' })).body.dump() }))
      const path = `/10.4000/storm.${Date.now().toString(36)}`
      const before = await ctx.upstream.requests()
      const started = performance.now()
      const latencies: number[] = []
      const statuses: Record<string, number> = {}
      await Promise.all(Array.from({ length: n }, async () => {
        const t0 = performance.now()
        const res = await pool.request({ path, method: 'GET' })
        await res.body.dump()
        latencies.push(performance.now() - t0)
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
      }))
      const wallMs = performance.now() - started
      const upstream = (await ctx.upstream.requests()) - before
      latencies.sort((a, b) => a - b)
      const pct = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p / 100 * latencies.length))] ?? NaN
      const result: LoadResult = {
        requests: n,
        durationS: wallMs / 1000,
        rps: n / (wallMs / 1000),
        p50: pct(50),
        p90: pct(90),
        p99: pct(99),
        max: pct(100),
        statuses,
        errors: 0,
        timeouts: 0,
        cacheHits: 0,
        cacheAnswers: 0
      }
      const verdict = upstream === 1 ? 'OK: exactly 1 upstream request' : `FAIL: ${upstream} upstream requests (must be 1)`
      ctx.log(`  ${t.name}: ${n} concurrent requests for one cold DOI → ${upstream} upstream request(s), p99 ${result.p99.toFixed(1)} ms (${statusNote(result)})`)
      return { scenario: 'storm', server: t.name, result, upstreamPerRequest: upstream / n, note: `${verdict}; ${statusNote(result)}; ${n} requests in ${wallMs.toFixed(0)} ms` }
    } finally {
      await pool.close()
    }
  })]
}

// ------------------------------------------------------------------ not-found

async function notFound (ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.notFoundDois }, (_, i) => `/10.5000/missing-${i}`)
  const rows: Row[] = []
  for (const start of lineup(ctx, false)) rows.push(await withTarget(start, async (t) => await steadyRun(ctx, 'not-found', t, paths)))
  return rows
}

// ------------------------------------------------------------------ api and conneg: only once the server has them

async function api (ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => `/api/handles${doiPath('api', i, 1000)}`)
  const rows: Row[] = []
  for (const start of lineup(ctx, false)) {
    const row = await withTarget(start, async (t) => {
      if (t.name === 'doi-proxy') {
        const res = await probe(t.baseUrl + (paths[0] ?? '/'))
        const ok = res.status === 200 && (res.headers.get('content-type') ?? '').includes('json') && res.body.includes('"responseCode":1')
        if (!ok) return { scenario: 'api', server: t.name, skipped: `skipped: not available (GET ${paths[0]} answered ${res.status})` } satisfies Row
      }
      return await steadyRun(ctx, 'api', t, paths)
    })
    rows.push(row)
    if (row.skipped !== undefined) {
      ctx.log(`  ${row.skipped}`)
      break
    }
  }
  return rows
}

const CONNEG_ACCEPT = { accept: 'application/x-bibtex' }

async function conneg (ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => doiPath('conneg', i, 1000))
  const rows: Row[] = []
  for (const start of lineup(ctx, false)) {
    const row = await withTarget(start, async (t) => {
      if (t.name === 'doi-proxy') {
        const res = await probe(t.baseUrl + (paths[0] ?? '/'), CONNEG_ACCEPT)
        const location = res.headers.get('location') ?? ''
        if (res.status < 300 || res.status > 308 || !location.startsWith('https://data.example/')) {
          return { scenario: 'conneg', server: t.name, skipped: `skipped: conneg not available (answered ${res.status} ${location})` } satisfies Row
        }
      }
      return await steadyRun(ctx, 'conneg', t, paths, CONNEG_ACCEPT)
    })
    rows.push(row)
    if (row.skipped !== undefined) {
      ctx.log(`  ${row.skipped}`)
      break
    }
  }
  return rows
}

// ------------------------------------------------------------------ metadata (docs/metadata.md)

/** A cached metadata answer (METADATA_MODE=fetch, BibTeX fetched once per DOI from a local fake agency) against the floor. */
async function metadata (ctx: Context): Promise<Row[]> {
  const agency = await startBenchAgency(ctx.settings.hotDois)
  try {
    const env = { ...ctx.serverEnv, LOCAL_STORE_DIR: agency.storeDir, LOCAL_STORE_WATCH: 'false', METADATA_MODE: 'fetch', METADATA_HOSTS: agency.host }
    const ours: Starter = async () => await startOurs({ upstream: ctx.upstream, profile: ctx.profile, env })
    const rows: Row[] = []
    for (const start of ctx.profile ? [ours] : [ours, startFloor]) {
      rows.push(await withTarget(start, async (t) => {
        if (t.name === 'doi-proxy') {
          const res = await probe(t.baseUrl + (agency.paths[0] ?? '/'), CONNEG_ACCEPT)
          if (res.status !== 200 || !res.body.startsWith('@misc')) return { scenario: 'metadata', server: t.name, skipped: `skipped: metadata not answered (${res.status})` } satisfies Row
        }
        const before = agency.requests()
        const row = await steadyRun(ctx, 'metadata', t, agency.paths, CONNEG_ACCEPT)
        return t.name === 'doi-proxy' ? { ...row, note: `${row.note ?? ''}; agency requests ${agency.requests() - before} for ${agency.paths.length} DOIs (records from a local store)` } : row
      }))
    }
    return rows
  } finally {
    await agency.stop()
  }
}

export const RUNNERS: Record<ScenarioName, (ctx: Context) => Promise<Row[]>> = {
  hot,
  zipf,
  cold,
  storm,
  'not-found': notFound,
  api,
  conneg,
  metadata
}
