import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../src/config/schema.js'
import { TestSentinels } from '../support/redis.js'
import type { TestRedis } from '../support/redis.js'
import { metric, replicaApp, sharedUp, topologyUpstream, waitFor } from '../support/replica-apps.js'

// REDIS_SENTINELS (issue 27): a master and its replica watched by three real Sentinels; the replicas
// of doi-proxy find the master through them and follow it through a failover.

let group: TestSentinels

beforeAll(async () => {
  group = await TestSentinels.start({ password: 'sentinel-data-pw' })
}, 30_000)
afterAll(async () => {
  await group?.close()
})

function viaSentinels(): Partial<Config> {
  return { redisSentinels: group.sentinelList.split(','), redisSentinelMaster: group.masterName, redisPassword: 'sentinel-data-pw' }
}

/** How many connections named doi-proxy a server has (CLIENT LIST). */
async function ourConnections(server: TestRedis): Promise<number> {
  const client = server.client()
  try {
    return ((await client.client('LIST')) as string).split('\n').filter((line) => / name=doi-proxy /.test(line)).length
  } finally {
    client.disconnect()
  }
}

describe('Redis behind Sentinels', () => {
  it('replicas find the master through the Sentinels and share records', async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, viaSentinels())
    const b = await replicaApp(upstream, viaSentinels())
    expect((await a.inject({ url: '/10.5555/topo-1' })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/topo-1' })).headers.location).toBe('http://example.org/topo-1')
    expect(upstream.count('10.5555/topo-1')).toBe(1)
    const master = await group.master()
    const client = master.client()
    try {
      expect(await client.keys('*TOPO-1*')).toHaveLength(1)
    } finally {
      client.disconnect()
    }
  })

  it('a failover during traffic loses no answer, and the replicas follow the new master', async () => {
    const upstream = await topologyUpstream()
    const apps: FastifyInstance[] = [await replicaApp(upstream, viaSentinels()), await replicaApp(upstream, viaSentinels())]
    await waitFor(async () => (await Promise.all(apps.map(sharedUp))).every(Boolean))
    const before = await group.master()
    expect(await ourConnections(before)).toBeGreaterThanOrEqual(2)

    // Two readers per replica ask for DOIs one after another until the failover is over.
    const statuses: number[] = []
    const traffic = { on: true }
    let n = 0
    const reader = async (app: FastifyInstance): Promise<void> => {
      while (traffic.on) {
        const res = await app.inject({ url: `/10.5555/topo-${n++ % 40}` })
        statuses.push(res.statusCode)
        // A cached answer comes back without any I/O: let timers (and the failover) run between requests.
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    const readers = Promise.all([...apps, ...apps].map(reader))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const after = await group.failover()
    await new Promise((resolve) => setTimeout(resolve, 300))
    traffic.on = false
    await readers
    expect(after).not.toBe(before)
    expect(statuses.length).toBeGreaterThan(20)
    expect(statuses.filter((status) => status !== 302)).toEqual([])

    // Both replicas are connected to the new master, none to the old one (now its replica) …
    await waitFor(async () => (await ourConnections(after)) >= 2 && (await Promise.all(apps.map(sharedUp))).every(Boolean))
    expect(await ourConnections(before)).toBe(0)
    // … and share records through it again.
    const [a, b] = apps as [FastifyInstance, FastifyInstance]
    await waitFor(async () => {
      const url = `/10.5555/topo-${40 + (n++ % 20)}`
      const asked = upstream.count(url.slice(1))
      await a.inject({ url })
      await b.inject({ url })
      return upstream.count(url.slice(1)) === asked + 1 && asked === 0
    })
    expect(await metric(b, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/m)).toBeGreaterThan(0)
  })
})
