/**
 * Upstream latency on the status page: one step's histogram (bucket counts, not cumulative), steps added
 * up, and quantiles read from them. Pure: no clock, no I/O.
 */

/** One step's histogram: each bucket's upper bound (seconds) and how many requests ended in it. */
export interface LatencyStep {
  bounds: number[]
  counts: number[]
}

/** The steps added up; a step whose buckets differ from the first one's is left out. */
export function mergeLatency(steps: readonly LatencyStep[]): LatencyStep {
  const out: LatencyStep = { bounds: [], counts: [] }
  for (const s of steps) {
    if (s.bounds.length === 0) continue
    if (out.bounds.length === 0) {
      out.bounds = [...s.bounds]
      out.counts = new Array<number>(s.bounds.length).fill(0)
    }
    if (s.bounds.length !== out.bounds.length) continue
    for (let i = 0; i < s.counts.length; i++) out.counts[i] = (out.counts[i] ?? 0) + (s.counts[i] ?? 0)
  }
  return out
}

/**
 * A quantile from histogram bucket counts (not cumulative), interpolated inside its bucket as
 * Prometheus's histogram_quantile does; in the +Inf bucket, the largest finite bound.
 */
export function quantile(step: LatencyStep, q: number): number | null {
  const total = step.counts.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  const rank = q * total
  let below = 0
  for (let i = 0; i < step.counts.length; i++) {
    const count = step.counts[i] ?? 0
    const upper = step.bounds[i] ?? Infinity
    const lower = i === 0 ? 0 : (step.bounds[i - 1] ?? 0)
    if (below + count >= rank && count > 0) {
      if (upper === Infinity) return lower
      return lower + (upper - lower) * ((rank - below) / count)
    }
    below += count
  }
  return null
}

/** Seconds as milliseconds, to a tenth. */
export function toMs(seconds: number | null): number | null {
  return seconds === null ? null : Math.round(seconds * 10_000) / 10
}
