import { describe, expect, it } from 'vitest'
import { defaultConfig } from '../src/config/schema.js'
import type { Config } from '../src/config/schema.js'
import { workerShare } from '../src/main/workers.js'

// WORKERS processes are one host to doi.org, the agencies and the open-access provider: src/main/workers.ts.
const config = (overrides: Partial<Config> = {}): Config => ({ ...defaultConfig(), ...overrides })

describe('a worker\'s share of the host\'s budgets', () => {
  const vectors: Array<{ why: string, config: Config, workers: number, share: ReturnType<typeof workerShare> }> = [
    // The defaults (16, 16, 4, 8, 90,000) over the image's two cores: half each.
    { why: 'defaults, two workers', config: config(), workers: 2, share: { upstreamMaxConcurrent: 8, upstreamConnections: 8, metadataAgencyConcurrency: 2, oaConnections: 4, oaDailyLimit: 45_000 } },
    // Rounded down, so that together they stay within the setting.
    { why: 'defaults, three workers', config: config(), workers: 3, share: { upstreamMaxConcurrent: 5, upstreamConnections: 5, metadataAgencyConcurrency: 1, oaConnections: 2, oaDailyLimit: 30_000 } },
    // At least one each: a worker that may never ask would answer nothing.
    { why: 'more workers than slots', config: config(), workers: 32, share: { upstreamMaxConcurrent: 1, upstreamConnections: 1, metadataAgencyConcurrency: 1, oaConnections: 1, oaDailyLimit: 2_812 } },
    // With Redis the open-access day is counted there, over every worker (src/resolve/open-access.ts spend).
    { why: 'REDIS_URL: the day is counted in Redis', config: config({ redisUrl: 'redis://127.0.0.1:6379' }), workers: 2, share: { upstreamMaxConcurrent: 8, upstreamConnections: 8, metadataAgencyConcurrency: 2, oaConnections: 4, oaDailyLimit: 90_000 } },
    { why: 'REDIS_SENTINELS too', config: config({ redisSentinels: ['127.0.0.1:26379'], redisSentinelMaster: 'main' }), workers: 4, share: { upstreamMaxConcurrent: 4, upstreamConnections: 4, metadataAgencyConcurrency: 1, oaConnections: 2, oaDailyLimit: 90_000 } },
    { why: 'REDIS_CLUSTER_NODES too', config: config({ redisClusterNodes: ['127.0.0.1:7000'] }), workers: 4, share: { upstreamMaxConcurrent: 4, upstreamConnections: 4, metadataAgencyConcurrency: 1, oaConnections: 2, oaDailyLimit: 90_000 } }
  ]
  for (const v of vectors) {
    it(v.why, () => { expect(workerShare(v.config, v.workers)).toEqual(v.share) })
  }
})
