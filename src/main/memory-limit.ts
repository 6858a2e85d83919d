/**
 * Whether the record cache can fill up within the container's memory limit. The cache is bounded by
 * CACHE_MAX_BYTES, an estimate from records' JSON size, not by what they take in the heap: with the
 * default 256 MiB in a 400 MiB memory cgroup (Node 20) the server died of a V8 "heap out of memory"
 * after ~110,000 distinct DOIs, hours after start. Registry-copy records with their prepared answers
 * take ~2.2 KB of heap each, ~1.4× the estimate (upstream records 819 B for 566 B: bench/RESULTS.md
 * "Memory per cached record"), and V8 keeps headroom above what is live (RssAnon grew 2–3× the
 * estimate). With CACHE_MAX_BYTES=64 MiB the same server served 160,000 DOIs in 400 MiB, RssAnon flat
 * at ~215 MiB. So each worker needs about 128 MiB of its own (node, the app, buffers) plus 3× its
 * CACHE_MAX_BYTES (each worker has a whole cache of its own).
 * Pure: main.ts reads the limit (process.constrainedMemory()) and passes it.
 */

const MIB = 1024 * 1024
/** What a worker takes besides its cache: node, the app, sockets' buffers. */
export const WORKER_BASE_BYTES = 128 * MIB
/** Heap and headroom per byte of the cache's estimate. */
export const CACHE_FACTOR = 3
/**
 * At or above this a "limit" is none: with no limit process.constrainedMemory() returned 2^64 on this
 * Node 20 (cgroup v1); the docs say 0 (undefined in Node 18), and an unlimited cgroup reads 2^63 − 4096.
 */
const NO_LIMIT = 2 ** 50

/** What to tell an operator whose cache cannot fit: the figures for the log line. */
export interface MemoryWarning {
  limitMiB: number
  workers: number
  cacheMaxBytes: number
  /** The largest CACHE_MAX_BYTES (whole MiB, in bytes) that fits; undefined when not even the workers alone fit. */
  suggestedCacheMaxBytes: number | undefined
}

/** undefined when WORKERS caches of `cacheMaxBytes` fit in `limitBytes` (or there is no limit), else what to say. */
export function memoryWarning(limitBytes: number | undefined, workers: number, cacheMaxBytes: number): MemoryWarning | undefined {
  if (limitBytes === undefined || !(limitBytes > 0) || limitBytes >= NO_LIMIT) return undefined
  const count = Math.max(1, workers)
  if (count * (WORKER_BASE_BYTES + CACHE_FACTOR * cacheMaxBytes) <= limitBytes) return undefined
  const perWorker = Math.floor(limitBytes / count)
  const suggestedMiB = Math.floor((perWorker - WORKER_BASE_BYTES) / CACHE_FACTOR / MIB)
  return {
    limitMiB: Math.floor(limitBytes / MIB),
    workers: count,
    cacheMaxBytes,
    // Below 1 MiB a cache holds too little to be worth it: the limit is too small for this many workers.
    suggestedCacheMaxBytes: suggestedMiB >= 1 ? suggestedMiB * MIB : undefined
  }
}

/** The warning as an operator reads it: what may happen, and the setting to change. */
export function memoryWarningMessage(w: MemoryWarning): string {
  const workers = w.workers === 1 ? 'the server' : `${w.workers} workers (each with its own cache)`
  const head = `the record cache may not fit in the memory limit (${w.limitMiB} MiB for ${workers}, CACHE_MAX_BYTES=${w.cacheMaxBytes}): as it fills, the server would stop with an out-of-memory error`
  if (w.suggestedCacheMaxBytes === undefined) {
    const base = `${WORKER_BASE_BYTES / MIB} MiB besides its cache`
    return w.workers === 1
      ? `${head}; ${w.limitMiB} MiB is too small for the server (it needs about ${base}): raise the limit`
      : `${head}; ${w.limitMiB} MiB is too small for ${w.workers} workers (each needs about ${base}): lower WORKERS or raise the limit`
  }
  return `${head}; set CACHE_MAX_BYTES=${w.suggestedCacheMaxBytes} (${w.suggestedCacheMaxBytes / MIB} MiB) or less, or raise the limit`
}
