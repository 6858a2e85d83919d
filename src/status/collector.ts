/**
 * What the status page shows (issue 15), kept in fixed-size rings in memory. Nothing here runs per
 * request: a timer (unref'd) reads our Prometheus counters (src/observe/metrics.ts) once a second and adds what changed to
 * the current slot. Requests are read from doi_proxy_answers_total, the counter /metrics shows: the page
 * and the metrics count the same answers by construction. One slot is `stepMs` long; `slots` of them are kept (360 × 10 s: the last hour).
 *
 * No reader data is kept: no address, no header, no DOI. Upstream errors are kept by code and time.
 */
import { readFileSync } from 'node:fs'
import { openAccessProviderInForce } from '../config/open-access.js'
import type { Config } from '../config/schema.js'
import { ANSWERS } from '../observe/metrics.js'
import type { AnswerOutcome, Metrics } from '../observe/metrics.js'
import { REASON_WORDS } from '../resolve/upstream/reachability.js'
import type { UnreachableReason, UpstreamState } from '../resolve/upstream/reachability.js'
import { ItemRing, NumberRing, SlotRings } from './rings.js'

/** Every answer counts under one of these (doi_proxy_answers_total's outcome label). */
export const OUTCOMES = ANSWERS
export type Outcome = AnswerOutcome

const SERIES = [...OUTCOMES, 'lookup_hit', 'lookups', 'upstream', 'upstream_errors', 'breaker', 'prefix_openings', 'retries'] as const
type SeriesName = typeof SERIES[number]

/** The limits a request can meet, by the reason label of doi_proxy_refusals_total. */
const REFUSAL_REASONS = ['load_shed', 'rate_limit', 'auth_rate_limit', 'client_share', 'queue_full'] as const

export interface LimitRow {
  reason: string
  limit: string
  setting: string
  refusedLastHour: number
  refusedSinceStart: number
}

export interface CountRow {
  labels: Record<string, string>
  lastHour: number
  sinceStart: number
}

export interface UpstreamErrorEntry {
  /** First and last time (ISO) this code was seen in this run of errors. */
  from: string
  to: string
  code: string
  count: number
}

export type BreakerName = 'closed' | 'half-open' | 'open'

export interface StatusSnapshot {
  version: string
  /**
   * Under node:cluster, the worker whose figures these are (of `of` workers): each counts its own answers,
   * cache and breakers, and another request may reach another worker. Null with one process.
   */
  worker: { index: number, of: number } | null
  startedAt: string
  at: string
  uptimeSeconds: number
  /** Length of one point of every series, and the time its first point starts. */
  stepSeconds: number
  seriesStart: string
  requests: {
    /** Per second, one point per step: every answer, by where its record came from or why there was none. */
    perSecond: Record<Outcome, number[]>
    lastHour: Record<Outcome, number>
    /** doi_proxy_answers_total, as /metrics shows it. */
    sinceStart: Record<Outcome, number>
  }
  cache: {
    entries: number
    maxEntries: number
    bytes: number
    maxBytes: number
    /** Cache lookups that hit over all cache lookups (hit, miss, shared, stale, bypass); null before any lookup. */
    hitRatioLastHour: number | null
  }
  upstream: {
    /** Milliseconds per step; null where no upstream request ended. */
    p50Ms: Array<number | null>
    p99Ms: Array<number | null>
    /** Share of upstream requests that failed, per step. */
    errorRate: Array<number | null>
    lastHour: { requests: number, errors: number, retries: number, p50Ms: number | null, p99Ms: number | null }
    inFlight: number
    queued: number
    /** Whether the upstream answers, as the last lookups (or the start-up probe) found it. */
    reachability: Reachable
  }
  breaker: {
    state: BreakerName
    /** 0 closed, 1 half-open, 2 open: the worst state seen in each step. */
    perStep: number[]
    /** When it opened, newest first (at most 10). */
    openings: string[]
    prefixOpeningsLastHour: number
  }
  limits: LimitRow[]
  localServices: {
    configured: Array<{ id: string, name: string }>
    diversions: CountRow[]
    bypasses: CountRow[]
    loopGuard: { lastHour: number, sinceStart: number }
  }
  /** Link-out chains: each step's count (docs/institutional.md). */
  linkout: CountRow[]
  /** The open-access source; null without OA_PROVIDER. dailyLimit null: a file, no limit. */
  openAccess: { provider: string, callsToday: number, dailyLimit: number | null, lookups: CountRow[] } | null
  /** Newest first, at most 20. */
  upstreamErrors: UpstreamErrorEntry[]
}

/** The upstream's state for operators: `offline` when there is none (OFFLINE). */
export type Reachable =
  | { state: 'offline' | 'unknown' }
  | { state: 'answers', since: string }
  | { state: 'unreachable', reason: UnreachableReason, why: string, detail: string, since: string }

export interface CollectorOptions {
  metrics: Metrics
  config: Config
  upstreamState?: () => UpstreamState
  now?: () => number
  stepMs?: number
  slots?: number
  /** Under node:cluster (WORKERS > 1), this worker's number: the page shows this worker's figures only. */
  worker?: number | undefined
}

interface LatencyStep { bounds: number[], counts: number[] }

const BREAKER_NAMES: readonly BreakerName[] = ['closed', 'half-open', 'open']

/** The version in package.json (beside src/ and dist/ alike). */
export function packageVersion (): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : 'unknown'
  } catch {
    return 'unknown'
  }
}

type Sample = { labels: Partial<Record<string, string | number>>, value: number, metricName?: string }

/** What every prom-client instrument gives when read: its samples, a histogram's named by series. */
interface Readable { get (): Promise<{ values: Sample[] }> }

export function createStatusCollector (opts: CollectorOptions) {
  const now = opts.now ?? Date.now
  const stepMs = opts.stepMs ?? 10_000
  const slots = opts.slots ?? 360
  const { metrics, config } = opts
  // Offline, a provider over the network is never asked (src/config/open-access.ts): none is shown.
  const oaProvider = openAccessProviderInForce(config)
  const version = packageVersion()
  const startedAt = now()
  const rings = new SlotRings<SeriesName>(SERIES, slots)
  const latency = new ItemRing<LatencyStep>(slots)
  const refusals = new Map<string, NumberRing>()
  const labelled = new Map<string, { labels: Record<string, string>, ring: NumberRing, total: number }>()
  const openings = new ItemRing<number>(10)
  const errors = new ItemRing<{ from: number, to: number, code: string, count: number }>(20)
  const previous = new Map<string, number>()
  let step = Math.floor(startedAt / stepMs)
  let firstStep = step
  let lastSampleAt = startedAt
  let breakerState = 0
  let timer: NodeJS.Timeout | undefined
  let sampling: Promise<void> | undefined
  rings.advance(1)
  latency.push({ bounds: [], counts: [] })

  async function read (metric: Readable): Promise<Sample[]> {
    return (await metric.get()).values
  }

  /** What a counter grew by since the last sample (a counter that went back is read as new). */
  function delta (key: string, value: number): number {
    const before = previous.get(key) ?? 0
    previous.set(key, value)
    return value >= before ? value - before : value
  }

  function keyOf (name: string, labels: Sample['labels']): string {
    return `${name}|${Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(',')}`
  }

  /** A ring per label set of a counter (their number is bounded by the metric's labels). */
  function countLabelled (name: string, samples: Sample[], keep: (labels: Record<string, string>) => boolean = () => true): void {
    for (const s of samples) {
      const labels = Object.fromEntries(Object.entries(s.labels).map(([k, v]) => [k, String(v)]))
      if (!keep(labels)) continue
      const key = keyOf(name, labels)
      const d = delta(key, s.value)
      let entry = labelled.get(key)
      if (entry === undefined) {
        if (labelled.size >= 1000) continue // never more rings than this, whatever the labels
        const ring = new NumberRing(slots)
        for (let i = 0; i < rings.length; i++) ring.push(0)
        labelled.set(key, entry = { labels, ring, total: 0 })
      }
      entry.ring.addToLast(d)
      entry.total = s.value
    }
  }

  function moveTo (t: number): void {
    const target = Math.floor(t / stepMs)
    if (target <= step) return
    const count = Math.min(target - step, slots)
    rings.advance(count)
    for (let i = 0; i < count; i++) latency.push({ bounds: [], counts: [] })
    for (const ring of refusals.values()) for (let i = 0; i < count; i++) ring.push(0)
    for (const { ring } of labelled.values()) for (let i = 0; i < count; i++) ring.push(0)
    step = target
    firstStep = Math.max(firstStep, step - slots + 1)
  }

  async function sampleOnce (): Promise<void> {
    const t = now()
    moveTo(t)
    lastSampleAt = t
    const [cache, answers, histogram, upstreamErrors, retries, breaker, prefixOpenings, refused, diversions, bypasses, loopGuard] = await Promise.all([
      read(metrics.cache),
      read(metrics.answers),
      read(metrics.upstreamDuration),
      read(metrics.upstreamErrors),
      read(metrics.upstreamRetries),
      read(metrics.breakerOpen),
      read(metrics.prefixBreakerOpenings),
      read(metrics.refusals),
      read(metrics.localServiceDiversions),
      read(metrics.localServiceBypasses),
      read(metrics.localServiceLoopGuard)
    ])
    const [linkout, oaLookups] = await Promise.all([read(metrics.linkout), read(metrics.openAccessLookups)])
    countLabelled('linkout', linkout)
    countLabelled('oa_lookups', oaLookups)
    for (const s of cache) {
      const d = delta(keyOf('cache', s.labels), s.value)
      rings.add('lookups', d)
      if (s.labels.result === 'hit') rings.add('lookup_hit', d)
    }
    for (const s of answers) {
      const outcome = String(s.labels.outcome) as Outcome
      if (!OUTCOMES.includes(outcome)) continue
      rings.add(outcome, delta(keyOf('answers', s.labels), s.value))
    }
    // The histogram: per-bucket deltas summed over outcomes; the error outcome counts failures.
    const cumulative = new Map<number, number>()
    for (const s of histogram) {
      if (s.metricName?.endsWith('_bucket') === true) {
        const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le)
        const d = delta(keyOf('latency', s.labels), s.value)
        cumulative.set(le, (cumulative.get(le) ?? 0) + d)
      } else if (s.metricName?.endsWith('_count') === true) {
        const d = delta(keyOf('latency_count', s.labels), s.value)
        rings.add('upstream', d)
        if (s.labels.outcome === 'error') rings.add('upstream_errors', d)
      }
    }
    addLatency(cumulative)
    for (const s of retries) rings.add('retries', delta('retries', s.value))
    for (const s of prefixOpenings) rings.add('prefix_openings', delta('prefix_openings', s.value))
    const state = breaker[0]?.value ?? 0
    if (state === 2 && breakerState !== 2) openings.push(t)
    breakerState = state
    rings.max('breaker', state)
    for (const s of refused) {
      const reason = String(s.labels.reason)
      let ring = refusals.get(reason)
      if (ring === undefined) {
        if (refusals.size >= 50) continue
        ring = new NumberRing(slots)
        for (let i = 0; i < rings.length; i++) ring.push(0)
        refusals.set(reason, ring)
      }
      ring.addToLast(delta(keyOf('refusals', s.labels), s.value))
    }
    countLabelled('diversions', diversions)
    countLabelled('bypasses', bypasses)
    countLabelled('loop_guard', loopGuard)
    for (const s of upstreamErrors) {
      const d = delta(keyOf('upstream_errors', s.labels), s.value)
      if (d === 0) continue
      const code = String(s.labels.code)
      const last = errors.last()
      // A run of the same error is one entry while it lasts (gaps shorter than a step).
      if (last !== undefined && last.code === code && t - last.to <= stepMs) {
        last.to = t
        last.count += d
      } else {
        errors.push({ from: t, to: t, code, count: d })
      }
    }
  }

  function addLatency (cumulative: Map<number, number>): void {
    if (cumulative.size === 0) return
    const bounds = [...cumulative.keys()].sort((a, b) => a - b)
    const counts = bounds.map((b, i) => (cumulative.get(b) ?? 0) - (i === 0 ? 0 : cumulative.get(bounds[i - 1] as number) ?? 0))
    const current = latency.last()
    if (current === undefined) return
    if (current.bounds.length !== bounds.length) {
      current.bounds = bounds
      current.counts = counts
    } else {
      for (let i = 0; i < counts.length; i++) current.counts[i] = (current.counts[i] ?? 0) + (counts[i] ?? 0)
    }
  }

  /** Reads the counters now. Samples never overlap: a call while one runs waits for it. */
  async function sample (): Promise<void> {
    if (sampling !== undefined) return await sampling
    sampling = sampleOnce().finally(() => { sampling = undefined })
    return await sampling
  }

  async function gauges (): Promise<{ entries: number, bytes: number, inFlight: number, queued: number }> {
    const [entries, bytes, inFlight, queued] = await Promise.all([
      read(metrics.cacheEntries), read(metrics.cacheBytes), read(metrics.upstreamActive), read(metrics.upstreamWaiting)
    ])
    return { entries: entries[0]?.value ?? 0, bytes: bytes[0]?.value ?? 0, inFlight: inFlight[0]?.value ?? 0, queued: queued[0]?.value ?? 0 }
  }

  async function snapshot (): Promise<StatusSnapshot> {
    await sample()
    const t = now()
    const g = await gauges()
    const n = rings.length
    // The newest step is still running: its rate is over the time it has lasted so far.
    const stepSeconds = stepMs / 1000
    const lastSeconds = Math.max(1, (lastSampleAt - Math.max(step * stepMs, startedAt)) / 1000)
    const firstSeconds = Math.max(1, ((firstStep + 1) * stepMs - startedAt) / 1000)
    const seconds = (i: number): number => i === n - 1 ? Math.min(lastSeconds, stepSeconds) : i === 0 && firstStep * stepMs < startedAt ? Math.min(firstSeconds, stepSeconds) : stepSeconds
    const perSecond = (name: SeriesName): number[] => rings.series(name).map((v, i) => v / seconds(i))
    const requests = {
      perSecond: Object.fromEntries(OUTCOMES.map((o) => [o, perSecond(o)])) as Record<Outcome, number[]>,
      lastHour: Object.fromEntries(OUTCOMES.map((o) => [o, rings.sum(o)])) as Record<Outcome, number>,
      sinceStart: Object.fromEntries(OUTCOMES.map((o) => [o, previous.get(keyOf('answers', { outcome: o })) ?? 0])) as Record<Outcome, number>
    }
    const lookups = rings.sum('lookups')
    const steps = latency.toArray()
    const upstreamCounts = rings.series('upstream')
    const upstreamFailures = rings.series('upstream_errors')
    const whole = mergeLatency(steps)
    const limitRows = [...new Set<string>([...REFUSAL_REASONS, ...refusals.keys()])].map((reason) => {
      const ring = refusals.get(reason)
      const described = describeLimit(reason, config)
      return {
        reason,
        ...described,
        refusedLastHour: ring?.sum() ?? 0,
        refusedSinceStart: previous.get(keyOf('refusals', { reason })) ?? 0
      }
    })
    const rowsOf = (name: string): CountRow[] => [...labelled.entries()]
      .filter(([key]) => key.startsWith(`${name}|`))
      .map(([, e]) => ({ labels: e.labels, lastHour: e.ring.sum(), sinceStart: e.total }))
      .sort((a, b) => JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)))
    const loop = rowsOf('loop_guard')[0]
    return {
      version,
      worker: opts.worker === undefined ? null : { index: opts.worker, of: config.workers },
      startedAt: new Date(startedAt).toISOString(),
      at: new Date(t).toISOString(),
      uptimeSeconds: Math.max(0, Math.floor((t - startedAt) / 1000)),
      stepSeconds,
      seriesStart: new Date(Math.max(firstStep * stepMs, startedAt)).toISOString(),
      requests,
      cache: {
        entries: g.entries,
        maxEntries: config.cacheMaxEntries,
        bytes: g.bytes,
        maxBytes: config.cacheMaxBytes,
        hitRatioLastHour: lookups === 0 ? null : rings.sum('lookup_hit') / lookups
      },
      upstream: {
        p50Ms: steps.map((s) => toMs(quantile(s, 0.5))),
        p99Ms: steps.map((s) => toMs(quantile(s, 0.99))),
        errorRate: upstreamCounts.map((c, i) => c === 0 ? null : (upstreamFailures[i] ?? 0) / c),
        lastHour: {
          requests: rings.sum('upstream'),
          errors: rings.sum('upstream_errors'),
          retries: rings.sum('retries'),
          p50Ms: toMs(quantile(whole, 0.5)),
          p99Ms: toMs(quantile(whole, 0.99))
        },
        inFlight: g.inFlight,
        queued: g.queued,
        reachability: reachable(config.offline, opts.upstreamState?.() ?? { state: 'unknown' })
      },
      breaker: {
        state: BREAKER_NAMES[breakerState] ?? 'closed',
        perStep: rings.series('breaker'),
        openings: openings.toArray().reverse().map((ms) => new Date(ms).toISOString()),
        prefixOpeningsLastHour: rings.sum('prefix_openings')
      },
      limits: limitRows,
      localServices: {
        configured: config.localServices.map((s) => ({ id: s.id, name: s.name })),
        diversions: rowsOf('diversions'),
        bypasses: rowsOf('bypasses'),
        loopGuard: { lastHour: loop?.lastHour ?? 0, sinceStart: loop?.sinceStart ?? 0 }
      },
      linkout: rowsOf('linkout'),
      openAccess: oaProvider === undefined
        ? null
        : {
            provider: oaProvider,
            callsToday: (await read(metrics.openAccessCallsToday))[0]?.value ?? 0,
            // The limit in force here (a worker's share without Redis), as the metric says.
            dailyLimit: oaProvider === 'file' ? null : (await read(metrics.openAccessDailyLimit))[0]?.value ?? config.oaDailyLimit,
            lookups: rowsOf('oa_lookups')
          },
      upstreamErrors: errors.toArray().reverse().map((e) => ({ from: new Date(e.from).toISOString(), to: new Date(e.to).toISOString(), code: e.code, count: e.count }))
    }
  }

  return {
    sample,
    snapshot,
    /** Sample once a second until stop(); the timer never keeps the process alive. */
    start (intervalMs = 1000): void {
      if (timer !== undefined) return
      timer = setInterval(() => { sample().catch(() => {}) }, intervalMs)
      timer.unref()
    },
    stop (): void {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
    }
  }
}

export type StatusCollector = ReturnType<typeof createStatusCollector>

function toMs (seconds: number | null): number | null {
  return seconds === null ? null : Math.round(seconds * 10_000) / 10
}

function mergeLatency (steps: readonly LatencyStep[]): LatencyStep {
  const out: LatencyStep = { bounds: [], counts: [] }
  for (const s of steps) {
    if (s.bounds.length === 0) continue
    if (out.bounds.length === 0) {
      out.bounds = [...s.bounds]
      out.counts = new Array<number>(s.bounds.length).fill(0)
    }
    if (s.bounds.length !== out.bounds.length) continue
    for (let i = 0; i < s.counts.length; i++) out.counts[i] = (out.counts[i] ?? 0) + (s.counts[i] ?? 0)
  }
  return out
}

/**
 * A quantile from histogram bucket counts (not cumulative), interpolated inside its bucket as
 * Prometheus's histogram_quantile does; in the +Inf bucket, the largest finite bound.
 */
function reachable (offline: boolean, known: UpstreamState): Reachable {
  if (offline) return { state: 'offline' }
  if (known.state === 'unknown') return known
  const since = new Date(known.since).toISOString()
  return known.state === 'answers' ? { state: 'answers', since } : { state: 'unreachable', reason: known.reason, why: REASON_WORDS[known.reason], detail: known.detail, since }
}

export function quantile (step: LatencyStep, q: number): number | null {
  const total = step.counts.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  const rank = q * total
  let below = 0
  for (let i = 0; i < step.counts.length; i++) {
    const count = step.counts[i] ?? 0
    const upper = step.bounds[i] ?? Infinity
    const lower = i === 0 ? 0 : step.bounds[i - 1] ?? 0
    if (below + count >= rank && count > 0) {
      if (upper === Infinity) return lower
      return lower + (upper - lower) * ((rank - below) / count)
    }
    below += count
  }
  return null
}

function ms (n: number): string {
  return n % 1000 === 0 ? `${n / 1000} s` : `${n} ms`
}

/** What each refusal reason protects, and the settings in force. */
function describeLimit (reason: string, c: Config): { limit: string, setting: string } {
  switch (reason) {
    case 'load_shed':
      return { limit: 'Load shedding (event-loop delay)', setting: c.maxEventLoopDelayMs === 0 ? 'off (MAX_EVENT_LOOP_DELAY_MS=0)' : `above ${ms(c.maxEventLoopDelayMs)} (MAX_EVENT_LOOP_DELAY_MS)` }
    case 'rate_limit':
      return { limit: 'Lookups per client', setting: c.rateLimitMax === 0 ? 'off (RATE_LIMIT_MAX=0)' : `${c.rateLimitMax} per ${ms(c.rateLimitWindowMs)} (RATE_LIMIT_MAX, RATE_LIMIT_WINDOW_MS)` }
    case 'auth_rate_limit':
      return { limit: 'Cache-bypassing lookups (auth, cert) per client', setting: c.authRateLimitMax === 0 ? 'off (AUTH_RATE_LIMIT_MAX=0)' : `${c.authRateLimitMax} per ${ms(c.rateLimitWindowMs)} (AUTH_RATE_LIMIT_MAX)` }
    case 'client_share':
      return { limit: 'One client\'s share of the upstream', setting: `${c.upstreamPerClient} in flight, ${c.upstreamClientQueue} waiting (UPSTREAM_PER_CLIENT, UPSTREAM_CLIENT_QUEUE)` }
    case 'queue_full':
      return { limit: 'Lookups waiting for the upstream', setting: `${c.upstreamMaxConcurrent} in flight${c.workers > 1 ? ` in this worker (its share of UPSTREAM_MAX_CONCURRENT over ${c.workers} workers)` : ''}, ${c.upstreamQueueSize} waiting, at most ${ms(c.upstreamQueueTimeoutMs)} (UPSTREAM_MAX_CONCURRENT, UPSTREAM_QUEUE_SIZE, UPSTREAM_QUEUE_TIMEOUT_MS)` }
    default:
      return { limit: reason, setting: '' }
  }
}
