import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RedisClient } from './redis.js'

/**
 * An answer per key (a DOI's retraction verdict, its landing verdict) shared by the replicas through Redis,
 * and one fetch per key across them: the replica that takes the key's lock (`SET NX PX`) fetches and writes
 * the answer; the others look for it every `pollMs` until the lock's time is up, then give up for now (the
 * next asker tries again). Redis absent or failing is Redis without the answer: this replica fetches, and
 * nothing waits on a Redis that does not answer. Keys: `<prefix>answer:<key>` and `<prefix>lock:<key>`.
 */
export interface SharedAnswerCodec<T> {
  encode: (value: T) => string
  /** A value read back, checked (whatever is in Redis): undefined when it is not one. */
  decode: (text: string) => T | undefined
}

export interface SharedAnswersOptions<T> {
  redis: RedisClient | undefined
  /** REDIS_KEY_PREFIX, the part and its format's version: `doi-proxy:landing:1:`. */
  prefix: string
  codec: SharedAnswerCodec<T>
  /** How long the replica that fetches holds the key: the others wait at most this long. Longer than a fetch takes. */
  lockMs: number
  /** How often the waiting replicas look for the answer. */
  pollMs: number
  /** The longest text read back (larger is no answer): what Redis holds is bounded like any upstream's answer. */
  maxChars?: number
}

/** An answer and how long it stays fresh (for the memory cache beside it). */
export interface SharedAnswer<T> {
  value: T
  ttlMs: number
}

/** What `once` came to: the answer (read from Redis, or fetched here), or none because another replica's fetch did not finish in its lock's time. */
export type SharedOutcome<T> = (SharedAnswer<T> & { from: 'shared' | 'fetched' }) | { from: 'gave-up' }

const MAX_CHARS = 1024 * 1024

// Deletes the lock only while it is still this fetch's: after its time, another replica's may stand there.
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

export function createSharedAnswers<T>(opts: SharedAnswersOptions<T>) {
  const { read, put, lock, release, locked } = answerStore(opts)

  /** The fetch made here, its answer written for the others, then the lock (if this replica holds it) released. */
  async function fetchHere(key: string, fetch: () => Promise<SharedAnswer<T>>, token: string | undefined): Promise<SharedOutcome<T>> {
    try {
      const answer = await fetch()
      await put(key, answer.value, answer.ttlMs)
      return { ...answer, from: 'fetched' }
    } finally {
      if (token !== undefined) release(key, token)
    }
  }

  return {
    /** Another replica's answer, if Redis has one (a Redis that fails or is slow is no answer). */
    async get(key: string): Promise<SharedAnswer<T> | undefined> {
      const found = await read(key)
      return found === 'failed' ? undefined : found
    },

    /** Write an answer for the others, fresh for `ttlMs` (0 or less: not shared); a Redis that fails is let be. */
    put,

    /**
     * The key's answer, fetched once across the replicas: Redis's if it has one; else `fetch` here when this
     * replica takes the lock (or Redis cannot say), its answer written for the others; else the answer the
     * lock's holder writes, waited for until its lock's time is up or `signal` aborts (then its reason is thrown).
     * A fetch that throws releases the lock and throws.
     */
    async once(key: string, fetch: () => Promise<SharedAnswer<T>>, signal?: AbortSignal): Promise<SharedOutcome<T>> {
      signal?.throwIfAborted()
      const found = await read(key)
      if (found !== undefined && found !== 'failed') return { ...found, from: 'shared' }
      const held = found === 'failed' ? true : await lock(key)
      if (held === true || 'token' in held) return await fetchHere(key, fetch, held === true ? undefined : held.token)
      const until = performance.now() + held.othersMs
      while (performance.now() < until) {
        await sleep(Math.min(opts.pollMs, Math.max(1, until - performance.now())), undefined, { signal }).catch(() => {
          throw signal?.reason
        })
        const shared = await read(key)
        if (shared === 'failed') return await fetchHere(key, fetch, undefined)
        if (shared !== undefined) return { ...shared, from: 'shared' }
        if (!(await locked(key))) {
          // The holder is done: its answer was written before its lock went, or it left none (its fetch failed).
          const last = await read(key)
          return last !== undefined && last !== 'failed' ? { ...last, from: 'shared' } : { from: 'gave-up' }
        }
      }
      return { from: 'gave-up' }
    }
  }
}

export type SharedAnswers<T> = ReturnType<typeof createSharedAnswers<T>>

/** The Redis commands of shared answers: the answer read and written, the key's lock taken, released, looked for. */
function answerStore<T>(opts: SharedAnswersOptions<T>) {
  const { redis, codec } = opts
  const maxChars = opts.maxChars ?? MAX_CHARS
  const answerKey = (key: string): string => `${opts.prefix}answer:${key}`
  const lockKey = (key: string): string => `${opts.prefix}lock:${key}`

  /** The answer in Redis, if any; 'failed' when Redis did not answer, or there is none (then no other replica can answer either). */
  async function read(key: string): Promise<SharedAnswer<T> | undefined | 'failed'> {
    if (redis === undefined) return 'failed'
    let text: string | null
    let ttlMs: number
    try {
      ;[text, ttlMs] = await Promise.all([redis.get(answerKey(key)), redis.pttl(answerKey(key))])
    } catch {
      return 'failed'
    }
    if (text === null || ttlMs <= 0 || text.length > maxChars) return undefined
    const value = codec.decode(text)
    return value === undefined ? undefined : { value, ttlMs }
  }

  async function put(key: string, value: T, ttlMs: number): Promise<void> {
    if (redis === undefined || ttlMs <= 0) return
    const text = codec.encode(value)
    if (text.length > maxChars) return
    await redis.set(answerKey(key), text, 'PX', Math.ceil(ttlMs)).then(
      () => undefined,
      () => undefined
    )
  }

  /** This replica's lock on the key (a token to release it), true when Redis cannot hold one, or how long another's has left. */
  async function lock(key: string): Promise<{ token: string } | { othersMs: number } | true> {
    if (redis === undefined) return true
    const token = randomUUID()
    try {
      if ((await redis.set(lockKey(key), token, 'PX', Math.ceil(opts.lockMs), 'NX')) === 'OK') return { token }
      const left = await redis.pttl(lockKey(key))
      // Gone meanwhile (-2), or without a time (-1, not ours to judge): wait a whole lock's time at most.
      return { othersMs: left > 0 ? Math.min(left, opts.lockMs) : opts.lockMs }
    } catch {
      return true
    }
  }

  function release(key: string, token: string): void {
    redis?.eval(RELEASE, 1, lockKey(key), token).catch(() => {})
  }

  /** Whether a replica holds the key's lock (a Redis that fails: as if so, the wait goes on to its time). */
  async function locked(key: string): Promise<boolean> {
    try {
      return (await redis?.exists(lockKey(key))) !== 0
    } catch {
      return true
    }
  }

  return { read, put, lock, release, locked }
}
