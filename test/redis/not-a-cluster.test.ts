import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pino from 'pino'
import { TestRedis } from '../support/redis.js'
import { replicaApp, sharedUp, topologyUpstream } from '../support/replica-apps.js'

// REDIS_CLUSTER_NODES naming a single Redis server (no cluster): the start says what is wrong, not that it is unreachable.

let single: TestRedis
beforeAll(async () => {
  single = await TestRedis.start()
})
afterAll(async () => {
  await single?.close()
})

describe('REDIS_CLUSTER_NODES pointing at a Redis that is not a cluster', () => {
  it('is said at start as such, naming the node, and the replica resolves on its own', async () => {
    const upstream = await topologyUpstream()
    const lines: string[] = []
    const logger = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          lines.push(line)
        }
      }
    )
    const app = await replicaApp(upstream, { redisClusterNodes: [single.address], redisConnectTimeoutMs: 1000 }, { logger })
    const warned = lines
      .map((l) => JSON.parse(l) as { level: number; msg: string; nodes?: string[] })
      .filter((l) => l.level === 40 && /redis|cluster/i.test(l.msg))
    expect(warned.map((l) => l.msg)).toEqual([expect.stringContaining('REDIS_CLUSTER_NODES names a Redis that is not a cluster')])
    expect(warned[0]?.nodes).toEqual([single.address])
    expect((await app.inject({ url: '/10.5555/topo-1' })).statusCode).toBe(302)
    expect(await sharedUp(app)).toBe(false)
  })
})
