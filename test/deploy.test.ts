import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { buildConfig } from '../src/config/schema.js'
import { compose, envOf, inProfile, replicas } from './support/compose.js'

// The image and compose file as an operator expects them (issue 14). No Docker engine runs here: they are read, not built.

const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8')
const nginx = readFileSync(new URL('../deploy/nginx.conf', import.meta.url), 'utf8')
const doiProxies = Object.entries(compose.services).filter(([, s]) => s.build !== undefined)

function bytes (limit: string | undefined): number {
  const m = /^(\d+)([kmg])?$/i.exec(limit ?? '')
  if (m === null) return NaN
  return Number(m[1]) * ({ k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? '').toLowerCase()] ?? 1)
}

describe('docker-compose.yml', () => {
  it('the replicas profile has three doi-proxy replicas sharing one Redis or Valkey', () => {
    expect(replicas.map(([name]) => name)).toHaveLength(3)
    const stores = inProfile('replicas').filter(([, s]) => /valkey|redis/.test(s.image ?? ''))
    expect(stores).toHaveLength(1)
    const [storeName] = stores[0] ?? ['']
    for (const [, s] of replicas) {
      expect(s.environment?.REDIS_URL).toMatch(new RegExp(`^redis://${storeName}:6379`))
      expect(buildConfig(undefined, envOf(s)).redisUrl).toBeDefined()
      expect(s.depends_on?.[storeName]?.condition).toBe('service_healthy')
    }
  })

  it('the Redis or Valkey keeps its data on a volume, evicts rather than refuses when full, and is health-checked', () => {
    const [, store] = inProfile('replicas').find(([, s]) => /valkey|redis/.test(s.image ?? '')) ?? []
    expect(store?.volumes?.some((v) => /^[\w-]+:\/data$/.test(v) && compose.volumes[v.split(':')[0] ?? ''] !== undefined)).toBe(true)
    expect(store?.command?.join(' ')).toMatch(/--maxmemory-policy allkeys-lru/)
    expect(store?.healthcheck?.test.join(' ')).toMatch(/ping/)
    expect(bytes(store?.mem_limit)).toBeGreaterThan(0)
  })

  it('every doi-proxy keeps its cache file on a named volume at /data and its local records on a mount', () => {
    expect(doiProxies.length).toBeGreaterThanOrEqual(4)
    for (const [, s] of doiProxies) {
      const data = s.volumes?.find((v) => v.endsWith(':/data'))
      expect(data).toBeDefined()
      expect(compose.volumes[(data ?? '').split(':')[0] ?? '']).not.toBeUndefined()
      expect(s.environment?.CACHE_FILE).toBe('/data/cache.snapshot')
      const records = s.environment?.LOCAL_STORE_DIR ?? ''
      expect(s.volumes?.some((v) => v.endsWith(`:${records}:ro`))).toBe(true)
    }
  })

  it('every doi-proxy has a memory limit that fits its cache bound, and a health check on /readyz', () => {
    for (const [, s] of doiProxies) {
      const config = buildConfig(undefined, envOf(s))
      // The cache's estimate, the same again for the rest of the heap and RSS, and 128 MiB for Node itself.
      expect(bytes(s.mem_limit)).toBeGreaterThanOrEqual(2 * config.cacheMaxBytes + 128 * 1024 ** 2)
      expect(s.healthcheck?.test.join(' ')).toContain('/readyz')
    }
  })

  it('nginx waits for healthy replicas and balances over all three with keep-alive', () => {
    const [, proxy] = inProfile('replicas').find(([, s]) => /nginx/.test(s.image ?? '')) ?? []
    for (const [name] of replicas) {
      expect(proxy?.depends_on?.[name]?.condition).toBe('service_healthy')
      expect(nginx).toMatch(new RegExp(`server ${name}:8000 max_fails=\\d+ fail_timeout=\\d+s;`))
    }
    expect(nginx).toMatch(/keepalive \d+;/)
    expect(nginx).toContain('proxy_set_header Connection "";')
    expect(nginx).toContain('proxy_set_header X-Forwarded-For $remote_addr;')
    expect(proxy?.healthcheck).toBeDefined()
  })
})

describe('the Dockerfile', () => {
  it('builds every stage on the one base image named by NODE_IMAGE', () => {
    const froms = dockerfile.split('\n').filter((l) => /^FROM\s/i.test(l))
    expect(froms.length).toBe(3)
    for (const line of froms) expect(line).toMatch(/^FROM \$\{NODE_IMAGE\}( AS \w+)?$/)
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:22-alpine@sha256:[0-9a-f]{64}$/m)
  })

  it('keeps the cache file on a /data volume owned by the unprivileged user, and lets WORKERS follow the CPU quota', () => {
    expect(dockerfile).toMatch(/CACHE_FILE=\/data\/cache\.snapshot/)
    expect(dockerfile).toMatch(/^VOLUME \["\/data"\]$/m)
    expect(dockerfile).toMatch(/chown node:node \/data/)
    expect(dockerfile).toMatch(/WORKERS=0/)
    expect(dockerfile).toMatch(/^USER node$/m)
  })
})
