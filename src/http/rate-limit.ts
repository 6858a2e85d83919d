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
  const exempt = (request: FastifyRequest): boolean => OPS_PATHS.has(request.url) || isAllowed(allowed, request.ip)
  // The plugin is registered without a global hook; our own hook applies the limiters, so an ordinary
  // request costs nothing when only the auth limit is on (the default).
  await app.register(rateLimit, { global: false, cache: 100_000 /* most client addresses tracked at once */ })
  const general = config.rateLimitMax === 0
    ? undefined
    : app.rateLimit({ max: config.rateLimitMax, timeWindow: config.rateLimitWindowMs, keyGenerator: (request) => request.ip })
  const auth = config.authRateLimitMax === 0
    ? undefined
    : app.rateLimit({ max: config.authRateLimitMax, timeWindow: config.rateLimitWindowMs, keyGenerator: (request) => `auth:${request.ip}` })
  // Callback style, so a request no limit applies to costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    const limiter = isBypass(request) ? (auth ?? general) : general
    if (limiter === undefined || exempt(request)) {
      done()
      return
    }
    limiter.call(app, request, reply).then(() => done(), done)
  })
}

function isAllowed (list: BlockList, ip: string): boolean {
  try {
    return list.check(ip, ip.includes(':') ? 'ipv6' : 'ipv4')
  } catch {
    return false
  }
}
