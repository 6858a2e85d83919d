import cluster from 'node:cluster'
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { CounterConfiguration, LabelValues, RegistryContentType } from 'prom-client'
import type { Config } from '../config/schema.js'
import { CHECK_VERDICTS } from '../handle/health/types.js'
import type { LandingVerdict, MetadataVerdict, RetractionVerdict } from '../handle/verify/types.js'

/** One thing counted. */
export interface Tally {
  inc: () => void
}

/**
 * A counter whose tallies are plain additions, handed to prom-client when the counter is read (a scrape,
 * /status): the hot path counts with an increment of a number, not a label lookup and a hash per request.
 */
function talliedCounter<T extends string>(config: CounterConfiguration<T>): Counter<T> & { tally: (labels?: LabelValues<T>) => Tally } {
  const pending: Array<{ labels: LabelValues<T> | undefined; n: number }> = []
  const counter = new Counter<T>({
    ...config,
    collect() {
      for (const one of pending) {
        if (one.n === 0) continue
        if (one.labels === undefined) this.inc(one.n)
        else this.inc(one.labels, one.n)
        one.n = 0
      }
    }
  })
  return Object.assign(counter, {
    tally(labels?: LabelValues<T>): Tally {
      const one = { labels, n: 0 }
      pending.push(one)
      return {
        inc: () => {
          one.n++
        }
      }
    }
  })
}

/** What the proxy answered (doi_proxy_resolutions_total's outcome label). */
export type Resolution = 'redirect' | 'alias' | 'values' | 'showurls' | 'not_found' | 'bad_request' | 'upstream_error'

/** Where a record that was answered came from: local records, the cache, the upstream, or a stale stand-in. */
export type AnsweredFrom = 'local' | 'hit' | 'miss' | 'stale'

/**
 * The answers as an operator reads them on /status (doi_proxy_answers_total's outcome label): a record
 * answered from local records, the cache (hit), the upstream (miss) or an expired copy (stale); or no
 * record: not found, a bad request or refusal (4xx), an error (5xx).
 */
export const ANSWERS = ['local', 'hit', 'miss', 'stale', 'not_found', 'bad_request', 'error'] as const
export type AnswerOutcome = (typeof ANSWERS)[number]

function answerOutcome(resolution: Resolution, from: AnsweredFrom): AnswerOutcome {
  switch (resolution) {
    case 'not_found':
      return 'not_found'
    case 'bad_request':
      return 'bad_request'
    case 'upstream_error':
      return 'error'
    default:
      return from
  }
}

/**
 * The proxy's answers, counted once each: a tally per (resolution, source) is a plain number, and both
 * counters add what it grew by since they last read it. They cannot disagree, whoever reads first.
 */
function answerCounters(registry: Registry) {
  interface One {
    resolution: Resolution
    outcome: AnswerOutcome
    n: number
    resolved: number
    answered: number
  }
  const all = new Map<string, One>()
  // Answers that are not the proxy's (the REST API, a batch's lines): in answers_total only.
  const only = new Map<AnswerOutcome, { outcome: AnswerOutcome; n: number; answered: number }>()
  const resolutions = new Counter({
    name: 'doi_proxy_resolutions_total',
    help: 'Proxy answers by what was answered: redirect, alias, values, showurls, not_found, bad_request, upstream_error',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      for (const one of all.values()) {
        if (one.n > one.resolved) this.inc({ outcome: one.resolution }, one.n - one.resolved)
        one.resolved = one.n
      }
    }
  })
  const answers = new Counter({
    name: 'doi_proxy_answers_total',
    help: 'Answers (proxy, REST API, batch lines) as /status shows them: local, hit, miss, stale (where the record came from), not_found, bad_request, error',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      for (const one of [...all.values(), ...only.values()]) {
        if (one.n > one.answered) this.inc({ outcome: one.outcome }, one.n - one.answered)
        one.answered = one.n
      }
    }
  })
  // Every outcome shows from the start, at 0: a rate over a series that appears later misses its first answers.
  for (const outcome of ANSWERS) answers.inc({ outcome }, 0)
  /** The tally of one kind of answer: bound once by its callers, so the hot path only increments. */
  function tally(resolution: Resolution, from: AnsweredFrom = 'hit'): Tally {
    const outcome = answerOutcome(resolution, from)
    const key = `${resolution}|${outcome}`
    let one = all.get(key)
    if (one === undefined) all.set(key, (one = { resolution, outcome, n: 0, resolved: 0, answered: 0 }))
    const counted = one
    return {
      inc: () => {
        counted.n++
      }
    }
  }
  /** The tally of an answer counted in answers_total only, never in resolutions_total. */
  function tallyOnly(outcome: AnswerOutcome): Tally {
    let one = only.get(outcome)
    if (one === undefined) only.set(outcome, (one = { outcome, n: 0, answered: 0 }))
    const counted = one
    return {
      inc: () => {
        counted.n++
      }
    }
  }
  return { resolutions, answers, tally, tallyOnly }
}

/**
 * Every Prometheus instrument of the service, on a registry of their own (one per app, so tests can
 * build many), defined here and nowhere else; everything that counts or reads a figure (the /status
 * collector included) takes it from this object. Labels are small fixed sets: never a label per DOI.
 * The instruments come in groups, one function each, in the order /metrics shows them. The shared tier's
 * and the bounds' join the registry (and /metrics) only when there is a shared tier (`observeSharedTier`)
 * or a status page (`showBounds`).
 */
export function createMetrics(opts: MetricsOptions = {}) {
  const registry = new Registry()
  // Under node:cluster every series carries its worker's number: the host's /metrics holds each worker's
  // own series, which Prometheus adds up (sum by …) and whose restarts it sees as one series' reset.
  if (opts.clusterWorker !== undefined) {
    registry.setDefaultLabels({ worker: String(opts.clusterWorker.index) })
    joinHost(registry)
  }
  collectDefaultMetrics({ register: registry, prefix: 'doi_proxy_' })
  return {
    registry,
    ...answerInstruments(registry),
    ...upstreamInstruments(registry),
    ...cacheInstruments(registry),
    ...protectionInstruments(registry),
    ...linkoutInstruments(registry),
    ...batchInstruments(registry),
    ...verifyInstruments(registry),
    ...healthInstruments(registry),
    /** What /metrics answers: this process's figures, or under node:cluster every worker's (hostMetrics). */
    async exposition(): Promise<string> {
      return opts.clusterWorker !== undefined ? await hostMetrics(registry) : await registry.metrics()
    },
    ...sharedTierInstruments(registry),
    ...copyInstruments(registry),
    ...boundInstruments(registry)
  }
}

/** The answers: the hot path's tallies (prepared answers, cache lookups) and the one count per answer. */
function answerInstruments(registry: Registry) {
  const answers = answerCounters(registry)
  return {
    preparedAnswers: talliedCounter({
      name: 'doi_proxy_prepared_answers_total',
      help: 'Answers given from a prepared answer kept with a cached record, before routing (the hot path)',
      registers: [registry]
    }),
    resolutions: answers.resolutions,
    /** The proxy's answers as /status shows them (ANSWERS): the same tallies as `resolutions`. */
    answers: answers.answers,
    /**
     * The one place a proxy answer is counted (the route and the prepared answers alike): what was
     * answered and where from. One increment shows in both counters, and /status reads `answers`.
     */
    answer: answers.tally,
    /**
     * The tallies of answers that are not the proxy's, by outcome: the REST API's (`/api/handles/{doi}`,
     * `?action=api`) and each line of a batch. They show on /status and in `answers`, not in `resolutions`.
     */
    otherAnswers: Object.fromEntries(ANSWERS.map((outcome) => [outcome, answers.tallyOnly(outcome)])) as Record<AnswerOutcome, Tally>,
    cache: talliedCounter({
      name: 'doi_proxy_cache_lookups_total',
      help: 'Record cache lookups by result',
      labelNames: ['result'] as const, // hit, miss, stale, bypass, shared (joined an in-flight miss)
      registers: [registry]
    })
  }
}

/** The upstream: its requests, retries and errors, its breakers, whether it answers, the fair queue. */
function upstreamInstruments(registry: Registry) {
  let upstreamSeen = { unreachable: (): boolean => false, openPrefixes: (): number => 0 }
  return {
    upstreamDuration: new Histogram({
      name: 'doi_proxy_upstream_request_duration_seconds',
      help: 'Upstream Handle API request latency by outcome',
      labelNames: ['outcome'] as const, // found, not_found, error
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry]
    }),
    upstreamRetries: new Counter({
      name: 'doi_proxy_upstream_retries_total',
      help: 'Upstream requests retried after a 429, any 5xx or a dropped connection',
      registers: [registry]
    }),
    breakerOpen: new Gauge({
      name: 'doi_proxy_upstream_circuit_state',
      help: 'Upstream circuit breaker: 0 closed, 1 half-open, 2 open',
      registers: [registry],
      // A state: were workers' series ever merged (they carry a worker label, so they are not), the worst
      // one, never their sum (two open breakers are not a 4) that `== 2` in alerts.yml would miss.
      aggregator: 'max'
    }),
    prefixBreakerOpenings: new Counter({
      name: 'doi_proxy_prefix_circuit_openings_total',
      help: 'Times the circuit breaker of one prefix (one failing handle server) opened',
      registers: [registry]
    }),
    // What readers feel of an upstream that fails, whichever breaker (if any) opened: a silent upstream
    // times out per prefix, which opens prefix breakers, never the whole upstream's (deploy/prometheus/alerts.yml).
    upstreamUnreachable: new Gauge({
      name: 'doi_proxy_upstream_unreachable',
      help: '1 while lookups find the upstream unreachable (refused, DNS, TLS, no route, or 3 timeouts or cut connections in a row with no answer between; /status says which), else 0',
      registers: [registry],
      aggregator: 'max', // a state, never a sum (see breakerOpen)
      collect() {
        this.set(upstreamSeen.unreachable() ? 1 : 0)
      }
    }),
    prefixBreakersOpen: new Gauge({
      name: 'doi_proxy_prefix_circuits_open',
      help: 'Prefixes whose circuit breaker is open or half-open now: their uncached DOIs get 503',
      registers: [registry],
      collect() {
        this.set(upstreamSeen.openPrefixes())
      }
    }),
    /** The guarded upstream is built after the metrics; it tells them how to read what it knows. */
    observeUpstream(seen: typeof upstreamSeen): void {
      upstreamSeen = seen
    },
    upstreamWaiting: new Gauge({
      name: 'doi_proxy_upstream_queue_length',
      help: 'Lookups waiting for an upstream slot',
      registers: [registry]
    }),
    upstreamActive: new Gauge({
      name: 'doi_proxy_upstream_in_flight',
      help: 'Upstream requests in flight',
      registers: [registry]
    }),
    upstreamErrors: new Counter({
      name: 'doi_proxy_upstream_errors_total',
      help: 'Upstream failures by error code',
      labelNames: ['code'] as const,
      registers: [registry]
    })
  }
}

/** What the cache and the local store hold, and the stale records used when the upstream failed. */
function cacheInstruments(registry: Registry) {
  let cacheStats = (): { entries: number; bytes: number } => ({ entries: 0, bytes: 0 })
  let localRecords = (): number => 0
  return {
    staleServed: new Counter({
      name: 'doi_proxy_stale_answers_total',
      help: 'Expired records used because the upstream failed (one answer may use several: the DOI, its prefix, namespace handles)',
      registers: [registry]
    }),
    cacheEntries: new Gauge({
      name: 'doi_proxy_cache_entries',
      help: 'Records and not-found answers held in the cache',
      registers: [registry],
      collect() {
        this.set(cacheStats().entries)
      }
    }),
    cacheBytes: new Gauge({
      name: 'doi_proxy_cache_bytes',
      help: 'Estimated bytes of records held in the cache, their prepared answers included',
      registers: [registry],
      collect() {
        this.set(cacheStats().bytes)
      }
    }),
    localRecords: new Gauge({
      name: 'doi_proxy_local_records',
      help: 'Records held in the local store',
      registers: [registry],
      collect() {
        this.set(localRecords())
      }
    }),
    observeLocalStore(records: () => number): void {
      localRecords = records
    },
    /** The cache is built after the metrics; it tells them how to read its size. */
    observeCache(stats: () => { entries: number; bytes: number }): void {
      cacheStats = stats
    }
  }
}

/** Requests refused to protect the service (behaviour.md §9). */
function protectionInstruments(registry: Registry) {
  return {
    refusals: new Counter({
      name: 'doi_proxy_refusals_total',
      help: 'Requests refused to protect the service or other readers, by reason',
      labelNames: ['reason'] as const, // load_shed, rate_limit, auth_rate_limit, client_share, queue_full
      registers: [registry]
    })
  }
}

/** The local service (behaviour.md §10), the link-out chains and the open-access source (docs/institutional.md). */
function linkoutInstruments(registry: Registry) {
  return {
    // Service ids come from the configuration, so labels stay few.
    localServiceDiversions: new Counter({
      name: 'doi_proxy_local_service_diversions_total',
      help: "Redirects sent to a local service instead of the DOI's URL, by service and reason",
      labelNames: ['service', 'reason'] as const, // reason: network, cookie
      registers: [registry]
    }),
    localServiceBypasses: new Counter({
      name: 'doi_proxy_local_service_bypasses_total',
      help: 'Redirects not diverted because the request or the reader said so, by reason',
      labelNames: ['reason'] as const, // nols (nols or nosfx), cookie_none
      registers: [registry]
    }),
    localServiceLoopGuard: new Counter({
      name: 'doi_proxy_local_service_loop_guard_total',
      help: "Diversions not made because the same client was sent to the same DOI's local service within 10 s",
      registers: [registry]
    }),
    linkout: new Counter({
      name: 'doi_proxy_linkout_total',
      help: 'Link-out chain steps: open-access by result (found, missed, timed_out, unavailable), and the step each reader was sent by (service, ezproxy, registered)',
      labelNames: ['step', 'result'] as const, // result: found, missed, timed_out, unavailable for open-access; taken otherwise
      registers: [registry]
    }),
    openAccessLookups: new Counter({
      name: 'doi_proxy_open_access_lookups_total',
      help: 'Open-access lookups past the memory cache, by provider and result (found, none, error, daily_limit, shared: from Redis)',
      labelNames: ['provider', 'result'] as const,
      registers: [registry]
    }),
    openAccessCallsToday: new Gauge({
      name: 'doi_proxy_open_access_calls_today',
      help: 'Calls to the open-access provider this UTC day (over every replica with Redis)',
      registers: [registry]
    }),
    openAccessDailyLimit: new Gauge({
      name: 'doi_proxy_open_access_daily_limit',
      help: 'OA_DAILY_LIMIT: calls to the provider allowed per UTC day (0: a file, no limit)',
      registers: [registry]
    })
  }
}

/** The batch API (POST /api/batch, docs/checking-dois.md). */
function batchInstruments(registry: Registry) {
  return {
    batchRequests: new Counter({
      name: 'doi_proxy_batch_requests_total',
      help: 'Batches by how they ended',
      labelNames: ['outcome'] as const, // answered, left (the reader went away mid-stream), too_large, bad_request, refused, error
      registers: [registry]
    }),
    batchLines: new Counter({
      name: 'doi_proxy_batch_lines_total',
      help: 'Lines answered in batches, by answer',
      labelNames: ['answer'] as const, // registered, unregistered, unknown (upstream failure), invalid (not a DOI name)
      registers: [registry]
    })
  }
}

/** A verdict as the metrics label it: the wire's, and `unknown` for a `null` one (could not be found out). */
export type VerdictLabel = MetadataVerdict | RetractionVerdict | LandingVerdict | 'unknown'

/** `check --verify` and `POST /api/batch?verify=` (issue 41, docs/checking-dois.md). */
function verifyInstruments(registry: Registry) {
  return {
    verifyVerdicts: new Counter({
      name: 'doi_proxy_verify_verdicts_total',
      help: 'Verdicts given to batch lines verified, by level (metadata, retraction, landing) and verdict (unknown: could not be found out)',
      labelNames: ['level', 'verdict'] as const, // level: VerifyLevel; verdict: VerdictLabel
      registers: [registry]
    }),
    landingFetches: new Counter({
      name: 'doi_proxy_landing_fetches_total',
      help: "Landing-page hops (robots.txt included), by outcome: the answer's status class, or why none came or none was asked",
      labelNames: ['outcome'] as const, // 2xx, 3xx, 4xx, 5xx, timeout, dns, tls, connection, refused_address, robots_disallowed
      registers: [registry]
    }),
    retractionLookups: new Counter({
      name: 'doi_proxy_retraction_lookups_total',
      help: 'Retraction lookups past the memory cache, by source (crossref, file, shared: from Redis, recorded: offline) and outcome',
      labelNames: ['source', 'outcome'] as const, // outcome: found (a notice), none, error, other_agency, not_recorded
      registers: [registry]
    })
  }
}

/**
 * Resolution health (issue 42, HEALTH_WATCH): declared always (0 while off), so a dashboard and the alerts
 * read the same series everywhere. The DOIs by verdict are set by each host's database writer from its copy
 * of the fleet's history, so every replica shows the same figures (queries take `max by`); the checks and
 * the newly broken are counted by the one checker of the fleet. `prefix` is a watched prefix, or one of the
 * first others seen, then `other` (src/handle/health/watch.ts): never a label per DOI.
 */
function healthInstruments(registry: Registry) {
  const healthChecks = new Counter({
    name: 'doi_proxy_health_checks_total',
    help: "Health checks made by this process (the fleet's checker), by what each found (error: ours, not the DOI's)",
    labelNames: ['verdict'] as const, // CheckVerdict
    registers: [registry]
  })
  // Every verdict shows from the start, at 0: a rate over a series that appears later misses its first checks.
  for (const verdict of CHECK_VERDICTS) healthChecks.inc({ verdict }, 0)
  return {
    healthChecks,
    healthDois: new Gauge({
      name: 'doi_proxy_health_dois',
      help: 'Watched DOIs by prefix and confirmed verdict (alive, unconfirmed, blocked, dead, takeover, not-found, no-url, unchecked)',
      labelNames: ['prefix', 'verdict'] as const, // verdict: ShownVerdict
      registers: [registry],
      aggregator: 'max' // every replica holds the same copy: never a sum
    }),
    healthNewlyBroken: new Counter({
      name: 'doi_proxy_health_newly_broken_total',
      help: 'DOIs confirmed broken (HEALTH_CONFIRM failures in a row), by prefix and verdict (dead, takeover, not-found, no-url)',
      labelNames: ['prefix', 'verdict'] as const, // verdict: FailureVerdict
      registers: [registry]
    }),
    healthChecker: new Gauge({
      name: 'doi_proxy_health_checker',
      help: "1 while this process is the fleet's health checker (it holds the lease), else 0",
      registers: [registry]
    }),
    healthOverdue: new Gauge({
      name: 'doi_proxy_health_overdue_dois',
      help: 'Watched DOIs whose check is due and not yet made (a host with more DOIs than its limits allow in an interval, the checker paused)',
      registers: [registry],
      aggregator: 'max'
    }),
    healthEnabled: new Gauge({
      name: 'doi_proxy_health_enabled',
      help: '1 when resolution health is on (HEALTH_WATCH or HEALTH_LIST_FILE), else 0',
      registers: [registry],
      aggregator: 'max'
    })
  }
}

/** The shared tier (Redis, src/resolve/cache/shared-tier.ts): registered by observeSharedTier. */
function sharedTierInstruments(registry: Registry) {
  let sharedTierUp = (): boolean => false
  const sharedCache = {
    lookups: new Counter({
      name: 'doi_proxy_shared_cache_total',
      help: 'Shared tier (Redis) outcomes of local misses: hit, miss, waited (another replica was fetching), write',
      labelNames: ['result'] as const,
      registers: []
    }),
    errors: new Counter({
      name: 'doi_proxy_shared_cache_errors_total',
      help: 'Shared tier (Redis) calls given up, by reason: unavailable, timeout, full, error, bad_value',
      labelNames: ['reason'] as const,
      registers: []
    }),
    up: new Gauge({
      name: 'doi_proxy_shared_cache_up',
      help: '1 while lookups use the shared tier (Redis): connected, and not paused after a failure; else 0',
      registers: [],
      aggregator: 'min', // a state, never a sum (see breakerOpen)
      collect() {
        this.set(sharedTierUp() ? 1 : 0)
      }
    })
  }
  return {
    sharedCache,
    /** The shared tier exists: its instruments join /metrics, and `up` says whether it is connected. */
    observeSharedTier(up: () => boolean): void {
      sharedTierUp = up
      registry.registerMetric(sharedCache.lookups)
      registry.registerMetric(sharedCache.errors)
      registry.registerMetric(sharedCache.up)
    }
  }
}

/** What the registry copy (issue 43) shows of itself: its records and coverage per agency. */
export interface CopyFigures {
  /** Records held, by agency (crossref, datacite, other). */
  records: Readonly<Record<string, number>>
  /** The newest time each agency's records are known complete to (coverage.through), seconds since 1970. */
  asOf: Readonly<Record<string, number>>
}

/** The registry copy (src/resolve/copy/): registered by observeCopy when a copy is attached or written. */
function copyInstruments(registry: Registry) {
  let figures = (): CopyFigures => ({ records: {}, asOf: {} })
  const copy = {
    /** hit (answered), too_old (the upstream asked), absent (not held), stand_in (too old, answered as the upstream failed). */
    lookups: talliedCounter({
      name: 'doi_proxy_copy_lookups_total',
      help: 'Registry copy lookups by result: hit, too_old (the upstream was asked), absent, stand_in (the upstream failed)',
      labelNames: ['result'] as const,
      registers: []
    }),
    records: new Gauge({
      name: 'doi_proxy_copy_records',
      help: 'Records held in the registry copy, by agency',
      labelNames: ['agency'] as const,
      registers: [],
      aggregator: 'max', // one copy shared by the workers: the same figure each, never a sum
      collect() {
        for (const [agency, n] of Object.entries(figures().records)) this.set({ agency }, n)
      }
    }),
    asOf: new Gauge({
      name: 'doi_proxy_copy_as_of_seconds',
      help: "The time the registry copy holds an agency's records complete to (its whole file, then each completed update), seconds since 1970",
      labelNames: ['agency'] as const,
      registers: [],
      aggregator: 'max',
      collect() {
        for (const [agency, s] of Object.entries(figures().asOf)) this.set({ agency }, s)
      }
    }),
    updates: new Counter({
      name: 'doi_proxy_copy_updates_total',
      help: 'Registry copy updates by agency and outcome: done, failed, interrupted, disk_full',
      labelNames: ['agency', 'outcome'] as const,
      registers: []
    }),
    citations: new Counter({
      name: 'doi_proxy_copy_citations_total',
      help: "Citations formatted from the registry copy's metadata, by format (bibtex, ris, bibliography) and outcome: done, queue_full, failed",
      labelNames: ['format', 'outcome'] as const,
      registers: []
    })
  }
  return {
    copy,
    /** A copy is attached: its instruments join /metrics, the gauges read `read` when scraped. */
    observeCopy(read: () => CopyFigures): void {
      figures = read
      registry.registerMetric(copy.lookups)
      registry.registerMetric(copy.records)
      registry.registerMetric(copy.asOf)
      registry.registerMetric(copy.updates)
      registry.registerMetric(copy.citations)
    }
  }
}

/** The settings shown beside the figures they bound (`showBounds`). */
export type Bounds = Pick<Config, 'cacheMaxEntries' | 'cacheMaxBytes' | 'upstreamMaxConcurrent' | 'upstreamQueueSize'>

/**
 * The bounds in force, so a dashboard or an alert can set what is used against what is allowed (cache
 * bytes against CACHE_MAX_BYTES, in-flight lookups against UPSTREAM_MAX_CONCURRENT): registered by showBounds.
 */
function boundInstruments(registry: Registry) {
  let boundsShown = false
  const bounds = {
    cacheMaxEntries: new Gauge({
      name: 'doi_proxy_cache_max_entries',
      help: 'CACHE_MAX_ENTRIES: most records the cache holds',
      registers: []
    }),
    cacheMaxBytes: new Gauge({
      name: 'doi_proxy_cache_max_bytes',
      help: 'CACHE_MAX_BYTES: most bytes of records the cache holds',
      registers: []
    }),
    upstreamMaxConcurrent: new Gauge({
      name: 'doi_proxy_upstream_max_concurrent',
      help: 'UPSTREAM_MAX_CONCURRENT: most upstream requests in flight',
      registers: []
    }),
    upstreamQueueSize: new Gauge({
      name: 'doi_proxy_upstream_queue_max',
      help: 'UPSTREAM_QUEUE_SIZE: most lookups waiting for an upstream slot',
      registers: []
    })
  }
  return {
    bounds,
    /** The bounds beside the figures they bound; set once, they change only with the configuration, at a restart. */
    showBounds(config: Bounds): void {
      if (boundsShown) return
      boundsShown = true
      const values = [
        [bounds.cacheMaxEntries, config.cacheMaxEntries],
        [bounds.cacheMaxBytes, config.cacheMaxBytes],
        [bounds.upstreamMaxConcurrent, config.upstreamMaxConcurrent],
        [bounds.upstreamQueueSize, config.upstreamQueueSize]
      ] as const
      for (const [gauge, value] of values) {
        gauge.set(value)
        registry.registerMetric(gauge)
      }
    }
  }
}

export type Metrics = ReturnType<typeof createMetrics>

export interface MetricsOptions {
  /** A node:cluster worker (WORKERS > 1), by its number: /metrics answers with every worker's series. */
  clusterWorker?: { index: number } | undefined
}

// node:cluster: a scrape reaches one worker, and must see the host. The worker asks the primary, which
// asks every worker for its series (prom-client's AggregatorRegistry) and answers with all of them.
const ASK = 'doi-proxy:host-metrics'
const ANSWER = 'doi-proxy:host-metrics-answer'
/** As long as a worker waits for the primary's answer before it answers with its own figures. */
const HOST_METRICS_WAIT_MS = 5_000

interface HostMetricsAnswer {
  type: typeof ANSWER
  id: number
  text?: string
  error?: string
}
const waiting = new Map<number, (answer: HostMetricsAnswer) => void>()
let asked = 0
// Kept for the process's life: constructing it starts prom-client's listener for the primary's asks.
let primaryAsks: AggregatorRegistry<RegistryContentType> | undefined

/**
 * In a node:cluster worker, as soon as it starts (main.ts): answer the primary's asks, with nothing until
 * the app's registry joins (createMetrics), so a scrape during a worker's start does not wait for it.
 */
export function answerPrimaryAsks(): void {
  if (primaryAsks !== undefined || process.send === undefined) return
  AggregatorRegistry.setRegistries([])
  primaryAsks = new AggregatorRegistry()
  process.on('message', (message: Partial<HostMetricsAnswer>) => {
    if (message?.type === ANSWER && typeof message.id === 'number') waiting.get(message.id)?.(message as HostMetricsAnswer)
  })
}

/** The worker's registry is what it reports when the primary asks. */
function joinHost(registry: Registry): void {
  answerPrimaryAsks()
  if (primaryAsks !== undefined) AggregatorRegistry.setRegistries(registry)
}

/** The host's figures, from the primary; this worker's own when the primary does not answer in time (or there is none). */
async function hostMetrics(registry: Registry): Promise<string> {
  if (primaryAsks === undefined) return await registry.metrics()
  const id = ++asked
  const answer = await new Promise<HostMetricsAnswer | undefined>((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(id)
      resolve(undefined)
    }, HOST_METRICS_WAIT_MS)
    waiting.set(id, (got) => {
      clearTimeout(timer)
      waiting.delete(id)
      resolve(got)
    })
    process.send?.({ type: ASK, id })
  })
  return answer?.text ?? (await registry.metrics())
}

/** In the node:cluster primary: answer each worker's ask with every worker's series. */
export function answerHostMetrics(): void {
  const aggregator = new AggregatorRegistry()
  // Scrapes at the same moment share one round of asks: /metrics is open to anyone who can reach it.
  let round: Promise<string> | undefined
  cluster.on('message', (worker, message: { type?: unknown; id?: unknown }) => {
    if (message?.type !== ASK || typeof message.id !== 'number') return
    const id = message.id
    round ??= aggregator.clusterMetrics().finally(() => {
      round = undefined
    })
    round.then(
      (text) => {
        if (worker.isConnected()) worker.send({ type: ANSWER, id, text })
      },
      (err: unknown) => {
        if (worker.isConnected()) worker.send({ type: ANSWER, id, error: (err as Error).message })
      }
    )
  })
}
