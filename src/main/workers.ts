import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import type { Config } from '../config/schema.js'
import { workerShareOf } from '../config/schema.js'
import { defaultWorkers } from './cpu-quota.js'

/** The server processes WORKERS asks for: itself, or for 0 one per core the container may use (cgroup cpu.max, else the machine's). */
export function workerCount(workers: number): number {
  return workers === 0 ? defaultWorkers(readCpuMax(), availableParallelism()) : workers
}

function readCpuMax(): string | undefined {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8')
  } catch {
    return undefined
  }
}

/**
 * The settings that bound the whole host's traffic to others: doi.org, the agencies, the open-access
 * provider, Crossref's REST API, each landing-page host.
 */
const HOST_BUDGETS = [
  'upstreamMaxConcurrent',
  'upstreamConnections',
  'metadataAgencyConcurrency',
  'oaConnections',
  'crossrefConcurrency',
  'landingPerHost'
] as const
type HostBudget = (typeof HOST_BUDGETS)[number]
type Shared = HostBudget | 'landingHostDelayMs'

/**
 * A worker's share of the host's budgets. Each worker is a whole server with its own fair queue and
 * pools, so WORKERS=N would otherwise let the host send N × UPSTREAM_MAX_CONCURRENT requests to doi.org
 * at once. Each gets 1/N (rounded down), at least one. A landing host's gap between starts is N times
 * longer in each worker, so that together they start no more often than LANDING_HOST_DELAY_MS allows
 * (REDIS_URL spaces them exactly: src/resolve/landing/fleet-host-slots.ts). (OA_DAILY_LIMIT is shared by
 * its counter: src/services/open-access.ts.)
 */
export function workerShare(config: Pick<Config, Shared>, workers: number): Pick<Config, Shared> {
  const share = (setting: number): number => workerShareOf(setting, workers)
  return {
    upstreamMaxConcurrent: share(config.upstreamMaxConcurrent),
    upstreamConnections: share(config.upstreamConnections),
    metadataAgencyConcurrency: share(config.metadataAgencyConcurrency),
    oaConnections: share(config.oaConnections),
    crossrefConcurrency: share(config.crossrefConcurrency),
    landingPerHost: share(config.landingPerHost),
    landingHostDelayMs: config.landingHostDelayMs * Math.max(1, workers)
  }
}

type InUse = Pick<Config, 'verifyLevels' | 'retractionsFrom' | 'redisUrl' | 'redisSentinels' | 'redisClusterNodes'>

/**
 * The budgets WORKERS=N exceeds even at one each (their settings are below N): for a warning at start.
 * Only budgets in use: Crossref's when retractions are asked of it, a landing host's when landing pages
 * are visited and no Redis holds the fleet's host slots (with it, the fleet keeps LANDING_PER_HOST).
 */
export function budgetsExceeded(config: Pick<Config, HostBudget> & InUse, workers: number): HostBudget[] {
  const fleetSlots = config.redisUrl !== undefined || config.redisSentinels.length > 0 || config.redisClusterNodes.length > 0
  const inUse: Record<HostBudget, boolean> = {
    upstreamMaxConcurrent: true,
    upstreamConnections: true,
    metadataAgencyConcurrency: true,
    oaConnections: true,
    crossrefConcurrency: config.verifyLevels.includes('retraction') && config.retractionsFrom === 'crossref',
    landingPerHost: config.verifyLevels.includes('landing') && !fleetSlots
  }
  return HOST_BUDGETS.filter((name) => inUse[name] && config[name] < workers)
}
