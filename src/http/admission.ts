import { createRequire } from 'node:module'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import type { Config } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import type { ClientTicket } from '../resolve/upstream/fair-queue.js'
import { upstreamErrors } from '../resolve/upstream/errors.js'
import type { RedisClient } from '../resolve/fleet/redis.js'
import { networkMatcher, ticketFor } from './client.js'
import { RefusedError } from './errors.js'

/**
 * The one gate in front of upstream-bound work (behaviour.md §9). Cached answers never reach it, so
 * they are never limited; everything that would ask the upstream passes it, whatever the route and
 * however the router took the request (the handlers call it after decoding the request, so
 * `?%61uth` is `auth`):
 * - load shedding, when the event loop lags (@fastify/under-pressure measures it);
 * - the auth/cert limit, or the general limit (@fastify/rate-limit), per client address;
 * - then the request's fair-queue ticket and deadline, for the resolver.
 * A request with `Cache-Control: only-if-cached` is refused here at once (504): whatever it needs that we
 * do not hold would have to be asked upstream.
 */
export interface Admission {
  /**
   * The gate of one request as the resolver takes it (LookupRequest.admit): passed at most once, when its
   * first lookup must go upstream, then the same answer (who asks, until when) or the same refusal.
   */
  gate(request: FastifyRequest, reply: FastifyReply, bypass: boolean): () => Promise<{ client: ClientTicket; deadline: number }>
  /**
   * The gate of a request that makes many lookups (a batch): passed again at each call, each one counted
   * by the rate limit as a request of its own, so a batch costs what its lookups cost. Each call answers
   * who asks and until when, or rejects (a refusal carries its Retry-After). Only the first call, made
   * before the answer starts, sets the rate-limit headers.
   */
  gateEach(request: FastifyRequest, reply: FastifyReply): () => Promise<{ client: ClientTicket; deadline: number }>
}

/** The gate, and the plugins it asks: `register` puts them on the app (src/plugins/admission.ts), before any route. */
export interface AdmissionControl extends Admission {
  /**
   * Registers @fastify/under-pressure and @fastify/rate-limit as configured, on the app given (the root:
   * rate-limit's onRoute hook must see every route). Until then the gate lets every request through.
   */
  register(app: FastifyInstance): Promise<void>
}

/** The settings of the gate: load shedding, the rate limits (their Redis keys), who is trusted, the request's deadline. */
export type AdmissionSettings = Pick<
  Config,
  | 'maxEventLoopDelayMs'
  | 'rateLimitMax'
  | 'authRateLimitMax'
  | 'rateLimitWindowMs'
  | 'rateLimitAllowList'
  | 'trustedNetworks'
  | 'redisKeyPrefix'
  | 'requestDeadlineMs'
>

/** With `redis`, the rate-limit counters live there, shared by replicas; a Redis failure lets the request through. */
export function createAdmission(config: AdmissionSettings, metrics: Metrics, redis?: RedisClient): AdmissionControl {
  const isTrusted = networkMatcher(config.trustedNetworks)
  const isAllowListed = networkMatcher(config.rateLimitAllowList)
  const refused = {
    shed: metrics.refusals.labels('load_shed'),
    general: metrics.refusals.labels('rate_limit'),
    auth: metrics.refusals.labels('auth_rate_limit')
  }

  // Set by `register`, from the plugins it registers on the app.
  let underPressureNow = (): boolean => false
  let general: Limiter | undefined
  let auth: Limiter | undefined

  async function register(root: FastifyInstance): Promise<void> {
    if (config.maxEventLoopDelayMs > 0) {
      // Registered to measure only: its own hook lets every request through, and we ask it before upstream work.
      await root.register(underPressure, {
        maxEventLoopDelay: config.maxEventLoopDelayMs,
        sampleInterval: 250,
        pressureHandler: () => undefined
      })
      underPressureNow = () => root.isUnderPressure()
    }
    if (config.rateLimitMax > 0 || config.authRateLimitMax > 0) {
      await root.register(rateLimit, {
        global: false,
        cache: 100_000, // most client addresses tracked at once (in memory, without Redis)
        ...(redis === undefined ? {} : { store: namedRedisStore(redis, `${config.redisKeyPrefix}v1:rl:`), skipOnError: true })
      })
      const windowMs = config.rateLimitWindowMs
      if (config.rateLimitMax > 0) general = rateLimiter(root, LOOKUPS, config.rateLimitMax, windowMs, isTrusted)
      if (config.authRateLimitMax > 0) auth = rateLimiter(root, AUTH_LOOKUPS, config.authRateLimitMax, windowMs, isTrusted)
    }
  }

  /** Undefined when nothing applies (the common case costs no promise); rejects with a 429/503 error. */
  function admit(request: FastifyRequest, reply: FastifyReply | undefined, bypass: boolean): Promise<void> | undefined {
    if (underPressureNow()) {
      refused.shed.inc()
      return Promise.reject(
        new RefusedError(503, 'DP_OVERLOADED', 'This resolver is very busy right now. Please try again in a few seconds.', 5000)
      )
    }
    // One limiter per request (the plugin runs once per request): the stricter one for cache-bypassing lookups.
    const limiter = bypass ? (auth ?? general) : general
    if (limiter === undefined || isAllowListed(request.ip)) return undefined
    return limiter(request, reply).catch((err: unknown) => {
      ;(limiter === auth ? refused.auth : refused.general).inc()
      throw err
    })
  }

  /** Who asks (the fair queue's ticket) and the request's deadline on the performance.now() clock, once admitted. */
  async function pass(
    request: FastifyRequest,
    reply: FastifyReply | undefined,
    bypass: boolean
  ): Promise<{ client: ClientTicket; deadline: number }> {
    await admit(request, reply, bypass)
    return { client: ticketFor(request.ip, isTrusted), deadline: performance.now() + config.requestDeadlineMs }
  }

  return {
    register,
    gate(request, reply, bypass) {
      if (onlyIfCached(request.headers['cache-control'])) return notHeld()
      let passed: Promise<{ client: ClientTicket; deadline: number }> | undefined
      return async () => await (passed ??= pass(request, reply, bypass))
    },
    gateEach(request, reply) {
      if (onlyIfCached(request.headers['cache-control'])) return notHeld()
      let first = true
      return async () => {
        const headers = first
        first = false
        return await pass(request, headers ? reply : undefined, false)
      }
    }
  }
}

// RFC 9111 §5.2.1.7: a request that may only be answered from what we hold never goes upstream.
function notHeld(): () => Promise<never> {
  const refusal = Promise.reject(upstreamErrors.notHeld())
  refusal.catch(() => {})
  return async () => await refusal
}

/** Counts one lookup of the request's client; rejects with a 429 (its Retry-After) over the limit. */
type Limiter = (request: FastifyRequest, reply: FastifyReply | undefined) => Promise<void>

/** A rate limit's name (in its key) and the refusal it answers with. */
interface LimitWords {
  name: string
  code: string
  message: string
}
const LOOKUPS: LimitWords = { name: 'lookups', code: 'DP_RATE_LIMITED', message: 'You have made too many DOI lookups in a short time.' }
const AUTH_LOOKUPS: LimitWords = {
  name: 'auth',
  code: 'DP_AUTH_RATE_LIMITED',
  message: 'You have made too many lookups with auth or cert, which skip our cache.'
}

/**
 * A limiter from @fastify/rate-limit registered on `root`, counted by us, not by the plugin's route hook
 * (which counts a request once): a batch counts each lookup. Each count is named by its limit and the
 * client: `doi-proxy:v1:rl:lookups:203.0.113.7` in Redis.
 */
function rateLimiter(root: FastifyInstance, words: LimitWords, max: number, windowMs: number, isTrusted: (ip: string) => boolean): Limiter {
  const { name, code, message } = words
  const count = root.createRateLimit({
    max,
    timeWindow: windowMs,
    keyGenerator: (request) => `${name}:${ticketFor(request.ip, isTrusted).key}`
  })
  return async (request, reply) => {
    const limit = await count(request)
    if (limit.isAllowed) return
    // The headers @fastify/rate-limit's own hook sends, while the answer has not started.
    if (reply !== undefined && !reply.sent) {
      reply
        .header('x-ratelimit-limit', limit.max)
        .header('x-ratelimit-remaining', limit.remaining)
        .header('x-ratelimit-reset', limit.ttlInSeconds)
    }
    if (limit.isExceeded) {
      const seconds = Math.max(1, limit.ttlInSeconds)
      throw new RefusedError(429, code, `${message} Please try again in ${seconds} s.`, seconds * 1000)
    }
  }
}

type Incr = (
  key: string,
  done: (err: Error | null, result?: { current: number; ttl: number }) => void,
  timeWindow: number,
  max: number
) => void
// The library's own Redis store (its Lua script: INCR, and PEXPIRE on the first count), used as it is.
const LibraryRedisStore = createRequire(import.meta.url)('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: RedisClient,
  nameSpace: string
) => { incr: Incr }

/**
 * @fastify/rate-limit's Redis store, keyed by `nameSpace` + our key generator's name alone. The library's
 * own would add a route to the name of a limiter made with `rateLimit(options)`, and ours have none: its
 * keys read `doi-proxy:v1:rl:undefinedundefined-127.0.0.1`, naming neither the limit nor the route.
 */
function namedRedisStore(redis: RedisClient, nameSpace: string): FastifyRateLimitStoreCtor {
  const store = new LibraryRedisStore(false, false, redis, nameSpace)
  return class NamedRedisStore implements FastifyRateLimitStore {
    incr(key: string, done: Parameters<Incr>[1], timeWindow?: number, max?: number): void {
      store.incr(key, done, timeWindow ?? 0, max ?? 0)
    }

    /** The same store: the key generator names the limit. */
    child(): FastifyRateLimitStore {
      return this
    }
  }
}

/** True when a Cache-Control request header holds the `only-if-cached` directive (RFC 9111 §5.2.1.7; names are case-insensitive, §5.2). */
export function onlyIfCached(header: string | readonly string[] | undefined): boolean {
  if (header === undefined) return false
  const fields = typeof header === 'string' ? [header] : header
  return fields.some((field) => field.split(',').some((d) => (d.split('=')[0] ?? '').trim().toLowerCase() === 'only-if-cached'))
}
