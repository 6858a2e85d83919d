import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pino from 'pino'
import { TestRedis, makeTestCa } from '../support/redis.js'
import type { TestCa } from '../support/redis.js'
import { admin, str } from '../support/records.js'
import { metric, replicaApp, sharedUp, topologyUpstream, waitFor } from '../support/replica-apps.js'

// Redis past a bare URL (issue 27): a password, an ACL user, TLS with a private CA, against real redis-servers.

// The least a doi-proxy user needs, as docs/deployment.md gives it (its own keys, reads, writes, the rate
// limiter's script, naming its connection and the INFO of ioredis' ready check), with our password.
const DOCUMENTED = /^user (doi-proxy on >change-me .*)$/m.exec(
  readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8')
)?.[1]
const ACL_USER = (DOCUMENTED ?? 'docs/deployment.md has no ACL line').replace('>change-me', '>doi-secret-1')

let secured: TestRedis
let ca: TestCa
let tls: TestRedis

beforeAll(async () => {
  ca = await makeTestCa()
  ;[secured, tls] = await Promise.all([TestRedis.start({ password: 'admin-secret-9', users: [ACL_USER] }), TestRedis.start({ tls: ca })])
})
afterAll(async () => {
  await Promise.all([secured?.close(), tls?.close()])
  ca?.close()
})

describe('a Redis that asks for a password', () => {
  it('replicas share records through an ACL user, given in REDIS_URL or in REDIS_USERNAME and REDIS_PASSWORD', async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, { redisUrl: `redis://doi-proxy:doi-secret-1@127.0.0.1:${secured.port}` })
    const b = await replicaApp(upstream, {
      redisUrl: `redis://127.0.0.1:${secured.port}`,
      redisUsername: 'doi-proxy',
      redisPassword: 'doi-secret-1'
    })
    expect((await a.inject({ url: '/10.5555/topo-1' })).statusCode).toBe(302)
    const res = await b.inject({ url: '/10.5555/topo-1' })
    expect(res.headers.location).toBe('http://example.org/topo-1')
    expect(upstream.count('10.5555/topo-1')).toBe(1)
    // The DOI and its prefix's record (read for 10320/loc) each come to b from Redis.
    expect(upstream.count('10.5555')).toBe(1)
    expect(await metric(b, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/m)).toBe(2)
  })

  it("a purge reaches the other replica through the documented ACL user's channels", async () => {
    const upstream = await topologyUpstream()
    const token = 'd'.repeat(40)
    const viaUser = { redisUrl: `redis://doi-proxy:doi-secret-1@127.0.0.1:${secured.port}`, adminToken: token, negativeTtlSeconds: 3600 }
    const a = await replicaApp(upstream, viaUser)
    const b = await replicaApp(upstream, viaUser)
    expect((await b.inject({ url: '/10.5555/later' })).statusCode).toBe(404)
    upstream.set('10.5555/later', [admin(), str(1, 'URL', 'http://example.org/later')])
    // b subscribes as it connects: the purge is told again until b has heard it (a purge may be repeated).
    await waitFor(async () => {
      const res = await a.inject({ method: 'DELETE', url: '/api/cache/10.5555/later', headers: { authorization: `Bearer ${token}` } })
      expect(res.json()).toMatchObject({ redis: 'deleted', told: 'redis' })
      return (await b.inject({ url: '/10.5555/later' })).statusCode === 302
    })
  })

  it("replicas share records through requirepass's password alone (redis://:password@…)", async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, { redisUrl: `redis://:admin-secret-9@127.0.0.1:${secured.port}` })
    const b = await replicaApp(upstream, { redisUrl: `redis://127.0.0.1:${secured.port}`, redisPassword: 'admin-secret-9' })
    expect((await a.inject({ url: '/10.5555/topo-2' })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/topo-2' })).headers.location).toBe('http://example.org/topo-2')
    expect(upstream.count('10.5555/topo-2')).toBe(1)
  })

  it('with a wrong password the replica resolves on its own, and no log line shows the password', async () => {
    const upstream = await topologyUpstream()
    const lines: string[] = []
    const logger = pino(
      { level: 'debug' },
      {
        write: (line: string) => {
          lines.push(line)
        }
      }
    )
    const a = await replicaApp(
      upstream,
      { redisUrl: `redis://doi-proxy:not-the-password-7@127.0.0.1:${secured.port}`, redisConnectTimeoutMs: 300 },
      { logger }
    )
    expect((await a.inject({ url: '/readyz' })).statusCode).toBe(200)
    expect((await a.inject({ url: '/10.5555/topo-3' })).statusCode).toBe(302)
    expect(await sharedUp(a)).toBe(false)
    const warned = lines.find((line) => line.includes('not reachable'))
    expect(warned).toContain(`redis://doi-proxy:***@127.0.0.1:${secured.port}`)
    expect(lines.join('\n')).not.toContain('not-the-password-7')
  })
})

describe('a Redis over TLS (rediss://)', () => {
  it("replicas share records through a server whose certificate REDIS_TLS_CA_FILE's CA signed", async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, { redisUrl: tls.url, redisTlsCaFile: ca.caFile })
    const b = await replicaApp(upstream, { redisUrl: tls.url, redisTlsCaFile: ca.caFile })
    expect(tls.url.startsWith('rediss://')).toBe(true)
    expect((await a.inject({ url: '/10.5555/topo-4' })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/topo-4' })).headers.location).toBe('http://example.org/topo-4')
    expect(upstream.count('10.5555/topo-4')).toBe(1)
    expect(await sharedUp(b)).toBe(true)
  })

  it('a server whose certificate no trusted CA signed is not used: the replica resolves on its own', async () => {
    const upstream = await topologyUpstream()
    const a = await replicaApp(upstream, { redisUrl: tls.url, redisConnectTimeoutMs: 300 })
    expect((await a.inject({ url: '/10.5555/topo-5' })).statusCode).toBe(302)
    expect(await sharedUp(a)).toBe(false)
    const client = tls.client()
    try {
      expect(await client.keys('*TOPO-5*')).toEqual([])
    } finally {
      client.disconnect()
    }
  })

  it('a CA file that cannot be read stops the start, naming REDIS_TLS_CA_FILE and the file', async () => {
    const upstream = await topologyUpstream()
    await expect(replicaApp(upstream, { redisUrl: tls.url, redisTlsCaFile: '/nonexistent/ca.pem' })).rejects.toThrow(
      /invalid setting redisTlsCaFile \(REDIS_TLS_CA_FILE\): "\/nonexistent\/ca.pem" cannot be read/
    )
  })

  it('a CA file that holds no certificate stops the start, naming REDIS_TLS_CA_FILE and the file', async () => {
    const upstream = await topologyUpstream()
    await expect(replicaApp(upstream, { redisUrl: tls.url, redisTlsCaFile: ca.keyFile })).rejects.toThrow(
      `invalid setting redisTlsCaFile (REDIS_TLS_CA_FILE): ${JSON.stringify(ca.keyFile)} holds no PEM certificate`
    )
  })
})
