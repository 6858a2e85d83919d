import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config } from '../../src/config/schema.js'
import { admin, str } from '../support/records.js'
import { TestCluster } from '../support/redis.js'
import { metric, replicaApp, sharedUp, topologyUpstream, waitFor } from '../support/replica-apps.js'

// A Redis Cluster reached as the ACL user docs/deployment.md gives for a Cluster (its line with
// `+cluster|…`), with our password: records shared, purges told, and the cluster's own word heard.
const DOCUMENTED = /^user (doi-proxy on >change-me .*\+cluster\|.*)$/m.exec(
  readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8')
)?.[1]
const ACL_USER = (DOCUMENTED ?? 'docs/deployment.md has no ACL line for a Cluster').replace('>change-me', '>doi-secret-1')

let cluster: TestCluster

beforeAll(async () => {
  cluster = await TestCluster.start({ users: [ACL_USER] })
}, 30_000)
afterAll(async () => {
  await cluster?.close()
})

function asUser(overrides: Partial<Config> = {}): Partial<Config> {
  return { redisClusterNodes: [cluster.masters[0]?.address ?? ''], redisUsername: 'doi-proxy', redisPassword: 'doi-secret-1', ...overrides }
}

describe('a Redis Cluster through the documented ACL user', () => {
  it('replicas share records, and a purge reaches the other replica', async () => {
    const upstream = await topologyUpstream()
    const token = 'd'.repeat(40)
    const a = await replicaApp(upstream, asUser({ adminToken: token, negativeTtlSeconds: 3600 }))
    const b = await replicaApp(upstream, asUser({ adminToken: token, negativeTtlSeconds: 3600 }))
    for (let i = 0; i < 6; i++) expect((await a.inject({ url: `/10.5555/topo-${i}` })).statusCode).toBe(302)
    for (let i = 0; i < 6; i++) expect((await b.inject({ url: `/10.5555/topo-${i}` })).statusCode).toBe(302)
    for (let i = 0; i < 6; i++) expect(upstream.count(`10.5555/topo-${i}`)).toBe(1)
    expect(await metric(b, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/m)).toBeGreaterThanOrEqual(6)
    expect((await b.inject({ url: '/10.5555/later' })).statusCode).toBe(404)
    upstream.set('10.5555/later', [admin(), str(1, 'URL', 'http://example.org/later')])
    await waitFor(async () => {
      const res = await a.inject({ method: 'DELETE', url: '/api/cache/10.5555/later', headers: { authorization: `Bearer ${token}` } })
      expect(res.statusCode).toBe(200)
      return (await b.inject({ url: '/10.5555/later' })).statusCode === 302
    })
  })

  it('doi_proxy_shared_cache_up says 0 while the cluster reports itself down (cluster_state:fail)', async () => {
    const upstream = await topologyUpstream()
    // Idle: only the cluster's answer to CLUSTER INFO, which the user may ask, can move the gauge.
    const a = await replicaApp(upstream, asUser())
    await waitFor(async () => await sharedUp(a))
    const sleeper = cluster.masters[2]?.client()
    const sleeping = sleeper?.call('DEBUG', 'SLEEP', '5').catch(() => {})
    try {
      await waitFor(async () => !(await sharedUp(a)))
    } finally {
      await sleeping
      sleeper?.disconnect()
    }
    await waitFor(async () => await sharedUp(a), 15_000)
  }, 30_000)
})
