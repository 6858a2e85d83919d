import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config } from '../../src/config/schema.js'
import { TestCluster } from '../support/redis.js'
import { metric, replicaApp, sharedUp, topologyUpstream, waitFor } from '../support/replica-apps.js'

// REDIS_CLUSTER_NODES (issue 27): a real three-master Redis Cluster.

let cluster: TestCluster

beforeAll(async () => {
  cluster = await TestCluster.start()
}, 30_000)
afterAll(async () => {
  await cluster?.close()
})

function viaCluster(overrides: Partial<Config> = {}): Partial<Config> {
  // One node named is enough: the others are found from it. (replicaApp's command timeout is one a busy
  // test machine keeps to: a first request compiles much code.)
  return { redisClusterNodes: [cluster.masters[0]?.address ?? ''], ...overrides }
}

describe('a Redis Cluster', () => {
  it('records are spread over the three masters, and every replica finds each of them', async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, viaCluster())
    const b = await replicaApp(upstream, viaCluster())
    for (let i = 0; i < 30; i++) expect((await a.inject({ url: `/10.5555/topo-${i}` })).statusCode).toBe(302)
    for (let i = 0; i < 30; i++) {
      expect((await b.inject({ url: `/10.5555/topo-${i}` })).headers.location).toBe(`http://example.org/topo-${i}`)
    }
    for (let i = 0; i < 30; i++) expect(upstream.count(`10.5555/topo-${i}`)).toBe(1)
    expect(await metric(b, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/m)).toBeGreaterThanOrEqual(30)
    const sizes = await Promise.all(
      cluster.masters.map(async (master) => {
        const client = master.client()
        try {
          return await client.dbsize()
        } finally {
          client.disconnect()
        }
      })
    )
    expect(sizes.every((size) => size >= 3)).toBe(true)
  })

  it('replicas that miss the same DOIs at once make one upstream request per DOI between them', async () => {
    const upstream = await topologyUpstream()
    const apps = [
      await replicaApp(upstream, viaCluster()),
      await replicaApp(upstream, viaCluster()),
      await replicaApp(upstream, viaCluster())
    ]
    upstream.mode = { kind: 'slow', delayMs: 300 }
    const dois = [30, 31, 32, 33, 34, 35].map((i) => `10.5555/topo-${i}`)
    const answers = await Promise.all(dois.flatMap((doi) => apps.map(async (app) => [doi, await app.inject({ url: `/${doi}` })] as const)))
    for (const [doi, res] of answers) expect(res.headers.location).toBe(`http://example.org/${doi.slice(8)}`)
    for (const doi of dois) expect(upstream.count(doi)).toBe(1)
  })

  it('rate-limit counters are shared by the replicas through the cluster', async () => {
    const upstream = await topologyUpstream()
    const limits = viaCluster({ rateLimitMax: 2, rateLimitWindowMs: 60_000, rateLimitAllowList: [] })
    const a = await replicaApp(upstream, limits)
    const b = await replicaApp(upstream, limits)
    const from = { remoteAddress: '203.0.113.9' }
    expect((await a.inject({ url: '/10.5555/topo-40', ...from })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/topo-41', ...from })).statusCode).toBe(302)
    expect((await a.inject({ url: '/10.5555/topo-42', ...from })).statusCode).toBe(429)
  })

  it('doi_proxy_shared_cache_up says 0 while the cluster reports itself down (cluster_state:fail), and 1 once it is ok', async () => {
    const upstream = await topologyUpstream()
    // Idle: no lookup finds the cluster failing; only the cluster's own word can move the gauge.
    const a = await replicaApp(upstream, viaCluster())
    await waitFor(async () => await sharedUp(a))
    // A master that stops answering for longer than cluster-node-timeout (1 s) is counted lost by the other two.
    const sleeper = cluster.masters[2]?.client()
    const sleeping = sleeper?.call('DEBUG', 'SLEEP', '5').catch(() => {})
    try {
      await waitFor(async () => {
        const client = cluster.masters[0]?.client()
        try {
          return /cluster_state:fail/.test(String(await client?.cluster('INFO')))
        } finally {
          client?.disconnect()
        }
      })
      await waitFor(async () => !(await sharedUp(a)))
    } finally {
      await sleeping
      sleeper?.disconnect()
    }
    await waitFor(async () => await sharedUp(a), 15_000)
  }, 30_000)

  // Last: it takes a master away for good.
  it("a master lost: answers keep coming, from each replica's own cache for what it holds", async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, viaCluster({ redisCommandTimeoutMs: 200 }))
    const b = await replicaApp(upstream, viaCluster({ redisCommandTimeoutMs: 200 }))
    for (let i = 0; i < 10; i++) expect((await a.inject({ url: `/10.5555/topo-${i}` })).statusCode).toBe(302)
    await waitFor(async () => await sharedUp(b))
    await cluster.masters[1]?.kill()
    const asked = upstream.seen.length
    for (let i = 0; i < 10; i++) {
      const started = performance.now()
      const res = await a.inject({ url: `/10.5555/topo-${i}` })
      expect(res.headers.location).toBe(`http://example.org/topo-${i}`)
      expect(res.headers['x-cache']).toBe('HIT')
      expect(performance.now() - started).toBeLessThan(500)
    }
    expect(upstream.seen.length).toBe(asked)
    // What no replica holds is asked upstream, Redis or not, and the readiness probe stays green.
    for (let i = 50; i < 55; i++) {
      const started = performance.now()
      expect((await b.inject({ url: `/10.5555/topo-${i}` })).headers.location).toBe(`http://example.org/topo-${i}`)
      expect(performance.now() - started).toBeLessThan(1500)
    }
    expect((await b.inject({ url: '/readyz' })).statusCode).toBe(200)
    const errors =
      (await metric(b, /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m)) +
      (await metric(b, /^doi_proxy_shared_cache_errors_total\{reason="unavailable"\} (\d+)/m)) +
      (await metric(b, /^doi_proxy_shared_cache_errors_total\{reason="error"\} (\d+)/m))
    expect(errors).toBeGreaterThan(0)
  })

  // After the one above: the master stays gone. The cluster client still says 'ready'; the metric says
  // what lookups do (it said 1 here before).
  it("a master lost: doi_proxy_shared_cache_up says 0 once a replica's lookups find the cluster failing", async () => {
    const upstream = await topologyUpstream()
    const c = await replicaApp(upstream, viaCluster({ redisCommandTimeoutMs: 200 }))
    // A new replica: each DOI is a miss for it, and a miss asks the shared tier first.
    let i = 0
    await waitFor(async () => {
      expect((await c.inject({ url: `/10.5555/topo-${i}` })).headers.location).toBe(`http://example.org/topo-${i}`)
      i = (i + 1) % 60
      return (await metric(c, /^doi_proxy_shared_cache_up (\d+)/m)) === 0
    })
  })
})
