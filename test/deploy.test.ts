import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { buildConfig } from '../src/config/schema.js'
import { networkMatcher } from '../src/http/client.js'
import { storeFileNames } from '../src/resolve/local-store/watch.js'
import { COMPOSE_TEXT, compose, envOf, inProfile, interpolate, replicas } from './support/compose.js'

// The image and compose file as an operator expects them (issue 14). No Docker engine runs here: they are read, not built.

const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8')
const nginx = readFileSync(new URL('../deploy/nginx.conf', import.meta.url), 'utf8')
const doiProxies = Object.entries(compose.services).filter(([, s]) => s.build !== undefined)

function bytes(limit: string | undefined): number {
  const m = /^(\d+)([kmg])?$/i.exec(limit ?? '')
  if (m === null) return NaN
  return Number(m[1]) * ({ k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? '').toLowerCase()] ?? 1)
}

const deploymentDoc = readFileSync(new URL('../docs/deployment.md', import.meta.url), 'utf8')
const envExample = readFileSync(new URL('../.env.example', import.meta.url), 'utf8')
/** .env.example's settings, as compose reads the .env copied from it. */
const envExampleVars = Object.fromEntries(
  envExample
    .split('\n')
    .filter((l) => /^[A-Z_]+=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])
)

/** What `docker compose --profile <profile> up` starts: the services without a profile, and the profile's. */
const started = (profile: string): string[] =>
  Object.entries(compose.services)
    .filter(([, s]) => s.profiles === undefined || s.profiles.includes(profile))
    .map(([name]) => name)
    .sort()

describe('docker-compose.yml', () => {
  it('each profile starts exactly the services docs/deployment.md lists for it, and nothing runs without a profile', () => {
    // The doc's table: | `single` | `doi-proxy` |
    const rows = [...deploymentDoc.matchAll(/^\| `(\w+)` \| ((?:`[\w-]+`(?:, )?)+) \|/gm)]
    expect(rows.map((r) => r[1])).toEqual(['single', 'replicas'])
    for (const [, profile, names] of rows) {
      expect(started(profile ?? '')).toEqual([...(names ?? '').matchAll(/`([\w-]+)`/g)].map((m) => m[1]).sort())
    }
    expect(started('none')).toEqual([])
  })

  it('.env.example names every setting compose reads from .env, and only those', () => {
    const read = new Set([...COMPOSE_TEXT.matchAll(/\$\{(\w+)/g)].map((m) => m[1]))
    // COMPOSE_PROFILES is compose's own: it chooses the profile.
    expect(new Set(Object.keys(envExampleVars).filter((k) => k !== 'COMPOSE_PROFILES'))).toEqual(read)
    expect(['single', 'replicas']).toContain(envExampleVars.COMPOSE_PROFILES)
  })

  it("every doi-proxy starts with .env.example's settings, and with none set", () => {
    for (const [, s] of doiProxies) {
      expect(buildConfig(undefined, envOf(s, envExampleVars)).publicBaseUrl).toBe(envExampleVars.PUBLIC_BASE_URL)
      expect(() => buildConfig(undefined, envOf(s))).not.toThrow()
    }
  })

  it('serves no local records unless asked: the default mount is ./records, which holds none', async () => {
    for (const [, s] of doiProxies) {
      expect(s.volumes?.map((v) => interpolate(v))).toContain('./records:/records:ro')
    }
    expect(envExampleVars.LOCAL_RECORDS_DIR).toBe('./records')
    expect(await storeFileNames(fileURLToPath(new URL('../records', import.meta.url)))).toEqual([])
  })

  it('/status through nginx: the replicas trust the one proxy in front, publish no port, and allow the Docker host', () => {
    for (const [, s] of replicas) {
      const config = buildConfig(undefined, envOf(s))
      expect(config.trustProxy).toBe(1)
      expect(s.ports).toBeUndefined()
      // The Docker host reaches nginx through its bridge network's gateway, which nginx passes on.
      expect(networkMatcher(config.statusAllow)('172.18.0.1')).toBe(true)
      expect(networkMatcher(config.statusAllow)('203.0.113.7')).toBe(false)
    }
  })

  it('nginx publishes http and https and sees the certificate and webroot where deploy/nginx.conf looks', () => {
    const [, proxy] = inProfile('replicas').find(([, s]) => /nginx/.test(s.image ?? '')) ?? []
    expect(proxy?.ports?.map((p) => interpolate(p))).toEqual(['80:80', '443:443'])
    expect(nginx).toMatch(/listen 80;/)
    expect(nginx).toMatch(/listen 443 ssl http2;/)
    const mounted = (proxy?.volumes ?? []).map((v) => interpolate(v).split(':')[1] ?? '')
    for (const [, path] of nginx.matchAll(/^\s*(?:ssl_certificate|ssl_certificate_key|root) (\/\S+?);/gm)) {
      expect(
        mounted.some((m) => path === m || (path ?? '').startsWith(m + '/')),
        path
      ).toBe(true)
    }
  })

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

  it('keeps the cache file and the health history on a /data volume owned by the unprivileged user, and lets WORKERS follow the CPU quota', () => {
    expect(dockerfile).toMatch(/CACHE_FILE=\/data\/cache\.snapshot/)
    expect(dockerfile).toMatch(/HEALTH_DB=\/data\/health\.sqlite/)
    expect(dockerfile).toMatch(/^VOLUME \["\/data"\]$/m)
    expect(dockerfile).toMatch(/chown node:node \/data/)
    expect(dockerfile).toMatch(/WORKERS=0/)
    expect(dockerfile).toMatch(/^USER node$/m)
  })

  it("builds better-sqlite3's native module in the dependencies stage only: no compiler in the image (issue 42)", () => {
    const [build = '', deps = '', runtime = ''] = dockerfile.split(/^FROM /m).slice(1)
    expect(build).toMatch(/^RUN npm ci --ignore-scripts /m) // tsc needs no native module
    expect(deps).toMatch(/^RUN apk add --no-cache python3 make g\+\+\n[\s\S]*^RUN npm ci --omit=dev /m)
    expect(runtime).not.toMatch(/apk add|npm ci/)
  })

  it('serves no sample records unless asked (LOCAL_STORE_DIR empty in the image)', () => {
    const env = /^ENV ((?:.*\\\n)*.*)$/m.exec(dockerfile)?.[1] ?? ''
    const vars = Object.fromEntries(
      env
        .split(/\s*\\\n\s*|\s+/)
        .filter(Boolean)
        .map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)])
    )
    expect(vars.LOCAL_STORE_DIR).toBe('')
    expect(buildConfig(undefined, vars).localStoreDir).toBeUndefined()
  })
})
