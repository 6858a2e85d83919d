import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { firstCheckAt, nextScheduled, retryAt, slotOf, windowOf } from '../../../src/handle/health/schedule.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const WEEK = 7 * DAY

// Issue 42, plan D10: each DOI checked once per interval, on its own place in it, and spread across the fleet's work.
describe('when a watched DOI is checked', () => {
  // slot = sha256(key)[0..6] mod I (plan D10): the same key always lands on the same place, on every replica.
  it.each([
    ['10.5555/abc', WEEK],
    ['10.5555/abc', DAY],
    ['10.1234/xyz-9', 1000],
    ['', WEEK]
  ])('%s has its place from its hash in an interval of %i ms', (key, interval) => {
    const head = createHash('sha256').update(key).digest().readUIntBE(0, 6)
    expect(slotOf(key, interval)).toBe(head % interval)
    expect(slotOf(key, interval)).toBeGreaterThanOrEqual(0)
    expect(slotOf(key, interval)).toBeLessThan(interval)
  })

  it('a thousand DOIs spread over the interval rather than bunching (each tenth holds 50 to 150)', () => {
    const tenths = new Array<number>(10).fill(0)
    for (let i = 0; i < 1000; i++) tenths[Math.floor((slotOf(`10.5555/doi-${i}`, WEEK) / WEEK) * 10)]! += 1
    for (const count of tenths) expect(count).toBeGreaterThan(50)
    for (const count of tenths) expect(count).toBeLessThan(150)
  })

  // w(t) = floor((t − slot)/I) (plan D10): windows start at the slot, not at the epoch.
  it.each([
    [0, 0, WEEK, 0],
    [WEEK - 1, 0, WEEK, 0],
    [WEEK, 0, WEEK, 1],
    [5 * DAY, 3 * DAY, WEEK, 0],
    [3 * DAY - 1, 3 * DAY, WEEK, -1],
    [3 * DAY + 10 * WEEK, 3 * DAY, WEEK, 10]
  ])('at %i with slot %i and interval %i the window is %i', (t, slot, interval, window) => {
    expect(windowOf(t, slot, interval)).toBe(window)
  })

  // nextAt = slot + (w+1)·I (plan D10): never twice per window, back on its even place after an outage.
  it.each([
    [0, 3 * DAY, WEEK, 3 * DAY + WEEK],
    [10, 3 * DAY, WEEK, 3 * DAY + 11 * WEEK],
    [-1, 3 * DAY, WEEK, 3 * DAY]
  ])('after a check in window %i (slot %i, interval %i) the next is due at %i', (window, slot, interval, next) => {
    expect(nextScheduled(window, slot, interval)).toBe(next)
  })

  it('a check made late in its window (after an outage) is still followed by one at the DOI’s own place', () => {
    const slot = slotOf('10.5555/late', WEEK)
    const late = slot + 40 * WEEK + WEEK - 1
    const next = nextScheduled(windowOf(late, slot, WEEK), slot, WEEK)
    expect(next).toBe(slot + 41 * WEEK)
    expect(windowOf(next, slot, WEEK)).toBe(windowOf(late, slot, WEEK) + 1)
  })

  // First check: now + slot mod min(I, 1 day) (plan D10): a first picture within a day, spread.
  it.each([
    [1000, 5 * HOUR, WEEK, 1000 + 5 * HOUR],
    [1000, 3 * DAY + 5 * HOUR, WEEK, 1000 + 5 * HOUR],
    [1000, 40 * MIN, HOUR, 1000 + 40 * MIN]
  ])('a new DOI seen at %i with slot %i (interval %i) is first checked at %i', (now, slot, interval, at) => {
    expect(firstCheckAt(now, slot, interval)).toBe(at)
  })

  // Our own failure: retry min(6 h, 5 min·2^n) (plan D10).
  it.each([
    [0, 5 * MIN],
    [1, 10 * MIN],
    [3, 40 * MIN],
    [6, 320 * MIN],
    [7, 6 * HOUR],
    [1000, 6 * HOUR],
    [-3, 5 * MIN]
  ])('after error number %i in a row the retry waits %i ms', (n, wait) => {
    expect(retryAt(1_000_000, n)).toBe(1_000_000 + wait)
  })
})
