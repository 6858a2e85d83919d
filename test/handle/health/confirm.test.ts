import { describe, expect, it } from 'vitest'
import { advance, uncheckedState } from '../../../src/handle/health/confirm.js'
import type { ConfirmRules } from '../../../src/handle/health/confirm.js'
import type { CheckKind, CheckVerdict, DoiState } from '../../../src/handle/health/types.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const WEEK = 7 * DAY
const RULES: ConfirmRules = { confirm: 3, gapMs: HOUR, intervalMs: WEEK, slot: DAY }
const T = DAY + 10 * WEEK + 2 * HOUR // in window 10

function state(over: Partial<DoiState>): DoiState {
  return { ...uncheckedState(0, RULES.slot, RULES.intervalMs), ...over }
}
const alive = state({ verdict: 'alive', since: 5, confirmedAt: 5, window: 9 })
const dead = state({ verdict: 'dead', since: 100, confirmedAt: 200, window: 9 })
const once = (s: DoiState, verdict: CheckVerdict, now: number, kind: CheckKind = 'scheduled', rules = RULES) =>
  advance(s, { verdict, kind }, rules, now)

// Issue 42, plan D11: confirmed broken only after HEALTH_CONFIRM failures each HEALTH_CONFIRM_GAP_SECONDS apart.
describe('when a watched DOI is confirmed broken', () => {
  it('a new DOI is unchecked, first checked within a day at its place', () => {
    expect(uncheckedState(1000, 3 * DAY + 5 * HOUR, WEEK)).toMatchObject({
      verdict: 'unchecked',
      since: null,
      window: -1,
      nextAt: 1000 + 5 * HOUR
    })
  })

  // D11: a failure while not broken starts a streak; the DOI keeps its verdict; a re-check comes after the gap.
  it('one failure of an alive DOI is not yet broken: re-checked after the gap', () => {
    const after = once(alive, 'dead', T)
    expect(after.state).toMatchObject({
      verdict: 'alive',
      since: 5,
      streak: 1,
      streakVerdict: 'dead',
      streakFirstAt: T,
      streakLastAt: T,
      window: 10
    })
    expect(after.nextAt).toBe(T + HOUR)
    expect(after.newlyBroken).toBeUndefined()
  })

  // D11: at HEALTH_CONFIRM failures: since = streak start, confirmedAt = now, newly broken counted.
  it('the third failure, each an hour apart, confirms it broken since the first', () => {
    const first = once(alive, 'dead', T)
    const second = once(first.state, 'dead', T + HOUR, 'confirm')
    const third = once(second.state, 'dead', T + 2 * HOUR, 'confirm')
    expect(second.state).toMatchObject({ verdict: 'alive', streak: 2 })
    expect(third.state).toMatchObject({ verdict: 'dead', since: T, confirmedAt: T + 2 * HOUR, streak: 0, streakVerdict: null, window: 10 })
    expect(third.newlyBroken).toBe('dead')
    expect(third.nextAt).toBe(RULES.slot + 11 * WEEK)
  })

  // D11: the streak is of failures; the confirmed kind is the last one seen.
  it('failures of different kinds in a row confirm the last kind', () => {
    const s = once(once(once(alive, 'dead', T).state, 'dead', T + HOUR, 'confirm').state, 'not-found', T + 2 * HOUR, 'confirm')
    expect(s.state.verdict).toBe('not-found')
    expect(s.newlyBroken).toBe('not-found')
  })

  // D11: "each ≥ GAP after the previous": a failure sooner does not count, and the re-check waits for the gap.
  it('a failure sooner than the gap after the last does not count', () => {
    const first = once(alive, 'dead', T)
    const soon = once(first.state, 'dead', T + 10 * MIN, 'confirm')
    expect(soon.state).toMatchObject({ verdict: 'alive', streak: 1, streakLastAt: T })
    expect(soon.nextAt).toBe(T + HOUR)
  })

  // D11: HEALTH_CONFIRM=1: at once.
  it('with HEALTH_CONFIRM=1 a single failure is confirmed at once', () => {
    const after = once(alive, 'takeover', T, 'scheduled', { ...RULES, confirm: 1 })
    expect(after.state).toMatchObject({ verdict: 'takeover', since: T, confirmedAt: T, streak: 0 })
    expect(after.newlyBroken).toBe('takeover')
  })

  // D11: a non-failure ends the streak and is confirmed at once.
  it.each(['alive', 'unconfirmed', 'blocked'] as const)('%s after one failure ends the streak', (verdict) => {
    const after = once(once(alive, 'dead', T).state, verdict, T + HOUR, 'confirm')
    expect(after.state).toMatchObject({ verdict, streak: 0, streakVerdict: null, streakFirstAt: null, streakLastAt: null })
    expect(after.state.since).toBe(verdict === 'alive' ? 5 : T + HOUR)
  })

  it('a broken DOI that answers alive has recovered at once, since now, and pages no one', () => {
    const after = once(dead, 'alive', T)
    expect(after.state).toMatchObject({ verdict: 'alive', since: T, confirmedAt: T })
    expect(after.newlyBroken).toBeUndefined()
  })

  // D11: broken → another failure kind switches kind, since kept; not newly broken again.
  it.each([
    ['dead', 'dead'],
    ['no-url', 'no-url']
  ] as const)('a broken DOI failing as %s stays broken since it broke', (verdict, shown) => {
    const after = once(dead, verdict, T)
    expect(after.state).toMatchObject({ verdict: shown, since: 100, confirmedAt: 200, streak: 0 })
    expect(after.newlyBroken).toBeUndefined()
    expect(after.nextAt).toBe(RULES.slot + 11 * WEEK)
  })

  it('the first check of a new DOI is believed at once', () => {
    const after = once(uncheckedState(0, RULES.slot, WEEK), 'blocked', T)
    expect(after.state).toMatchObject({ verdict: 'blocked', since: T, confirmedAt: T, window: 10 })
  })

  // D11 "error changes nothing"; D10: not a check of the window, retry min(6 h, 5 min·2^n).
  it.each([
    [0, 5 * MIN],
    [2, 20 * MIN],
    [9, 6 * HOUR]
  ])('our own error after %i errors keeps the verdict and window, retrying in %i ms', (retries, wait) => {
    const before = { ...once(alive, 'dead', T).state, retries }
    const after = once(before, 'error', T + HOUR)
    expect(after.state).toEqual({ ...before, retries: retries + 1, nextAt: T + HOUR + wait })
    expect(after.nextAt).toBe(T + HOUR + wait)
  })

  it('a check after errors resets the retries', () => {
    expect(once({ ...alive, retries: 4 }, 'alive', T).state.retries).toBe(0)
  })

  // D10: a confirmation re-check is an extra check, not the window's; a scheduled one records its window.
  it('a confirmation re-check keeps the window of the last scheduled check', () => {
    const first = once(alive, 'dead', T)
    const recheck = once(first.state, 'alive', T + WEEK, 'confirm')
    expect(recheck.state.window).toBe(10)
    expect(recheck.nextAt).toBe(RULES.slot + 11 * WEEK)
    expect(once(alive, 'alive', T + WEEK, 'once').state.window).toBe(11)
  })
})
