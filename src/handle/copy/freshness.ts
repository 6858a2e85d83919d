import type { CopyHead, Coverage } from './types.js'

/**
 * When a copy record may answer (issue 43, plan §1.8). Its age is the data's, not the import's: a file
 * six months old imported today is six months old. A record the agency's coverage vouches for (imported
 * from a whole file or an update) is as new as that coverage; any other, as its own stamp. All in seconds.
 */

/** How new a record is known to be: its stamp, or its agency's coverage when that vouches for it and is newer. */
export function effectiveAsOf(head: Pick<CopyHead, 'stamp' | 'covered' | 'agency'>, coverage: Coverage): number {
  const through = head.covered ? (coverage[head.agency]?.through ?? 0) : 0
  return Math.max(head.stamp, through)
}

/**
 * Seconds left before a record answered online is too old (0: it is); `asOf` in the future (a clock
 * behind, a hostile file) counts as now, so no record is ever fresher than REGISTRY_COPY_MAX_AGE_SECONDS.
 */
export function freshForSeconds(asOf: number, nowS: number, maxAgeS: number): number {
  const age = nowS - Math.min(asOf, nowS)
  return Math.max(0, maxAgeS - age)
}

/** Whether the copy answers for a record: offline always; online while it is younger than the maximum age (0: never first). */
export function copyAnswers(asOf: number, nowS: number, maxAgeS: number, offline: boolean): boolean {
  return offline || freshForSeconds(asOf, nowS, maxAgeS) > 0
}
