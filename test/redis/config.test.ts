import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { buildConfig } from '../../src/config/schema.js'
import { describeRedis, redisSettingsOf } from '../../src/resolve/fleet/redis.js'

// How Redis is reached (issue 27): one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, checked at start.

describe('Redis settings', () => {
  it.each([
    [
      { REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'b:6379' },
      /redisClusterNodes \(REDIS_CLUSTER_NODES\): set one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, not redisUrl \(REDIS_URL\) and redisClusterNodes/
    ],
    [
      { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: 'b:6379' },
      /not redisSentinels \(REDIS_SENTINELS\) and redisClusterNodes \(REDIS_CLUSTER_NODES\)/
    ],
    [{ REDIS_SENTINELS: 's1:26379' }, /redisSentinelMaster \(REDIS_SENTINEL_MASTER\): needed with REDIS_SENTINELS/],
    [
      { REDIS_URL: 'redis://a:6379', REDIS_SENTINEL_MASTER: 'mymaster' },
      /REDIS_SENTINEL_MASTER\): "mymaster" means something only with REDIS_SENTINELS/
    ],
    [
      { REDIS_SENTINELS: 's1:26379,s2', REDIS_SENTINEL_MASTER: 'm' },
      /redisSentinels \(env REDIS_SENTINELS\): expected comma-separated host:port entries such as redis-1:6379,redis-2:6379, got "s1:26379,s2"/
    ],
    [
      { REDIS_CLUSTER_NODES: 'redis://a:6379' },
      /redisClusterNodes \(env REDIS_CLUSTER_NODES\): expected comma-separated host:port entries/
    ],
    [{ REDIS_CLUSTER_NODES: 'a:70000' }, /redisClusterNodes/],
    [{ REDIS_USERNAME: 'doi-proxy', REDIS_PASSWORD: 'pw', REDIS_URL: 'redis://u:p@a:6379' }, /REDIS_URL holds credentials already/],
    [
      { REDIS_USERNAME: 'doi-proxy', REDIS_URL: 'redis://a:6379' },
      /redisUsername \(REDIS_USERNAME\): "doi-proxy" needs REDIS_PASSWORD too/
    ],
    [{ REDIS_PASSWORD: 'pw' }, /means something only with REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES/],
    [
      { REDIS_TLS_CA_FILE: '/etc/ca.pem', REDIS_URL: 'redis://a:6379' },
      /redisTlsCaFile \(REDIS_TLS_CA_FILE\): "\/etc\/ca.pem" needs a rediss:\/\/ REDIS_URL/
    ],
    [{ REDIS_TLS_CA_FILE: '/etc/ca.pem', REDIS_CLUSTER_NODES: 'a:6379' }, /TLS to Sentinel or Cluster nodes is not supported/]
  ])('%o stops the start with a message naming the option and value', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(message)
  })

  it("no message shows a password: not REDIS_URL's, not REDIS_PASSWORD's", () => {
    expect(() => buildConfig(undefined, { REDIS_URL: 'redis://doi:hunter2@valkey:6379/x' })).toThrow(
      /got "redis:\/\/doi:\*\*\*@valkey:6379\/x"/
    )
    expect(() => buildConfig(undefined, { REDIS_URL: 'redis://doi:hunter2@valkey:6379/x' })).not.toThrow(/hunter2/)
    expect(() => buildConfig(undefined, { REDIS_CLUSTER_NODES: 'a:6379', REDIS_PASSWORD: 'hunt\ner2' })).toThrow(
      /redisPassword \(env REDIS_PASSWORD\): expected a string without control characters \(value not shown\)/
    )
    expect(() => buildConfig(undefined, { REDIS_CLUSTER_NODES: 'a:6379', REDIS_PASSWORD: 'hunt\ner2' })).not.toThrow(/hunt/)
  })

  it('where we connect, as a log line says it: the password never', () => {
    const said = (env: Record<string, string>): string | undefined => {
      const settings = redisSettingsOf(buildConfig(undefined, env))
      return settings === undefined ? undefined : describeRedis(settings.topology)
    }
    expect(said({})).toBeUndefined()
    expect(said({ REDIS_URL: 'rediss://doi-proxy:s3cret@valkey:6380/2' })).toBe('rediss://doi-proxy:***@valkey:6380/2')
    expect(said({ REDIS_URL: 'redis://:s3cret@valkey' })).toBe('redis://:***@valkey')
    expect(said({ REDIS_SENTINELS: 's1:26379, [::1]:26380', REDIS_SENTINEL_MASTER: 'mymaster', REDIS_PASSWORD: 's3cret' })).toBe(
      'sentinel master mymaster via s1:26379,::1:26380'
    )
    expect(said({ REDIS_CLUSTER_NODES: 'r1:7000,r2:7001' })).toBe('cluster via r1:7000,r2:7001')
  })
})

describe('docs/deployment.md', () => {
  const doc = readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8')
  const start = doc.indexOf('### Redis past one server')
  const section = doc.slice(start, doc.indexOf('\n### ', start + 1))
  const examples = [...section.matchAll(/```sh\n([^`]*)```/g)].map((m) =>
    Object.fromEntries(
      (m[1] ?? '')
        .trim()
        .split('\n')
        .map((line) => line.split(/=(.*)/s).slice(0, 2))
    )
  )

  it.each(examples.map((env) => [Object.keys(env).join(' '), env]))('the Redis example with %s is a valid configuration', (_keys, env) => {
    const config = buildConfig(undefined, env as Record<string, string>)
    expect(config.redisUrl !== undefined || config.redisSentinels.length > 0 || config.redisClusterNodes.length > 0).toBe(true)
  })

  it('has the examples: ACL user, TLS, Sentinel, Cluster', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5)
  })
})
