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

/** The settings that bound the whole host's traffic to others: doi.org, the agencies, the open-access provider. */
const HOST_BUDGETS = ['upstreamMaxConcurrent', 'upstreamConnections', 'metadataAgencyConcurrency', 'oaConnections'] as const
type HostBudget = (typeof HOST_BUDGETS)[number]

/**
 * A worker's share of the host's budgets. Each worker is a whole server with its own fair queue and
 * pools, so WORKERS=N would otherwise let the host send N × UPSTREAM_MAX_CONCURRENT requests to doi.org
 * at once. Each gets 1/N (rounded down), at least one. (OA_DAILY_LIMIT is shared by its counter:
 * src/services/open-access.ts.)
 */
export function workerShare(config: Pick<Config, HostBudget>, workers: number): Pick<Config, HostBudget> {
  const share = (setting: number): number => workerShareOf(setting, workers)
  return {
    upstreamMaxConcurrent: share(config.upstreamMaxConcurrent),
    upstreamConnections: share(config.upstreamConnections),
    metadataAgencyConcurrency: share(config.metadataAgencyConcurrency),
    oaConnections: share(config.oaConnections)
  }
}

/** The budgets WORKERS=N exceeds even at one each (their settings are below N): for a warning at start. */
export function budgetsExceeded(config: Pick<Config, HostBudget>, workers: number): HostBudget[] {
  return HOST_BUDGETS.filter((name) => config[name] < workers)
}
