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

/** The three scripts, on the lease's keys: take it (with a new epoch), renew a holding, give one up. */
function leaseScripts(client: RedisClient, leaseKey: string, epochKey: string, ttlMs: number) {
  return {
    acquire: async (next: string, lastToken: string): Promise<unknown> =>
      await client.eval(ACQUIRE, 2, leaseKey, epochKey, next, Math.ceil(ttlMs), lastToken),
    renew: async (holding: string): Promise<unknown> => await client.eval(RENEW, 1, leaseKey, holding, Math.ceil(ttlMs)),
    release: async (holding: string): Promise<unknown> => await client.eval(RELEASE, 1, leaseKey, holding)
  }
}

type LeaseScripts = ReturnType<typeof leaseScripts>

/** Where this replica's holding is: its state, token and epoch, how long it is believed, and the listener told. */
function holdingState(opts: LeaseOptions) {
  const h = {
    state: 'elsewhere' as LeaseState,
    token: undefined as string | undefined,
    epoch: undefined as number | undefined,
    // The token of the last holding, kept after it is lost: a renewal that failed while Redis still held it is taken back.
    lastToken: '',
    validUntil: 0,
    expiry: undefined as NodeJS.Timeout | undefined,
    onChange: (() => {}) as (change: LeaseChange) => void,
    // The first state after start() is always said (the listener knows nothing yet).
    said: false
  }

  function change(next: LeaseState, extra: Omit<LeaseChange, 'state'> = {}): void {
    const was = h.state
    h.state = next
    if (next !== 'held') {
      h.token = undefined
      h.epoch = undefined
      clearTimeout(h.expiry)
    }
    // Repeated pauses or refusals are said once; every holding and every loss is said.
    if (h.said && was === next && next !== 'held') return
    h.said = true
    try {
      h.onChange({ state: next, ...extra })
    } catch (err) {
      opts.onError?.(err instanceof Error ? err : new Error(String(err)))
    }
  }

  /** Believed until `until` (our clock): past it, the holding ends here even if no renewal answered. */
  function trustUntil(sentAt: number): void {
    h.validUntil = sentAt + opts.ttlMs * TRUST
    clearTimeout(h.expiry)
    h.expiry = setTimeout(
      () => {
        if (h.state === 'held') change('elsewhere', { reason: 'the lease was not renewed in its time' })
      },
      Math.max(0, h.validUntil - performance.now())
    )
    h.expiry.unref()
  }

  const held = (): boolean => h.state === 'held' && (opts.redis === undefined || performance.now() < h.validUntil)
  return { h, change, trustUntil, held }
}

type Holding = ReturnType<typeof holdingState>

interface LeaseSteps {
  opts: LeaseOptions
  holding: Holding
  scripts: LeaseScripts
  signal: AbortSignal
}

/** An error for the caller's log, and the reason the pages show. */
function failed(opts: LeaseOptions, err: unknown): string {
  const error = err instanceof Error ? err : new Error(String(err))
  opts.onError?.(error)
  return `Redis did not answer: ${error.message}`
}

/** Awaits `beforeBid`; the wait before trying again when it threw (0 when stopping), or undefined: bid now. */
async function readyToBid({ opts, holding, signal }: LeaseSteps): Promise<number | undefined> {
  try {
    await opts.beforeBid?.(signal)
  } catch (err) {
    if (signal.aborted) return 0
    opts.onError?.(err instanceof Error ? err : new Error(String(err)))
    holding.change('paused', { reason: `not ready to bid: ${err instanceof Error ? err.message : String(err)}` })
    return Math.min(opts.renewMs, 1_000)
  }
  return signal.aborted ? 0 : undefined
}

/** One bid: the wait before the next step (how long the holder's lease has left, at most `renewMs`). */
async function bid(steps: LeaseSteps): Promise<number> {
  const { opts, holding, scripts, signal } = steps
  const { ttlMs, renewMs } = opts
  const notReady = await readyToBid(steps)
  if (notReady !== undefined) return notReady
  const next = randomUUID()
  const sentAt = performance.now()
  let reply: unknown
  try {
    reply = await scripts.acquire(next, holding.h.lastToken)
  } catch (err) {
    holding.change('paused', { reason: failed(opts, err) })
    return Math.min(renewMs, 1_000)
  }
  const [took, n] = Array.isArray(reply) ? reply.map(Number) : [Number.NaN, Number.NaN]
  // Taken, however late the answer came: a later bid takes it back while it is still there.
  if (took === 1) holding.h.lastToken = next
  if (took === 1 && Number.isSafeInteger(n) && performance.now() < sentAt + ttlMs * TRUST) {
    if (signal.aborted) {
      await scripts.release(next).catch(() => {})
      return 0
    }
    holding.h.token = next
    holding.h.epoch = n
    holding.trustUntil(sentAt)
    holding.change('held', { epoch: n })
    return renewMs
  }
  holding.change('elsewhere')
  // Taken, but the answer came too late to believe: bid again at once (the same holding is taken back).
  if (took === 1) return 0
  // The holder's time left (-1: a lease without a time, not ours to judge), at most one renewal period.
  const left = n !== undefined && Number.isFinite(n) && n > 0 ? n : renewMs
  return Math.min(renewMs, Math.max(10, left + 5))
}

/** One renewal of the holding: the wait before the next step. */
async function renew({ opts, holding, scripts }: LeaseSteps, token: string): Promise<number> {
  const sentAt = performance.now()
  let reply: unknown
  try {
    reply = await scripts.renew(token)
  } catch (err) {
    if (holding.h.token === token) holding.change('paused', { reason: `the lease could not be renewed: ${failed(opts, err)}` })
    return 0
  }
  if (holding.h.token !== token) return 0
  if (Number(reply) === 1) {
    holding.trustUntil(sentAt)
    return opts.renewMs
  }
  holding.h.lastToken = ''
  holding.change('elsewhere', { reason: 'the lease was taken over or expired' })
  return 0
}

/** Bid, or renew while held, until stopped. */
async function runLease(steps: LeaseSteps): Promise<void> {
  while (!steps.signal.aborted) {
    const token = steps.holding.h.token
    const wait = token !== undefined ? await renew(steps, token) : await bid(steps)
    if (wait > 0) await sleep(wait, undefined, { signal: steps.signal }).catch(() => {})
  }
}

/** `work` awaited at most STOP_MS, its failure ignored. */
async function bounded(work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([work.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, STOP_MS)))])
  clearTimeout(timer)
}

export function createLease(opts: LeaseOptions) {
  const { redis } = opts
  const leaseKey = `${opts.prefix}lease`
  const holding = holdingState(opts)
  const { h, held } = holding
  const scripts = redis === undefined ? undefined : leaseScripts(redis, leaseKey, `${opts.prefix}epoch`, opts.ttlMs)
  let loop: Promise<void> | undefined
  const stopping = new AbortController()

  return {
    /** The lease's key, for a write fenced by the token (the fleet log's publish script). */
    key: leaseKey,

    /** Whether this replica holds the lease now (and its time has not run out on our clock). */
    held,

    /** The token of the holding, while held: a fenced write passes only with it. */
    token(): string | undefined {
      return held() ? h.token : undefined
    },

    epoch(): number | undefined {
      return held() ? h.epoch : undefined
    },

    state(): LeaseState {
      return h.state
    },

    /** Bid now and from now on; `listener` hears each change (taken, lost, paused, stopped). */
    start(listener: (change: LeaseChange) => void = () => {}): void {
      if (loop !== undefined || stopping.signal.aborted) return
      h.onChange = listener
      if (scripts === undefined) {
        loop = Promise.resolve()
        h.token = randomUUID()
        h.epoch = 0
        holding.change('held', { epoch: 0 })
        return
      }
      loop = runLease({ opts, holding, scripts, signal: stopping.signal })
    },

    /** Stop bidding and renewing, and give the lease up if held (never waits on Redis more than a moment). */
    async stop(): Promise<void> {
      if (stopping.signal.aborted) return
      stopping.abort()
      const token = h.token
      holding.change('stopped')
      await bounded(loop ?? Promise.resolve())
      if (token !== undefined && scripts !== undefined) await bounded(scripts.release(token))
    }
  }
}

export type Lease = ReturnType<typeof createLease>
