import { describe, expect, it, onTestFinished } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import type { Config } from '../../src/config/schema.js'
import { DelayProxy } from '../support/delay-proxy.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { useTestRedis } from '../support/redis.js'
import { TOPOLOGY_RECORDS, replicaApp } from '../support/replica-apps.js'

// A Redis answering steadily but slowly (docs/deployment.md, "What one upstream request per DOI means when
// Redis is slow"): a real redis-server behind a relay on 127.0.0.1 that delays every reply.

const ROUND_TRIP_MS = 300

const redis = useTestRedis()

interface Rig {
  apps: FastifyInstance[]
  upstream: FakeUpstream
  logs: Array<{ level: number; msg: string }>
}

/** Two replicas on one upstream, their Redis ROUND_TRIP_MS away. */
async function rig(overrides: Partial<Config>): Promise<Rig> {
  const upstream = await FakeUpstream.start(TOPOLOGY_RECORDS)
  onTestFinished(() => upstream.close())
  const proxy = await DelayProxy.start(Number(new URL(redis().url).port), ROUND_TRIP_MS / 2)
  onTestFinished(() => proxy.close())
  const logs: Array<{ level: number; msg: string }> = []
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        logs.push(JSON.parse(line) as { level: number; msg: string })
      }
    }
  )
  const apps: FastifyInstance[] = []
  for (let i = 0; i < 2; i++) apps.push(await replicaApp(upstream, { redisUrl: proxy.url, ...overrides }, { logger }))
  return { apps, upstream, logs }
}

/** Both replicas ask each DOI at once; how long each pair took. */
async function bothAsk(apps: FastifyInstance[], dois: string[]): Promise<number[]> {
  const took: number[] = []
  for (const doi of dois) {
    const started = performance.now()
    const answers = await Promise.all(apps.map(async (app) => await app.inject(`/${doi}`)))
    took.push(performance.now() - started)
    for (const res of answers) expect(res.statusCode, doi).toBe(302)
  }
  return took
}

describe('Redis answering steadily slower than REDIS_COMMAND_TIMEOUT_MS', () => {
  it('the log says it answers too slowly, not that it cannot be reached, and each replica resolves on its own', async () => {
    const { apps, upstream, logs } = await rig({ redisCommandTimeoutMs: 100, redisConnectTimeoutMs: 2000 })
    const warning = logs.filter((l) =>
      l.msg.startsWith('the shared cache (Redis) accepts connections but answers slower than REDIS_COMMAND_TIMEOUT_MS (100 ms)')
    )
    expect(warning).toHaveLength(2) // one per replica
    expect(logs.filter((l) => l.msg.includes('is not reachable'))).toEqual([])
    const dois = ['10.5555/topo-1', '10.5555/topo-2', '10.5555/topo-3']
    const took = await bothAsk(apps, dois)
    // Not sharing: each replica asked the upstream for each DOI once, without waiting on Redis.
    for (const doi of dois) expect(upstream.count(doi)).toBe(2)
    // The median pair, not the slowest: on a loaded machine one pair may stall on the CPU, not on Redis.
    expect([...took].sort((a, b) => a - b)[1]).toBeLessThan(ROUND_TRIP_MS * 3)
  }, 60_000)

  it('with REDIS_COMMAND_TIMEOUT_MS above its round trip, replicas share: one upstream request per DOI', async () => {
    const { apps, upstream } = await rig({ redisCommandTimeoutMs: 1000, redisConnectTimeoutMs: 10_000 })
    expect(await bothAsk(apps, ['10.5555/topo-0'])).toHaveLength(1) // the prefix record is shared too
    const dois = ['10.5555/topo-1', '10.5555/topo-2', '10.5555/topo-3']
    const took = await bothAsk(apps, dois)
    for (const doi of dois) expect(upstream.count(doi)).toBe(1)
    // The price: round trips to Redis before and while one replica fetches (docs/deployment.md has the figures).
    expect(Math.min(...took)).toBeGreaterThanOrEqual(ROUND_TRIP_MS * 3)
  }, 60_000)
})
