import { createHash } from 'node:crypto'

/**
 * What a cache's records were made from (behaviour.md §11): the upstream they were fetched from, and
 * whether the process was offline. A snapshot file says it in its header and the shared tier folds it
 * into its keys, so records of one upstream never answer for another (a developer switching from a test
 * fixture to doi.org, two deployments with different upstreams on one Redis). Pure: no I/O.
 */
export interface CacheSource {
  /** The upstream's base URL, normalised (host case, trailing slashes). */
  upstream: string
  offline: boolean
}

export function cacheSourceOf(config: { upstreamUrl: string; offline: boolean }): CacheSource {
  let upstream = config.upstreamUrl
  try {
    upstream = new URL(config.upstreamUrl).href
  } catch {
    /* validated at start; kept as given otherwise */
  }
  return { upstream: upstream.replace(/\/+$/, ''), offline: config.offline }
}

/** A short name of the source (12 hex digits of its SHA-256), for Redis keys and set-aside files. */
export function sourceId(source: CacheSource): string {
  return createHash('sha256')
    .update(JSON.stringify([source.upstream, source.offline]))
    .digest('hex')
    .slice(0, 12)
}

/** The source as read back from a file (anything): undefined when it is not exactly a source. */
export function checkSource(raw: unknown): CacheSource | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined
  const { upstream, offline } = raw as { upstream?: unknown; offline?: unknown }
  if (typeof upstream !== 'string' || upstream.length > 4096 || typeof offline !== 'boolean') return undefined
  return { upstream, offline }
}

export function sameSource(a: CacheSource, b: CacheSource): boolean {
  return a.upstream === b.upstream && a.offline === b.offline
}
