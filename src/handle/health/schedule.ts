/**
 * When a watched DOI is checked (issue 42, plan D10): each DOI has a fixed place (its slot) in the interval, taken
 * from a hash of its key, so the checks of 100 k DOIs spread evenly and a DOI is back on its place after an outage.
 * A check is recorded against its interval window; the next one is due at the start of the DOI's next window, so a
 * DOI is never checked twice in one window whatever the restarts. Times are epoch milliseconds, passed in.
 */
import { createHash } from 'node:crypto'

const DAY_MS = 86_400_000
/** Retries after our own failure (not the DOI's) start at 5 minutes and double, up to 6 hours. */
export const RETRY_FIRST_MS = 5 * 60_000
export const RETRY_MAX_MS = 6 * 3_600_000

/** The DOI's place in the interval: the first 6 bytes of sha256(key) modulo the interval (0 ≤ slot < intervalMs). */
export function slotOf(key: string, intervalMs: number): number {
  const head = createHash('sha256').update(key, 'utf8').digest().readUIntBE(0, 6)
  return head % intervalMs
}

/** The window a time falls in: window w runs from slot + w·I (inclusive) to slot + (w+1)·I. */
export function windowOf(t: number, slot: number, intervalMs: number): number {
  return Math.floor((t - slot) / intervalMs)
}

/** After a recorded check in window w, the next is due when window w + 1 opens. */
export function nextScheduled(window: number, slot: number, intervalMs: number): number {
  return slot + (window + 1) * intervalMs
}

/** A new DOI's first check: within a day (or the interval, if shorter), spread by its slot, so a first picture comes soon. */
export function firstCheckAt(now: number, slot: number, intervalMs: number): number {
  return now + (slot % Math.min(intervalMs, DAY_MS))
}

/** After the n-th error in a row (n = 0 for the first): 5 min · 2^n, at most 6 h; an error is not a check of the window. */
export function retryAt(now: number, n: number): number {
  const steps = Math.max(0, Math.min(Math.floor(n), 16))
  return now + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** steps)
}
