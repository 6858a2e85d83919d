/**
 * Load generation: autocannon (in this process) with a path chosen per request, exact latency
 * percentiles (autocannon's own histogram has 1 ms resolution, too coarse next to the floor),
 * a Zipf sampler (fed by ./random.ts), and a plain-HTTP warmer.
 */
import autocannon from 'autocannon'
import type { RequestSpec, Result } from 'autocannon'
import { Pool } from 'undici'

/** The p-th percentile (0–100) of `values`, nearest rank (the value at floor(p% of n)); NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  return nearestRank(Float64Array.from(values).sort(), p)
}

/** The median, the 95th percentile and the largest of `values`, as `percentile` reads them. */
export function medianP95Max(values: readonly number[]): { p50: number; p95: number; max: number } {
  const sorted = Float64Array.from(values).sort()
  return { p50: nearestRank(sorted, 50), p95: nearestRank(sorted, 95), max: nearestRank(sorted, 100) }
}

function nearestRank(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN)
}

/** Zipf(s) over ranks 0..n-1 (rank 0 most popular), sampled by binary search in the CDF. */
export function zipfSampler(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n)
  let sum = 0
  for (let k = 0; k < n; k++) {
    sum += 1 / Math.pow(k + 1, s)
    cdf[k] = sum
  }
  for (let k = 0; k < n; k++) cdf[k] = (cdf[k] ?? 0) / sum
  return () => {
    const u = random()
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((cdf[mid] ?? 1) < u) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

export interface LoadOptions {
  baseUrl: string
  connections: number
  /** Run for this long, or… */
  durationS?: number
  /** …until this many answers have come back. */
  amount?: number
  /** Called once per request: the path to ask for. */
  nextPath: () => string
  headers?: Record<string, string>
  /** Count X-Cache: HIT answers (costs a little load-generator time; used where hit ratio matters). */
  countCache?: boolean
  /** Also record every latency here, to take percentiles over several runs (see mergeLoads). */
  samples?: Samples
}

export interface LoadResult {
  requests: number
  durationS: number
  rps: number
  p50: number
  p90: number
  p99: number
  max: number
  /** Answers by status code. */
  statuses: Record<string, number>
  errors: number
  timeouts: number
  cacheHits: number
  cacheAnswers: number
}

/**
 * Latencies of every answer, in ms with sub-ms precision. wrk gives quantiles rather than every
 * latency: each is pushed with the share of answers it stands for (pushWeighted), and percentiles are
 * then taken over the weights, so rounds of wrk runs merge like rounds of single latencies.
 */
export class Samples {
  private data = new Float64Array(1 << 16)
  length = 0
  private weighted: Array<[number, number]> = []
  /** Answers represented: `length` plus the weights pushed. */
  get count(): number {
    return this.length + this.weighted.reduce((n, [, w]) => n + w, 0)
  }

  push(v: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2)
      bigger.set(this.data)
      this.data = bigger
    }
    this.data[this.length++] = v
  }

  pushWeighted(v: number, weight: number): void {
    this.weighted.push([v, weight])
  }

  percentiles(ps: number[]): number[] {
    if (this.weighted.length === 0) {
      const sorted = this.data.slice(0, this.length).sort()
      return ps.map((p) => nearestRank(sorted, p))
    }
    const all: Array<[number, number]> = [...this.weighted]
    for (let i = 0; i < this.length; i++) all.push([this.data[i] ?? 0, 1])
    all.sort((a, b) => a[0] - b[0])
    const total = all.reduce((n, [, w]) => n + w, 0)
    return ps.map((p) => {
      const rank = (p / 100) * total
      let seen = 0
      for (const [v, w] of all) {
        seen += w
        if (seen > rank) return v
      }
      return all[all.length - 1]?.[0] ?? NaN
    })
  }
}

/** One autocannon run. */
export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const samples = new Samples()
  let cacheHits = 0
  let cacheAnswers = 0
  const onResponse =
    opts.countCache === true
      ? (_status: number, _body: string, _ctx: Record<string, unknown>, headers: Record<string, string | string[]>) => {
          const x = headers['x-cache'] ?? headers['X-Cache']
          if (x === undefined) return
          cacheAnswers++
          if (String(x).toUpperCase() === 'HIT') cacheHits++
        }
      : undefined
  const request: RequestSpec = {
    method: 'GET',
    ...(opts.headers === undefined ? {} : { headers: opts.headers }),
    setupRequest: (req) => {
      req.path = opts.nextPath()
      return req
    },
    ...(onResponse === undefined ? {} : { onResponse })
  }
  const started = performance.now()
  const result = await new Promise<Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: opts.baseUrl,
        connections: opts.connections,
        ...(opts.amount === undefined ? { duration: opts.durationS ?? 10 } : { amount: opts.amount }),
        timeout: 10,
        requests: [request]
      },
      (err, res) => (err === null ? resolve(res) : reject(err))
    )
    const shared = opts.samples
    instance.on(
      'response',
      shared === undefined
        ? (_client: unknown, _status: number, _bytes: number, responseTime: number) => samples.push(responseTime)
        : (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
            samples.push(responseTime)
            shared.push(responseTime)
          }
    )
  })
  // autocannon's own duration is whole seconds: too coarse for a run of a fixed number of requests.
  const elapsedS = (performance.now() - started) / 1000
  const [p50 = NaN, p90 = NaN, p99 = NaN, max = NaN] = samples.percentiles([50, 90, 99, 100])
  const statuses: Record<string, number> = {}
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = count
  return {
    requests: samples.length,
    durationS: elapsedS,
    rps: samples.length / elapsedS,
    p50,
    p90,
    p99,
    max,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    cacheHits,
    cacheAnswers
  }
}

/**
 * Several runs against one server as one result: requests and time summed (so req/s is total
 * requests ÷ total time), percentiles over `samples`, which holds the latencies of every run
 * (each given `samples` as LoadOptions.samples).
 */
export function mergeLoads(parts: readonly LoadResult[], samples: Samples): LoadResult {
  const requests = parts.reduce((n, p) => n + p.requests, 0)
  const durationS = parts.reduce((n, p) => n + p.durationS, 0)
  const statuses: Record<string, number> = {}
  for (const p of parts) for (const [code, n] of Object.entries(p.statuses)) statuses[code] = (statuses[code] ?? 0) + n
  const sum = (pick: (p: LoadResult) => number): number => parts.reduce((n, p) => n + pick(p), 0)
  const [p50 = NaN, p90 = NaN, p99 = NaN, max = NaN] = samples.percentiles([50, 90, 99, 100])
  return {
    requests,
    durationS,
    rps: durationS > 0 ? requests / durationS : NaN,
    p50,
    p90,
    p99,
    max,
    statuses,
    errors: sum((p) => p.errors),
    timeouts: sum((p) => p.timeouts),
    cacheHits: sum((p) => p.cacheHits),
    cacheAnswers: sum((p) => p.cacheAnswers)
  }
}

/** Ask for every path once (concurrency-limited), e.g. to fill a cache; returns answers by status. */
export async function warm(
  baseUrl: string,
  paths: readonly string[],
  opts: { concurrency?: number; headers?: Record<string, string> } = {}
): Promise<Record<string, number>> {
  const concurrency = opts.concurrency ?? 32
  const pool = new Pool(baseUrl, { connections: concurrency })
  const statuses: Record<string, number> = {}
  let next = 0
  async function worker(): Promise<void> {
    while (next < paths.length) {
      const path = paths[next++] ?? '/'
      const res = await pool.request({ path, method: 'GET', ...(opts.headers === undefined ? {} : { headers: opts.headers }) })
      await res.body.dump()
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    await pool.close()
  }
  return statuses
}

/** One request, for probing what a server supports. */
export async function probe(
  url: string,
  headers: Record<string, string> = {}
): Promise<{ status: number; headers: Headers; body: string }> {
  const res = await fetch(url, { redirect: 'manual', headers })
  return { status: res.status, headers: res.headers, body: await res.text() }
}
