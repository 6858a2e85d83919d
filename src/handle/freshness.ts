/**
 * How long an answer of the upstream stays fresh, and how long it is kept after that to stand in when the
 * upstream fails (behaviour.md §3, §11): the one rule every cache tier applies (the process's cache in
 * src/resolve/lookup/resolver.ts, the shared tier in Redis, the snapshot file), and its upper bound, beyond
 * which an entry read back from Redis or a snapshot is not believed (src/resolve/cache/entry-codec.ts). Also
 * how long a prefix's namespace locations are kept apart (behaviour.md R11, src/resolve/lookup/locations-loader.ts).
 * Pure: no clock, no I/O; time comes in as epoch ms.
 */
import { recordCacheSeconds } from './record.js'
import type { HandleValue } from './types.js'

/** The settings the rule reads, made once from the config (freshnessPolicy) and passed to every tier. */
export interface FreshnessPolicy {
  /** A found record is fresh at least this long (CACHE_MIN_TTL_SECONDS), unless a value's ttl is 0. */
  readonly minTtlSeconds: number
  /** ... and at most this long (CACHE_MAX_TTL_SECONDS), whatever its values' ttl say. */
  readonly maxTtlSeconds: number
  /** A not-found answer is fresh this long (NEGATIVE_TTL_SECONDS); 0: not kept. */
  readonly notFoundSeconds: number
  /** A found record is kept this long past its freshness, to stand in when the upstream fails (MAX_STALE_SECONDS). */
  readonly maxStaleMs: number
}

/** The four settings freshnessPolicy reads, by their names in the config (src/config/schema.ts): a Config is one. */
export interface FreshnessSettings {
  readonly cacheMinTtlSeconds: number
  readonly cacheMaxTtlSeconds: number
  readonly negativeTtlSeconds: number
  readonly maxStaleSeconds: number
}

export function freshnessPolicy (config: FreshnessSettings): FreshnessPolicy {
  return {
    minTtlSeconds: config.cacheMinTtlSeconds,
    maxTtlSeconds: config.cacheMaxTtlSeconds,
    notFoundSeconds: config.negativeTtlSeconds,
    maxStaleMs: config.maxStaleSeconds * 1000
  }
}

/** An upstream answer as the rule sees it (src/resolve/upstream/client.ts' UpstreamAnswer is one). */
export type FreshnessAnswer = { kind: 'found', record: { values: readonly HandleValue[] } } | { kind: 'not-found' }

/** Until when (epoch ms) an answer is fresh, and until when it is kept at all (fresh or standing in). */
export interface Lifetime { freshUntil: number, staleUntil: number }

/**
 * The lifetime of an answer stored at `now`, or undefined when it is not kept at all: a record with a
 * value of ttl 0 ("do not cache", fresh nor stale), a not-found answer while its life is 0.
 */
export function entryFor (answer: FreshnessAnswer, now: number, policy: FreshnessPolicy): Lifetime | undefined {
  const seconds = answer.kind === 'found'
    ? recordCacheSeconds(answer.record.values, now, { maxSeconds: policy.maxTtlSeconds, floorSeconds: policy.minTtlSeconds })
    : policy.notFoundSeconds
  if (seconds <= 0) return undefined
  const freshUntil = now + seconds * 1000
  return { freshUntil, staleUntil: staleUntil({ kind: answer.kind, freshUntil }, policy) }
}

/** Whether an entry is fresh at `at`: it answers without asking the upstream. */
export function isFresh (entry: { freshUntil: number }, at: number): boolean {
  return entry.freshUntil > at
}

/** Until when an entry fresh until `freshUntil` is kept: a found record for the longest staleness more, a not-found answer no longer. */
export function staleUntil (entry: { kind: 'found' | 'not-found', freshUntil: number }, policy: FreshnessPolicy): number {
  return entry.kind === 'found' ? entry.freshUntil + policy.maxStaleMs : entry.freshUntil
}

/** The longest freshness (ms) entryFor gives any answer: an entry from elsewhere promising more is not believed. */
export function freshBound (policy: FreshnessPolicy): number {
  return Math.max(policy.maxTtlSeconds, policy.notFoundSeconds) * 1000
}

/** behaviour.md R11: the reference keeps a prefix's namespace locations at most an hour. */
export const NAMESPACE_LOCATIONS_MAX_SECONDS = 3600

/**
 * How long (seconds) the namespace locations made of `values` are kept for the DOIs of their prefix: the
 * smallest ttl of the values, at most an hour, with no floor (0: not kept). Not the settings' rule: the
 * reference's own (behaviour.md R11), so a namespace's change shows within the hour whatever the cache's.
 */
export function namespaceLocationsSeconds (values: readonly HandleValue[], now: number): number {
  return recordCacheSeconds(values, now, { maxSeconds: NAMESPACE_LOCATIONS_MAX_SECONDS, floorSeconds: 0 })
}
