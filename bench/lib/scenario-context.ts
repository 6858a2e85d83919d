/**
 * What every benchmark scenario is given (Context, its Settings) and what it gives back (one Row per
 * server), below the scenarios (bench/lib/scenarios.ts), the batch scenario (bench/lib/batch.ts) and the
 * report (bench/lib/results.ts), which all read them: none of the three imports another to learn them.
 */
import type { LoadResult } from './load.js'
import type { UpstreamProcess } from './processes.js'
import type { GeneratorName } from './wrk.js'

export const SCENARIOS = ['client', 'hot', 'zipf', 'cold', 'storm', 'not-found', 'api', 'conneg', 'metadata', 'linkout', 'batch'] as const
export type ScenarioName = (typeof SCENARIOS)[number]

export interface Settings {
  quick: boolean
  /** Measured seconds per server (after a warm-up run of warmupS): cold's one run; the steady scenarios' rounds × roundS. */
  measureS: number
  /** The steady scenarios measure each server in this many alternating rounds… */
  rounds: number
  /** …of this many seconds each. */
  roundS: number
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

export function settingsFor(quick: boolean): Settings {
  return {
    quick,
    measureS: quick ? 3 : 10,
    rounds: quick ? 3 : 5,
    roundS: quick ? 1 : 2,
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
  /** The server's CPU time (its workers' included) per answer during the measured rounds, µs. */
  cpuPerAnswerUs?: number
  /**
   * The steady scenarios: each round's figure divided by the floor's in the same round, the median over
   * the rounds (a slow stretch of the machine falls on both sides of each ratio).
   */
  paired?: { rps: number; p99: number; cpu?: number | undefined }
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
  /** --before: an older build of ours (bench/lib/before.ts), run wherever ours runs, started the same way. */
  before?: { dir: string; name: string } | undefined
  /** What drives the load (bench/lib/wrk.ts): wrk, or autocannon when wrk could not be installed. */
  generator: GeneratorName
  log: (line: string) => void
}
