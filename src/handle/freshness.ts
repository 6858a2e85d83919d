/**
 * How long an answer of the upstream stays fresh, and how long it is kept after that to stand in when the
 * upstream fails (behaviour.md §3, §11): the one rule every cache tier applies (the process's cache in
 * src/resolve/lookup/resolver.ts, the shared tier in Redis, the snapshot file), and its upper bound, beyond
 * which an entry read back from Redis or a snapshot is not believed (src/resolve/cache/entry-codec.ts). The
 * metadata cache applies it too, with its own cap (metadataEntryFor, src/resolve/metadata/agencies.ts). Also
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

export function freshnessPolicy(config: FreshnessSettings): FreshnessPolicy {
  return {
    minTtlSeconds: config.cacheMinTtlSeconds,
    maxTtlSeconds: config.cacheMaxTtlSeconds,
    notFoundSeconds: config.negativeTtlSeconds,
    maxStaleMs: config.maxStaleSeconds * 1000
  }
}

/** An upstream answer as the rule sees it (src/resolve/upstream/client.ts' UpstreamAnswer is one). */
export type FreshnessAnswer = { kind: 'found'; record: { values: readonly HandleValue[] } } | { kind: 'not-found' }

/** Until when (epoch ms) an answer is fresh, and until when it is kept at all (fresh or standing in). */
export interface Lifetime {
  freshUntil: number
  staleUntil: number
}

/**
 * The lifetime of an answer stored at `now`, or undefined when it is not kept at all: a record with a
 * value of ttl 0 ("do not cache", fresh nor stale), a not-found answer while its life is 0.
 */
export function entryFor(answer: FreshnessAnswer, now: number, policy: FreshnessPolicy): Lifetime | undefined {
  const seconds =
    answer.kind === 'found'
      ? recordCacheSeconds(answer.record.values, now, { maxSeconds: policy.maxTtlSeconds, floorSeconds: policy.minTtlSeconds })
      : policy.notFoundSeconds
  if (seconds <= 0) return undefined
  const freshUntil = now + seconds * 1000
  return { freshUntil, staleUntil: staleUntil({ kind: answer.kind, freshUntil }, policy) }
}

/** Whether an entry is fresh at `at`: it answers without asking the upstream. */
export function isFresh(entry: { freshUntil: number }, at: number): boolean {
  return entry.freshUntil > at
}

/** Until when an entry fresh until `freshUntil` is kept: a found record for the longest staleness more, a not-found answer no longer. */
export function staleUntil(entry: { kind: 'found' | 'not-found'; freshUntil: number }, policy: FreshnessPolicy): number {
  return entry.kind === 'found' ? entry.freshUntil + policy.maxStaleMs : entry.freshUntil
}

/** The longest freshness (ms) entryFor gives any answer: an entry from elsewhere promising more is not believed. */
export function freshBound(policy: FreshnessPolicy): number {
  return Math.max(policy.maxTtlSeconds, policy.notFoundSeconds) * 1000
}

/** behaviour.md R11: the reference keeps a prefix's namespace locations at most an hour. */
export const NAMESPACE_LOCATIONS_MAX_SECONDS = 3600

/**
 * How long (seconds) the namespace locations made of `values` are kept for the DOIs of their prefix: the
 * smallest ttl of the values, at most an hour, with no floor (0: not kept). Not the settings' rule: the
 * reference's own (behaviour.md R11), so a namespace's change shows within the hour whatever the cache's.
 */
export function namespaceLocationsSeconds(values: readonly HandleValue[], now: number): number {
  return recordCacheSeconds(values, now, { maxSeconds: NAMESPACE_LOCATIONS_MAX_SECONDS, floorSeconds: 0 })
}

/**
 * The same rule for the metadata an agency answers (docs/metadata.md, src/resolve/metadata/agencies.ts): the
 * records' not-found life and staleness (NEGATIVE_TTL_SECONDS, MAX_STALE_SECONDS), with its own cap
 * (METADATA_MAX_TTL_SECONDS) in place of the records' and no floor.
 */
export interface MetadataFreshnessPolicy {
  /** An agency's answer is fresh at most this long, whatever its Cache-Control says (METADATA_MAX_TTL_SECONDS). */
  readonly maxTtlSeconds: number
  /** A 404, 406 or 410 at most this long (NEGATIVE_TTL_SECONDS). */
  readonly notFoundSeconds: number
  /** A kept answer (a 404 or 406 too) is kept this long past its freshness, to stand in when the agency fails. */
  readonly maxStaleMs: number
}

/** The metadata's policy: the records' `policy` with the metadata's own cap. */
export function metadataFreshnessPolicy(policy: FreshnessPolicy, maxTtlSeconds: number): MetadataFreshnessPolicy {
  return { maxTtlSeconds, notFoundSeconds: policy.notFoundSeconds, maxStaleMs: policy.maxStaleMs }
}

/** An agency that says nothing about freshness: an hour (capped by METADATA_MAX_TTL_SECONDS). */
export const METADATA_DEFAULT_FRESH_SECONDS = 3600
// What an agency answers that is kept (a 2xx with the metadata or nothing, a not-found); the not-found ones.
const METADATA_KEPT = new Set([200, 203, 204, 404, 406, 410])
const METADATA_NOT_FOUND = new Set([404, 406, 410])

/** An agency's answer as the rule sees it: its HTTP status and its Cache-Control header. */
export interface MetadataFreshnessAnswer {
  status: number
  cacheControl: string | undefined
}

/**
 * The lifetime of an agency's answer stored at `now`: fresh for what its Cache-Control says (s-maxage, else
 * max-age; an hour when it says nothing; 0 for no-store, no-cache, private), at most `maxTtlSeconds`, a
 * not-found at most `notFoundSeconds`; then kept `maxStaleMs` more to stand in. `kept` is false for a status
 * not kept, or a life of 0: such an answer is not cached, and its `freshUntil` is only its Expires.
 */
export function metadataEntryFor(
  answer: MetadataFreshnessAnswer,
  now: number,
  policy: MetadataFreshnessPolicy
): Lifetime & { kept: boolean } {
  let seconds = Math.min(policy.maxTtlSeconds, cacheControlSeconds(answer.cacheControl) ?? METADATA_DEFAULT_FRESH_SECONDS)
  if (METADATA_NOT_FOUND.has(answer.status)) seconds = Math.min(seconds, policy.notFoundSeconds)
  const freshUntil = now + seconds * 1000
  return { freshUntil, staleUntil: freshUntil + policy.maxStaleMs, kept: METADATA_KEPT.has(answer.status) && seconds > 0 }
}

/** Freshness in seconds from Cache-Control (s-maxage, else max-age); undefined when it says nothing; 0 for no-store/no-cache/private. */
export function cacheControlSeconds(header: string | undefined): number | undefined {
  if (header === undefined) return undefined
  const directives = header
    .toLowerCase()
    .split(',')
    .map((d) => d.trim())
  if (directives.some((d) => d === 'no-store' || d === 'no-cache' || d === 'private')) return 0
  const read = (name: string): number | undefined => {
    const d = directives.find((x) => x.startsWith(`${name}=`))
    const v = d?.slice(name.length + 1).replace(/^"|"$/g, '')
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined
  }
  return read('s-maxage') ?? read('max-age')
}
