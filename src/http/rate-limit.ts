import { BlockList } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import type { Config } from '../config/schema.js'
import { parseCidr } from '../config/schema.js'

const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics'])
// `auth` or `cert` as a query key, separated by & or ; (the proxy's presence semantics).
const BYPASS_PARAM = /(?:^|[&;])(?:auth|cert)(?:[=&;]|$)/

/**
 * Inbound rate limits per client address (@fastify/rate-limit, in memory): a general limit (off by
 * default) and a stricter one for `auth`/`cert` requests, which bypass the cache and would
 * otherwise let anyone hammer the upstream through us. Allow-listed networks are never limited.
 */
export async function registerRateLimits (app: FastifyInstance, config: Config): Promise<void> {
  if (config.rateLimitMax === 0 && config.authRateLimitMax === 0) return
  const allowed = new BlockList()
  for (const item of config.rateLimitAllowList) {
    const [address, prefix, family] = parseCidr(item) ?? []
    if (address !== undefined && prefix !== undefined && family !== undefined) allowed.addSubnet(address, prefix, family)
  }
  const isBypass = (request: FastifyRequest): boolean => {
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    return q >= 0 && BYPASS_PARAM.test(url.slice(q + 1))
  }
  await app.register(rateLimit, {
    global: true,
    timeWindow: config.rateLimitWindowMs,
    // Separate counters: `auth:` keys for cache-bypassing requests.
    keyGenerator: (request) => isBypass(request) ? `auth:${request.ip}` : request.ip,
    max: (_request, key) => key.startsWith('auth:') ? config.authRateLimitMax : config.rateLimitMax,
    allowList: (request, key) => {
      if (OPS_PATHS.has(request.url)) return true
      if (isAllowed(allowed, request.ip)) return true
      return key.startsWith('auth:') ? config.authRateLimitMax === 0 : config.rateLimitMax === 0
    },
    cache: 100_000 // most client addresses tracked at once
  })
}

function isAllowed (list: BlockList, ip: string): boolean {
  try {
    return list.check(ip, ip.includes(':') ? 'ipv6' : 'ipv4')
  } catch {
    return false
  }
}
