import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RedisClient } from '../fleet/redis.js'
import { createHostSlots, gapOf, type HostSlots } from './host-slots.js'

/**
 * Host slots across the fleet (issue 41): LANDING_PER_HOST and LANDING_HOST_DELAY_MS hold for all the
 * replicas together, not each. A slot is first taken here (the local limits, which hold alone when Redis
 * is absent or failing), then in Redis through one Lua script per host: a sorted set of leases (expiring
 * after `leaseMs`, the longest a try takes, so a replica that dies frees its slots) and the next start's
 * time, both on Redis's clock (`TIME`), so the replicas' clocks need not agree. As locally, the gap runs
 * from the request's writing: a grant holds the next start for its lease, and `sent()` (or a release
 * unsent) sets it to the gap from then (a replica that dies unsent frees it when the lease ends). A
 * replica that finds no slot looks again when the script says one may be free (at most every `pollMs`).
 */
export interface FleetHostSlotsOptions {
  redis: RedisClient | undefined
  /** REDIS_KEY_PREFIX and the part's version: `doi-proxy:landing:1:`. */
  prefix: string
  perHost: number
  delayMs: number
  /** How long a lease lasts: a try's timeout (LANDING_TIMEOUT_MS) and a little. */
  leaseMs: number
  pollMs?: number
  /** This process's slots (shared with its other users); made from perHost and delayMs by default. */
  local?: HostSlots
}

// KEYS: the leases, the next start. ARGV: perHost, gap ms, lease ms, token.
// Returns 0 when the lease is taken, else how many ms until a slot may be free. A lease taken with a gap
// holds the next start until SENT says when its request was written.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local per, gap, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= per then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(first[2]) - now)
end
local nextStart = tonumber(redis.call('GET', KEYS[2]) or '0')
if now < nextStart then return nextStart - now end
redis.call('ZADD', KEYS[1], now + lease, ARGV[4])
redis.call('PEXPIRE', KEYS[1], lease)
if gap > 0 then redis.call('SET', KEYS[2], now + lease, 'PX', lease) end
return 0
`

// KEYS: the next start. ARGV: gap ms. The request is written: the next start is the gap from now.
const SENT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gap = tonumber(ARGV[1])
redis.call('SET', KEYS[1], now + gap, 'PX', gap)
return 0
`

export function createFleetHostSlots(opts: FleetHostSlotsOptions): HostSlots {
  const local = opts.local ?? createHostSlots({ perHost: opts.perHost, delayMs: opts.delayMs })
  const { redis } = opts
  const pollMs = opts.pollMs ?? 100
  // One hash tag per host: both keys on one Cluster slot, as a script needs.
  const keysOf = (host: string): [string, string] => [`${opts.prefix}host:{${host}}:leases`, `${opts.prefix}host:{${host}}:next`]

  /** The fleet's lease (its token), or undefined when Redis cannot say: the local slot is then the limit. */
  async function lease(host: string, gapMs: number, signal: AbortSignal | undefined): Promise<string | undefined> {
    if (redis === undefined) return undefined
    const token = randomUUID()
    const keys = keysOf(host)
    for (;;) {
      let wait: number
      try {
        wait = Number(await redis.eval(ACQUIRE, 2, ...keys, opts.perHost, Math.ceil(gapMs), Math.ceil(opts.leaseMs), token))
      } catch {
        return undefined
      }
      if (wait <= 0) return token
      await sleep(Math.min(Math.max(1, wait), pollMs), undefined, { signal }).catch(() => {
        throw signal?.reason
      })
    }
  }

  return {
    async acquire(host, { signal, crawlDelayMs } = {}) {
      const slot = await local.acquire(host, { signal, crawlDelayMs })
      const gapMs = gapOf(opts.delayMs, crawlDelayMs)
      let token: string | undefined
      try {
        token = await lease(host, gapMs, signal)
      } catch (err) {
        slot.release()
        throw err
      }
      const [leases, next] = keysOf(host)
      let sent = token === undefined || gapMs <= 0
      let released = false
      const markSent = (): void => {
        slot.sent()
        if (sent) return
        sent = true
        // Should Redis fail here, the held next start ends with the lease: later, never sooner.
        redis?.eval(SENT, 1, next, Math.ceil(gapMs)).catch(() => {})
      }
      return {
        sent: markSent,
        release: () => {
          if (released) return
          released = true
          markSent()
          slot.release()
          if (token !== undefined) redis?.zrem(leases, token).catch(() => {})
        }
      }
    }
  }
}
