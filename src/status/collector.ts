/**
 * The status page's figures (issue 15, behaviour.md §12): what the history holds (src/status/history.ts,
 * sampled once a second by an unref'd timer, never per request) and the settings in force (settings.ts),
 * put together into one StatusSnapshot when the page or its JSON is asked for.
 */
import { readFileSync } from 'node:fs'
import { openAccessProviderInForce } from '../config/open-access.js'
import type { Metrics } from '../observe/metrics.js'
import { REASON_WORDS } from '../resolve/upstream/reachability.js'
import type { UpstreamState } from '../resolve/upstream/reachability.js'
import { createHistory, read } from './history.js'
import type { History } from './history.js'
import { mergeLatency, quantile, toMs } from './latency.js'
import { limitRows } from './settings.js'
import type { StatusSettings } from './settings.js'
import { OUTCOMES } from './snapshot.js'
import type { BreakerName, Outcome, Reachable, RegistryCopyStatus, StatusSnapshot } from './snapshot.js'

export interface CollectorOptions {
  metrics: Metrics
  /** The settings shown (src/status/settings.ts); the configuration has them all. */
  settings: StatusSettings
  upstreamState?: () => UpstreamState
  now?: () => number
  /** One point of every series (default 10 s), and how many are kept (default 360: the last hour). */
  stepMs?: number
  slots?: number
  /** Under node:cluster (WORKERS > 1), this worker's number: the page shows this worker's figures only. */
  worker?: number | undefined
  /** The registry copy's figures, read from it when the page is asked for (src/services/copy.ts); none without a copy. */
  registryCopy?: (() => RegistryCopyStatus) | undefined
}

const BREAKER_NAMES: readonly BreakerName[] = ['closed', 'half-open', 'open']

/** The version in package.json (beside src/ and dist/ alike). */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : 'unknown'
  } catch {
    return 'unknown'
  }
}

export function createStatusCollector(opts: CollectorOptions) {
  const now = opts.now ?? Date.now
  const stepMs = opts.stepMs ?? 10_000
  const { metrics, settings } = opts
  const history = createHistory({ metrics, now, stepMs, slots: opts.slots ?? 360 })
  const version = packageVersion()
  const iso = (ms: number): string => new Date(ms).toISOString()
  let timer: NodeJS.Timeout | undefined

  async function snapshot(): Promise<StatusSnapshot> {
    await history.sample()
    const t = now()
    const [entries, bytes, inFlight, queued] = await Promise.all([
      gauge(metrics.cacheEntries),
      gauge(metrics.cacheBytes),
      gauge(metrics.upstreamActive),
      gauge(metrics.upstreamWaiting)
    ])
    const lookups = history.sum('lookups')
    const loop = history.rowsOf('loop_guard')[0]
    return {
      version,
      worker: opts.worker === undefined ? null : { index: opts.worker, of: settings.workers },
      startedAt: iso(history.startedAt),
      at: iso(t),
      uptimeSeconds: Math.max(0, Math.floor((t - history.startedAt) / 1000)),
      stepSeconds: stepMs / 1000,
      seriesStart: iso(history.seriesStart()),
      requests: requestsOf(history),
      cache: {
        entries,
        maxEntries: settings.cacheMaxEntries,
        bytes,
        maxBytes: settings.cacheMaxBytes,
        hitRatioLastHour: lookups === 0 ? null : history.sum('lookup_hit') / lookups
      },
      upstream: {
        ...upstreamOf(history),
        inFlight,
        queued,
        reachability: reachable(settings.offline, opts.upstreamState?.() ?? { state: 'unknown' })
      },
      breaker: {
        state: BREAKER_NAMES[history.breakerState()] ?? 'closed',
        perStep: history.series('breaker'),
        openings: history.openings().map(iso),
        prefixOpeningsLastHour: history.sum('prefix_openings')
      },
      limits: limitRows(settings, history.refusalReasons(), history.refused),
      localServices: {
        configured: settings.localServices.map((s) => ({ id: s.id, name: s.name })),
        diversions: history.rowsOf('diversions'),
        bypasses: history.rowsOf('bypasses'),
        loopGuard: { lastHour: loop?.lastHour ?? 0, sinceStart: loop?.sinceStart ?? 0 }
      },
      linkout: history.rowsOf('linkout'),
      openAccess: await openAccessOf(history, metrics, settings),
      upstreamErrors: history.upstreamErrors(),
      registryCopy: opts.registryCopy?.() ?? null
    }
  }

  return {
    sample: history.sample,
    snapshot,
    /** Sample once a second until stop(); the timer never keeps the process alive. */
    start(intervalMs = 1000): void {
      if (timer !== undefined) return
      timer = setInterval(() => {
        history.sample().catch(() => {})
      }, intervalMs)
      timer.unref()
    },
    stop(): void {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
    }
  }
}

export type StatusCollector = ReturnType<typeof createStatusCollector>

/** A gauge's one value (0 before it is set). */
async function gauge(metric: Parameters<typeof read>[0]): Promise<number> {
  return (await read(metric))[0]?.value ?? 0
}

/** Every answer by its outcome: per second in each step, over the period, and since start. */
function requestsOf(history: History): StatusSnapshot['requests'] {
  const byOutcome = <T>(f: (o: Outcome) => T): Record<Outcome, T> =>
    Object.fromEntries(OUTCOMES.map((o) => [o, f(o)])) as Record<Outcome, T>
  return {
    perSecond: byOutcome((o) => history.perSecond(o)),
    lastHour: byOutcome((o) => history.sum(o)),
    sinceStart: byOutcome((o) => history.answersSinceStart(o))
  }
}

/** Latency and failures of upstream requests, per step and over the period. */
function upstreamOf(history: History): Omit<StatusSnapshot['upstream'], 'inFlight' | 'queued' | 'reachability'> {
  const steps = history.latencySteps()
  const whole = mergeLatency(steps)
  const failures = history.series('upstream_errors')
  return {
    p50Ms: steps.map((s) => toMs(quantile(s, 0.5))),
    p99Ms: steps.map((s) => toMs(quantile(s, 0.99))),
    errorRate: history.series('upstream').map((c, i) => (c === 0 ? null : (failures[i] ?? 0) / c)),
    lastHour: {
      requests: history.sum('upstream'),
      errors: history.sum('upstream_errors'),
      retries: history.sum('retries'),
      p50Ms: toMs(quantile(whole, 0.5)),
      p99Ms: toMs(quantile(whole, 0.99))
    }
  }
}

function reachable(offline: boolean, known: UpstreamState): Reachable {
  if (offline) return { state: 'offline' }
  if (known.state === 'unknown') return known
  const since = new Date(known.since).toISOString()
  if (known.state === 'answers') return { state: 'answers', since }
  return { state: 'unreachable', reason: known.reason, why: REASON_WORDS[known.reason], detail: known.detail, since }
}

/** The open-access source in force, its calls today and its lookups; null without one. */
async function openAccessOf(history: History, metrics: Metrics, settings: StatusSettings): Promise<StatusSnapshot['openAccess']> {
  // Offline, a provider over the network is never asked (src/config/open-access.ts): none is shown.
  const provider = openAccessProviderInForce(settings)
  if (provider === undefined) return null
  return {
    provider,
    callsToday: (await read(metrics.openAccessCallsToday))[0]?.value ?? 0,
    // The limit in force here (a worker's share without Redis), as the metric says.
    dailyLimit: provider === 'file' ? null : ((await read(metrics.openAccessDailyLimit))[0]?.value ?? settings.oaDailyLimit),
    lookups: history.rowsOf('oa_lookups')
  }
}
