import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import type { Config } from '../config/schema.js'
import { defaultWorkers } from './cpu-quota.js'

/** The server processes WORKERS asks for: itself, or for 0 one per core the container may use (cgroup cpu.max, else the machine's). */
export function workerCount (workers: number): number {
  return workers === 0 ? defaultWorkers(readCpuMax(), availableParallelism()) : workers
}

function readCpuMax (): string | undefined {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8')
  } catch {
    return undefined
  }
}

/** The settings that bound the whole host's traffic to others (doi.org, the agencies, the open-access provider). */
type HostBudget = 'upstreamMaxConcurrent' | 'upstreamConnections' | 'metadataAgencyConcurrency' | 'oaConnections' | 'oaDailyLimit'

/**
 * A worker's share of the host's budgets. Each worker is a whole server with its own fair queue, pools
 * and counters, so WORKERS=N would otherwise let the host send N × UPSTREAM_MAX_CONCURRENT requests to
 * doi.org at once and call the open-access provider N × OA_DAILY_LIMIT times a day. Each gets
 * 1/N (rounded down), at least one. The open-access day is counted in Redis over every worker when there
 * is one (src/resolve/open-access.ts), so there each keeps the whole limit.
 */
export function workerShare (config: Config, workers: number): Pick<Config, HostBudget> {
  const share = (setting: number): number => Math.max(1, Math.floor(setting / workers))
  const sharedRedis = config.redisUrl !== undefined || config.redisSentinels.length > 0 || config.redisClusterNodes.length > 0
  return {
    upstreamMaxConcurrent: share(config.upstreamMaxConcurrent),
    upstreamConnections: share(config.upstreamConnections),
    metadataAgencyConcurrency: share(config.metadataAgencyConcurrency),
    oaConnections: share(config.oaConnections),
    oaDailyLimit: sharedRedis ? config.oaDailyLimit : share(config.oaDailyLimit)
  }
}
