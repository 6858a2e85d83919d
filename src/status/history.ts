/**
 * The status page's memory (issue 15), in fixed-size rings. Nothing here runs per request: each sample
 * reads our Prometheus counters (src/observe/metrics.ts) and adds what changed to the current slot.
 * Requests are read from doi_proxy_answers_total, the counter /metrics shows: the page and the metrics
 * count the same answers by construction. One slot is `stepMs` long; `slots` of them are kept (360 × 10 s:
 * the last hour).
 *
 * No reader data is kept: no address, no header, no DOI. Upstream errors are kept by code and time.
 */
import type { Metrics } from '../observe/metrics.js'
import type { LatencyStep } from './latency.js'
import { ItemRing, NumberRing, SlotRings } from './rings.js'
import { OUTCOMES } from './snapshot.js'
import type { CountRow, Outcome, UpstreamErrorEntry } from './snapshot.js'

const SERIES = [...OUTCOMES, 'lookup_hit', 'lookups', 'upstream', 'upstream_errors', 'breaker', 'prefix_openings', 'retries'] as const
export type SeriesName = (typeof SERIES)[number]

type Sample = { labels: Partial<Record<string, string | number>>; value: number; metricName?: string }

/** What every prom-client instrument gives when read: its samples, a histogram's named by series. */
interface Readable {
  get(): Promise<{ values: Sample[] }>
}

export async function read(metric: Readable): Promise<Sample[]> {
  return (await metric.get()).values
}

function keyOf(name: string, labels: Sample['labels']): string {
  return `${name}|${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',')}`
}

export interface HistoryOptions {
  metrics: Metrics
  now: () => number
  stepMs: number
  slots: number
}

export type History = ReturnType<typeof createHistory>

/** The rings, and what each counter read last (its growth since is what the current step gets). */
export function createHistory(opts: HistoryOptions) {
  const { now, stepMs, slots } = opts
  const startedAt = now()
  const rings = new SlotRings<SeriesName>(SERIES, slots)
  const latency = new ItemRing<LatencyStep>(slots)
  // A ring per refusal reason, and per label set of the counters shown by label (bounded, whatever the labels).
  const refusals = new KeyedRings(slots, 50)
  const labelled = new KeyedRings(slots, 1000)
  const openings = new ItemRing<number>(10)
  const errors = new ItemRing<ErrorRun>(20)
  const previous = new Map<string, number>()
  const firstStep = Math.floor(startedAt / stepMs)
  // The current step, the first one still kept, the last sample's time, and the breaker's state then.
  const clock = { step: firstStep, firstStep, lastSampleAt: startedAt, breakerState: 0 }
  let sampling: Promise<void> | undefined
  rings.advance(1)
  latency.push({ bounds: [], counts: [] })

  /** What a counter grew by since the last sample (a counter that went back is read as new). */
  function delta(key: string, value: number): number {
    const before = previous.get(key) ?? 0
    previous.set(key, value)
    return value >= before ? value - before : value
  }

  function moveTo(t: number): void {
    const target = Math.floor(t / stepMs)
    if (target <= clock.step) return
    const count = Math.min(target - clock.step, slots)
    rings.advance(count)
    for (let i = 0; i < count; i++) latency.push({ bounds: [], counts: [] })
    refusals.advance(count)
    labelled.advance(count)
    clock.step = target
    clock.firstStep = Math.max(clock.firstStep, clock.step - slots + 1)
  }

  async function sampleOnce(): Promise<void> {
    const t = now()
    moveTo(t)
    clock.lastSampleAt = t
    const counters = await readCounters(opts.metrics)
    const count = { rings, delta, length: rings.length }
    labelled.count('linkout', counters.linkout, count)
    labelled.count('oa_lookups', counters.oaLookups, count)
    countAnswers(counters, count)
    addLatency(latency.last(), countUpstream(counters, count))
    const state = counters.breaker[0]?.value ?? 0
    if (state === 2 && clock.breakerState !== 2) openings.push(t)
    clock.breakerState = state
    rings.max('breaker', state)
    for (const s of counters.refused) {
      const reason = String(s.labels.reason)
      if (refusals.accepts(reason)) refusals.add(reason, s.labels, delta(keyOf('refusals', s.labels), s.value), s.value, rings.length)
    }
    labelled.count('diversions', counters.diversions, count)
    labelled.count('bypasses', counters.bypasses, count)
    labelled.count('loop_guard', counters.loopGuard, count)
    for (const s of counters.upstreamErrors) {
      addError(errors, t, stepMs, String(s.labels.code), delta(keyOf('upstream_errors', s.labels), s.value))
    }
  }

  return {
    startedAt,
    /** Reads the counters now. Samples never overlap: a call while one runs waits for it. */
    async sample(): Promise<void> {
      if (sampling !== undefined) return await sampling
      sampling = sampleOnce().finally(() => {
        sampling = undefined
      })
      return await sampling
    },
    /** When the first point of every series starts. */
    seriesStart: (): number => Math.max(clock.firstStep * stepMs, startedAt),
    perSecond: (name: SeriesName): number[] =>
      rings.series(name).map((v, i, all) => v / secondsOf(i, all.length, clock, stepMs, startedAt)),
    series: (name: SeriesName): number[] => rings.series(name),
    sum: (name: SeriesName): number => rings.sum(name),
    answersSinceStart: (outcome: Outcome): number => previous.get(keyOf('answers', { outcome })) ?? 0,
    latencySteps: (): LatencyStep[] => latency.toArray(),
    breakerState: (): number => clock.breakerState,
    /** When the breaker opened, newest first. */
    openings: (): number[] => openings.toArray().reverse(),
    refusalReasons: (): string[] => [...refusals.keys()],
    refused: (reason: string): { lastHour: number; sinceStart: number } => ({
      lastHour: refusals.sumOf(reason) ?? 0,
      sinceStart: previous.get(keyOf('refusals', { reason })) ?? 0
    }),
    /** A counter shown by label: a row per label set, sorted by its labels. */
    rowsOf: (name: string): CountRow[] => labelled.rowsOf(name),
    /** The runs of upstream errors, newest first. */
    upstreamErrors: (): UpstreamErrorEntry[] =>
      errors
        .toArray()
        .reverse()
        .map((e) => ({ from: new Date(e.from).toISOString(), to: new Date(e.to).toISOString(), code: e.code, count: e.count }))
  }
}

/** A run of one upstream error code: first and last time seen (ms), and how many. */
interface ErrorRun {
  from: number
  to: number
  code: string
  count: number
}

interface Clock {
  step: number
  firstStep: number
  lastSampleAt: number
}

/** The seconds point i of n stands for: the newest step is still running, and the first may have begun before the start. */
function secondsOf(i: number, n: number, clock: Clock, stepMs: number, startedAt: number): number {
  const stepSeconds = stepMs / 1000
  if (i === n - 1) {
    return Math.min(Math.max(1, (clock.lastSampleAt - Math.max(clock.step * stepMs, startedAt)) / 1000), stepSeconds)
  }
  if (i === 0 && clock.firstStep * stepMs < startedAt) {
    return Math.min(Math.max(1, ((clock.firstStep + 1) * stepMs - startedAt) / 1000), stepSeconds)
  }
  return stepSeconds
}

interface Counting {
  rings: SlotRings<SeriesName>
  delta: (key: string, value: number) => number
  length: number
}

type Counters = Awaited<ReturnType<typeof readCounters>>

async function readCounters(metrics: Metrics) {
  const [cache, answers, histogram, upstreamErrors, retries, breaker, prefixOpenings, refused, diversions, bypasses, loopGuard] =
    await Promise.all([
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
  return {
    cache,
    answers,
    histogram,
    upstreamErrors,
    retries,
    breaker,
    prefixOpenings,
    refused,
    diversions,
    bypasses,
    loopGuard,
    linkout,
    oaLookups
  }
}

/** Cache lookups (and hits among them), and every answer by its outcome. */
function countAnswers(counters: Counters, { rings, delta }: Counting): void {
  for (const s of counters.cache) {
    const d = delta(keyOf('cache', s.labels), s.value)
    rings.add('lookups', d)
    if (s.labels.result === 'hit') rings.add('lookup_hit', d)
  }
  for (const s of counters.answers) {
    const outcome = String(s.labels.outcome) as Outcome
    if (!OUTCOMES.includes(outcome)) continue
    rings.add(outcome, delta(keyOf('answers', s.labels), s.value))
  }
}

/**
 * Upstream requests, failures, retries and prefix breakers' openings; the latency histogram's growth per
 * bucket bound (summed over outcomes) is returned, cumulative as Prometheus gives it.
 */
function countUpstream(counters: Counters, { rings, delta }: Counting): Map<number, number> {
  const cumulative = new Map<number, number>()
  for (const s of counters.histogram) {
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
  for (const s of counters.retries) rings.add('retries', delta('retries', s.value))
  for (const s of counters.prefixOpenings) rings.add('prefix_openings', delta('prefix_openings', s.value))
  return cumulative
}

/** The histogram's growth (cumulative by bound) added to the current step, as counts per bucket. */
function addLatency(current: LatencyStep | undefined, cumulative: Map<number, number>): void {
  if (cumulative.size === 0) return
  const bounds = [...cumulative.keys()].sort((a, b) => a - b)
  const counts = bounds.map((b, i) => (cumulative.get(b) ?? 0) - (i === 0 ? 0 : (cumulative.get(bounds[i - 1] as number) ?? 0)))
  if (current === undefined) return
  if (current.bounds.length !== bounds.length) {
    current.bounds = bounds
    current.counts = counts
  } else {
    for (let i = 0; i < counts.length; i++) current.counts[i] = (current.counts[i] ?? 0) + (counts[i] ?? 0)
  }
}

/** A run of the same error is one entry while it lasts (gaps shorter than a step). */
function addError(errors: ItemRing<ErrorRun>, t: number, stepMs: number, code: string, d: number): void {
  if (d === 0) return
  const last = errors.last()
  if (last !== undefined && last.code === code && t - last.to <= stepMs) {
    last.to = t
    last.count += d
  } else {
    errors.push({ from: t, to: t, code, count: d })
  }
}

/** Rings by key, each with its labels and its counter's last value; at most `max` of them. */
class KeyedRings {
  private readonly entries = new Map<string, { labels: Record<string, string>; ring: NumberRing; total: number }>()

  constructor(
    private readonly slots: number,
    private readonly max: number
  ) {}

  keys(): IterableIterator<string> {
    return this.entries.keys()
  }

  /** Whether a key has a ring, or may get one. */
  accepts(key: string): boolean {
    return this.entries.has(key) || this.entries.size < this.max
  }

  /** Adds to the key's current slot; a new ring starts with as many empty slots as the others have. */
  add(key: string, labels: Sample['labels'], d: number, total: number, length: number): void {
    let entry = this.entries.get(key)
    if (entry === undefined) {
      if (this.entries.size >= this.max) return
      const ring = new NumberRing(this.slots)
      for (let i = 0; i < length; i++) ring.push(0)
      this.entries.set(key, (entry = { labels: Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, String(v)])), ring, total }))
    }
    entry.ring.addToLast(d)
    entry.total = total
  }

  /** Every sample of a counter, by its labels. */
  count(name: string, samples: Sample[], { delta, length }: Counting): void {
    for (const s of samples) {
      const key = keyOf(name, s.labels)
      this.add(key, s.labels, delta(key, s.value), s.value, length)
    }
  }

  advance(count: number): void {
    for (const { ring } of this.entries.values()) for (let i = 0; i < count; i++) ring.push(0)
  }

  sumOf(key: string): number | undefined {
    return this.entries.get(key)?.ring.sum()
  }

  rowsOf(name: string): CountRow[] {
    return [...this.entries.entries()]
      .filter(([key]) => key.startsWith(`${name}|`))
      .map(([, e]) => ({ labels: e.labels, lastHour: e.ring.sum(), sinceStart: e.total }))
      .sort((a, b) => JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)))
  }
}
