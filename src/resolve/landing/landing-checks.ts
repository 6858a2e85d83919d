import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { landingResultOf } from '../../handle/landing/verdict.js'
import type { LandingResult } from '../../handle/verify/types.js'
import type { RedisClient } from '../fleet/redis.js'
import { createSharedAnswers, type SharedAnswerCodec } from '../fleet/shared-answers.js'
import type { Recorder } from '../recording/recorder.js'
import type { LandingProber } from './prober.js'
import { recordLandingVerdict } from './recorded-verdicts.js'

/**
 * Cached landing verdicts (issue 41): this replica's LRU, then the fleet's answer in Redis, then one probe
 * per DOI and URL across the fleet (shared answers' lock). A verdict lasts by what it says: `alive` and
 * `unconfirmed` for `ttlMs`, `blocked` and `dead` for `shortTtlMs` (a page back up is seen soon); a probe
 * without a verdict is not kept. Callers asking at once share one probe; it is aborted only when every
 * one of them has left.
 */
export interface LandingChecksOptions {
  prober: Pick<LandingProber, 'probe'>
  /** LANDING_TTL_SECONDS in ms: `alive`, `unconfirmed`; 0 keeps none. */
  ttlMs: number
  /** LANDING_SHORT_TTL_SECONDS in ms: `blocked`, `dead`; 0 keeps none. */
  shortTtlMs: number
  /** LANDING_CACHE_MAX_ENTRIES. */
  maxEntries: number
  redis?: RedisClient | undefined
  /** REDIS_KEY_PREFIX and the part's version: `doi-proxy:landing:1:`. */
  prefix?: string
  /** How long another replica's probe is waited for: longer than a probe takes. */
  lockMs?: number
  pollMs?: number
  /** The clock of the memory cache's TTLs (tests inject theirs). */
  now?: () => number
  /** RECORD_TO: each verdict this process learns written beside the DOI's record (recorded-verdicts.ts). */
  recorder?: Pick<Recorder, 'recordMetadata'> | undefined
  /** Probes under way at once, at most (MAX_FLIGHTS); past it a check's verdict is null, saying so. */
  maxFlights?: number
}

/** What Redis holds, checked on the way back (landingResultOf): a verdict with its status, URL and evidence, each bounded. */
export const landingCodec: SharedAnswerCodec<LandingResult> = {
  encode: (value) => JSON.stringify(value),
  decode: (text) => {
    try {
      return landingResultOf(JSON.parse(text))
    } catch {
      return undefined
    }
  }
}

/** Probes under way at once, at most: each holds a host slot's place and a socket. */
export const MAX_FLIGHTS = 10_000

interface Flight {
  promise: Promise<LandingResult>
  controller: AbortController
  waiters: number
}

export function createLandingChecks(opts: LandingChecksOptions) {
  const now = opts.now ?? (() => performance.now())
  const cache = new LRUCache<string, LandingResult>({ max: opts.maxEntries, perf: { now }, ttlResolution: 0 })
  const shared = createSharedAnswers<LandingResult>({
    redis: opts.redis,
    prefix: opts.prefix ?? 'doi-proxy:landing:1:',
    codec: landingCodec,
    lockMs: opts.lockMs ?? 120_000,
    pollMs: opts.pollMs ?? 250
  })
  const flights = new Map<string, Flight>()

  const ttlOf = (result: LandingResult): number =>
    result.verdict === null ? 0 : result.verdict === 'alive' || result.verdict === 'unconfirmed' ? opts.ttlMs : opts.shortTtlMs

  const keep = (key: string, value: LandingResult, ttlMs: number): void => {
    if (ttlMs > 0 && value.verdict !== null) cache.set(key, value, { ttl: Math.ceil(ttlMs) })
  }

  async function fly(key: string, doi: string, url: string, titles: readonly string[], signal: AbortSignal): Promise<LandingResult> {
    const probe = async (): Promise<{ value: LandingResult; ttlMs: number }> => {
      const value = await opts.prober.probe({ doi, url, titles }, signal)
      return { value, ttlMs: ttlOf(value) }
    }
    let outcome = await shared.once(key, probe, signal)
    // Another replica's probe outlived its lock: this one probes (its answer is written for the others).
    if (outcome.from === 'gave-up') {
      const answer = await probe()
      await shared.put(key, answer.value, answer.ttlMs)
      outcome = { ...answer, from: 'fetched' }
    }
    keep(key, outcome.value, outcome.ttlMs)
    if (opts.recorder !== undefined) recordLandingVerdict(opts.recorder, doi, url, outcome.value)
    return outcome.value
  }

  /** A probe made now whatever is kept (health's confirmations, issue 42); its verdict replaces the kept one here and in Redis. */
  async function reprobe(key: string, doi: string, url: string, titles: readonly string[], signal: AbortSignal): Promise<LandingResult> {
    const value = await opts.prober.probe({ doi, url, titles }, signal)
    const ttlMs = ttlOf(value)
    if (value.verdict !== null) await shared.put(key, value, ttlMs)
    cache.delete(key)
    keep(key, value, ttlMs)
    if (opts.recorder !== undefined) recordLandingVerdict(opts.recorder, doi, url, value)
    return value
  }

  const keyOf = (doi: string, url: string): string => createHash('sha256').update(`${doi.toLowerCase()}\n${url}`).digest('hex')

  return {
    /** The landing verdict of a DOI's registered URL: cached, shared, or probed once; `signal` is this caller leaving (its reason thrown). */
    async check(
      doi: string,
      url: string,
      titles: readonly string[],
      signal?: AbortSignal,
      admit?: () => Promise<unknown>
    ): Promise<LandingResult> {
      signal?.throwIfAborted()
      // The URL is part of the key: a DOI registered anew at another URL is checked anew.
      const key = keyOf(doi, url)
      const cached = cache.get(key)
      if (cached !== undefined) return cached
      let flight = flights.get(key)
      if (flight === undefined && admit !== undefined) {
        // A page to visit is work the reader's admission pays for (RATE_LIMIT_*), as a lookup upstream is;
        // an answer at hand or a probe under way is not.
        await admit()
        signal?.throwIfAborted()
        const meanwhile = cache.get(key)
        if (meanwhile !== undefined) return meanwhile
        flight = flights.get(key)
      }
      if (flight === undefined && flights.size >= (opts.maxFlights ?? MAX_FLIGHTS)) {
        return { verdict: null, status: null, url, evidence: null, error: 'too many landing checks at once: try again later' }
      }
      flight ??= takeOff(flights, key, (flightSignal) => fly(key, doi, url, titles, flightSignal))
      return await waitFor(flights, key, flight, signal)
    },

    /**
     * The page visited again, whatever verdict is kept (a failure must be seen again to be confirmed: issue 42);
     * a probe under way for the same DOI and URL is joined rather than doubled. Never admitted: the health checker
     * is its own paced client.
     */
    async recheck(doi: string, url: string, titles: readonly string[], signal?: AbortSignal): Promise<LandingResult> {
      signal?.throwIfAborted()
      const key = keyOf(doi, url)
      let flight = flights.get(key)
      if (flight === undefined && flights.size >= (opts.maxFlights ?? MAX_FLIGHTS)) {
        return { verdict: null, status: null, url, evidence: null, error: 'too many landing checks at once: try again later' }
      }
      flight ??= takeOff(flights, key, (flightSignal) => reprobe(key, doi, url, titles, flightSignal))
      return await waitFor(flights, key, flight, signal)
    }
  }
}

export type LandingChecks = ReturnType<typeof createLandingChecks>

/** A probe under way, in `flights` until it ends (whoever asked), aborted through its own controller. */
function takeOff(flights: Map<string, Flight>, key: string, fly: (signal: AbortSignal) => Promise<LandingResult>): Flight {
  const controller = new AbortController()
  const made: Flight = { controller, waiters: 0, promise: fly(controller.signal) }
  made.promise
    .finally(() => {
      if (flights.get(key) === made) flights.delete(key)
    })
    .catch(() => {})
  flights.set(key, made)
  return made
}

/** A probe's verdict for one more waiter; this waiter leaving (`signal`) throws its reason, and the last one leaving aborts the probe. */
async function waitFor(flights: Map<string, Flight>, key: string, held: Flight, signal: AbortSignal | undefined): Promise<LandingResult> {
  held.waiters++
  let left = false
  const leave = (): void => {
    if (left) return
    left = true
    held.waiters--
    if (held.waiters === 0) {
      // The last waiter gone: nobody wants this probe any more.
      if (flights.get(key) === held) flights.delete(key)
      held.controller.abort(signal?.reason)
    }
  }
  if (signal === undefined) {
    try {
      return await held.promise
    } finally {
      leave()
    }
  }
  return await new Promise<LandingResult>((resolve, reject) => {
    const onAbort = (): void => {
      leave()
      reject(signal.reason)
    }
    signal.addEventListener('abort', onAbort, { once: true })
    held.promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        leave()
        resolve(value)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        leave()
        reject(err)
      }
    )
  })
}
