import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RedisClient } from './redis.js'

/**
 * One holder for the whole fleet (issue 42, plan D8: the health checker): a lease in Redis that one replica
 * holds at a time, for `ttlMs` at most after its last renewal, so a holder that dies frees it. Taking it
 * (`SET NX PX`) also counts an epoch (`INCR`, in the same script): each holding has its own number and its
 * own token, and a write fenced by the token (the fleet log's publish) is refused once the holding is over,
 * however late the old holder's write comes. Renewed every `renewMs` only while the token is still there;
 * a renewal that finds another token, or none, or that fails (Redis down: no holding can be proven) ends
 * the holding at once, and the holder hears it (`onChange`) before anyone else can take it over.
 * Without Redis (`redis` undefined) the one process holds it from `start()`. A Redis that loses its data (a
 * restart without persistence) counts epochs from 1 again: the tokens, not the epochs, fence the writes.
 * Keys `<prefix>lease` and `<prefix>epoch`: the prefix carries one hash tag, so both (and the fleet log's
 * key) sit on one Cluster slot, as a script needs.
 */
export interface LeaseOptions {
  redis: RedisClient | undefined
  /** REDIS_KEY_PREFIX, the part, its version and one hash tag: `doi-proxy:health:1:{fleet}:`. */
  prefix: string
  /** How long a holding lasts without a renewal (30 s). */
  ttlMs: number
  /** How often the holder renews it, and the longest wait between two bids of the others (10 s). */
  renewMs: number
  /**
   * Awaited before each bid (the health log drained to its end, so a new holder knows every check made before):
   * one that throws is no bid this time; `signal` aborts when the lease stops.
   */
  beforeBid?: (signal: AbortSignal) => Promise<void>
  /** A failed command or bid, for the caller's (throttled) log. */
  onError?: (err: Error) => void
}

/**
 * `held` here (with the holding's epoch), `elsewhere` (another replica holds it, or it was just lost),
 * `paused` (Redis configured but not answering: nobody can prove a holding), `stopped`.
 */
export type LeaseState = 'held' | 'elsewhere' | 'paused' | 'stopped'

export interface LeaseChange {
  state: LeaseState
  /** The holding's number (1, 2, … across the fleet; 0 without Redis), while `held`. */
  epoch?: number
  /** Why a holding ended or no bid could be made: a line for the log and the pages. */
  reason?: string
}

// KEYS: lease, epoch. ARGV: new token, ttl ms, the token of this replica's last holding ('' for none).
// {1, epoch} when taken (anew, or again after this replica's own holding that it thought lost), else {0, ms left}.
const ACQUIRE = `
local cur = redis.call('GET', KEYS[1])
if cur == false or (ARGV[3] ~= '' and cur == ARGV[3]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, redis.call('INCR', KEYS[2])}
end
return {0, redis.call('PTTL', KEYS[1])}
`
// KEYS: lease. ARGV: token, ttl ms. 1 while the token is still there (then its time starts again), else 0.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`
// KEYS: lease. ARGV: token. Deletes it only while it is still this holding's.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

// Redis's clock and ours may run a little apart: a holding is believed for this share of its time only.
const TRUST = 0.9
// How long stop() waits for the loop's last command and the release.
const STOP_MS = 2_000

export function createLease(opts: LeaseOptions) {
  const { redis, ttlMs, renewMs } = opts
  const leaseKey = `${opts.prefix}lease`
  const epochKey = `${opts.prefix}epoch`
  let state: LeaseState = 'elsewhere'
  let token: string | undefined
  let epoch: number | undefined
  // The token of the last holding, kept after it is lost: a renewal that failed while Redis still held it is taken back.
  let lastToken = ''
  let validUntil = 0
  let expiry: NodeJS.Timeout | undefined
  let onChange: (change: LeaseChange) => void = () => {}
  // The first state after start() is always said (the listener knows nothing yet).
  let said = false
  let loop: Promise<void> | undefined
  const stopping = new AbortController()

  function change(next: LeaseState, extra: Omit<LeaseChange, 'state'> = {}): void {
    const was = state
    state = next
    if (next !== 'held') {
      token = undefined
      epoch = undefined
      clearTimeout(expiry)
    }
    // Repeated pauses or refusals are said once; every holding and every loss is said.
    if (said && was === next && next !== 'held') return
    said = true
    try {
      onChange({ state: next, ...extra })
    } catch (err) {
      opts.onError?.(err instanceof Error ? err : new Error(String(err)))
    }
  }

  const held = (): boolean => state === 'held' && (redis === undefined || performance.now() < validUntil)

  /** Believed until `until` (our clock): past it, the holding ends here even if no renewal answered. */
  function trustUntil(sentAt: number): void {
    validUntil = sentAt + ttlMs * TRUST
    clearTimeout(expiry)
    expiry = setTimeout(
      () => {
        if (state === 'held') change('elsewhere', { reason: 'the lease was not renewed in its time' })
      },
      Math.max(0, validUntil - performance.now())
    )
    expiry.unref()
  }

  const fail = (err: unknown): string => {
    const error = err instanceof Error ? err : new Error(String(err))
    opts.onError?.(error)
    return `Redis did not answer: ${error.message}`
  }

  /** One bid: the wait before the next step (how long the holder's lease has left, at most `renewMs`). */
  async function bid(client: RedisClient): Promise<number> {
    try {
      await opts.beforeBid?.(stopping.signal)
    } catch (err) {
      if (stopping.signal.aborted) return 0
      opts.onError?.(err instanceof Error ? err : new Error(String(err)))
      change('paused', { reason: `not ready to bid: ${err instanceof Error ? err.message : String(err)}` })
      return Math.min(renewMs, 1_000)
    }
    if (stopping.signal.aborted) return 0
    const next = randomUUID()
    const sentAt = performance.now()
    let reply: unknown
    try {
      reply = await client.eval(ACQUIRE, 2, leaseKey, epochKey, next, Math.ceil(ttlMs), lastToken)
    } catch (err) {
      change('paused', { reason: fail(err) })
      return Math.min(renewMs, 1_000)
    }
    const [took, n] = Array.isArray(reply) ? reply.map(Number) : [Number.NaN, Number.NaN]
    // Taken, however late the answer came: a later bid takes it back while it is still there.
    if (took === 1) lastToken = next
    if (took === 1 && Number.isSafeInteger(n) && performance.now() < sentAt + ttlMs * TRUST) {
      if (stopping.signal.aborted) {
        await client.eval(RELEASE, 1, leaseKey, next).catch(() => {})
        return 0
      }
      token = next
      epoch = n
      trustUntil(sentAt)
      change('held', { epoch: n })
      return renewMs
    }
    change('elsewhere')
    // Taken, but the answer came too late to believe: bid again at once (the same holding is taken back).
    if (took === 1) return 0
    // The holder's time left (-1: a lease without a time, not ours to judge), at most one renewal period.
    const left = n !== undefined && Number.isFinite(n) && n > 0 ? n : renewMs
    return Math.min(renewMs, Math.max(10, left + 5))
  }

  /** One renewal of the holding: the wait before the next step. */
  async function renew(client: RedisClient, holding: string): Promise<number> {
    const sentAt = performance.now()
    let reply: unknown
    try {
      reply = await client.eval(RENEW, 1, leaseKey, holding, Math.ceil(ttlMs))
    } catch (err) {
      if (token === holding) change('paused', { reason: `the lease could not be renewed: ${fail(err)}` })
      return 0
    }
    if (token !== holding) return 0
    if (Number(reply) === 1) {
      trustUntil(sentAt)
      return renewMs
    }
    lastToken = ''
    change('elsewhere', { reason: 'the lease was taken over or expired' })
    return 0
  }

  async function run(client: RedisClient): Promise<void> {
    while (!stopping.signal.aborted) {
      const holding = token
      const wait = holding !== undefined ? await renew(client, holding) : await bid(client)
      if (wait > 0) await sleep(wait, undefined, { signal: stopping.signal }).catch(() => {})
    }
  }

  return {
    /** The lease's key, for a write fenced by the token (the fleet log's publish script). */
    key: leaseKey,

    /** Whether this replica holds the lease now (and its time has not run out on our clock). */
    held,

    /** The token of the holding, while held: a fenced write passes only with it. */
    token(): string | undefined {
      return held() ? token : undefined
    },

    epoch(): number | undefined {
      return held() ? epoch : undefined
    },

    state(): LeaseState {
      return state
    },

    /** Bid now and from now on; `listener` hears each change (taken, lost, paused, stopped). */
    start(listener: (change: LeaseChange) => void = () => {}): void {
      if (loop !== undefined || stopping.signal.aborted) return
      onChange = listener
      if (redis === undefined) {
        loop = Promise.resolve()
        token = randomUUID()
        epoch = 0
        change('held', { epoch: 0 })
        return
      }
      loop = run(redis)
    },

    /** Stop bidding and renewing, and give the lease up if held (never waits on Redis more than a moment). */
    async stop(): Promise<void> {
      if (stopping.signal.aborted) return
      stopping.abort()
      const holding = token
      change('stopped')
      let timer: NodeJS.Timeout | undefined
      const bounded = async (work: Promise<unknown>): Promise<void> => {
        await Promise.race([work.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, STOP_MS)))])
        clearTimeout(timer)
      }
      await bounded(loop ?? Promise.resolve())
      if (holding !== undefined && redis !== undefined) await bounded(redis.eval(RELEASE, 1, leaseKey, holding))
    }
  }
}

export type Lease = ReturnType<typeof createLease>
