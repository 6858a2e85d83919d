/**
 * How one check moves a watched DOI's state (issue 42, plan D11): a failure is confirmed only after HEALTH_CONFIRM
 * failed checks in a row, each at least HEALTH_CONFIRM_GAP_SECONDS after the one before (a page down for an hour is
 * not broken); anything else is believed at once (a page naming the DOI is strong evidence, and a recovery pages no
 * one); our own `error` says nothing of the DOI and only sets the retry. Pure: the time is passed in.
 */
import { firstCheckAt, nextScheduled, retryAt, windowOf } from './schedule.js'
import { isFailure } from './types.js'
import type { CheckKind, CheckVerdict, DoiState, FailureVerdict } from './types.js'

export interface ConfirmRules {
  /** HEALTH_CONFIRM: failed checks in a row that confirm a DOI broken (1: at once). */
  confirm: number
  /** HEALTH_CONFIRM_GAP_SECONDS in ms: the least time between two failures that both count. */
  gapMs: number
  /** HEALTH_INTERVAL_SECONDS in ms, and the DOI's slot in it (schedule.ts `slotOf`). */
  intervalMs: number
  slot: number
}

export interface Advanced {
  state: DoiState
  /** Set when this check confirmed the DOI broken (it was not before): counted in `newly_broken`. */
  newlyBroken?: FailureVerdict
  nextAt: number
}

/** A DOI just added to the watch: unchecked, first checked within a day (schedule.ts `firstCheckAt`). */
export function uncheckedState(now: number, slot: number, intervalMs: number): DoiState {
  return {
    verdict: 'unchecked',
    since: null,
    confirmedAt: null,
    streak: 0,
    streakVerdict: null,
    streakFirstAt: null,
    streakLastAt: null,
    window: -1,
    retries: 0,
    nextAt: firstCheckAt(now, slot, intervalMs)
  }
}

const NO_STREAK = { streak: 0, streakVerdict: null, streakFirstAt: null, streakLastAt: null } as const

/** The state after a check of `kind` found `verdict` at `now`. */
export function advance(state: DoiState, check: { verdict: CheckVerdict; kind: CheckKind }, rules: ConfirmRules, now: number): Advanced {
  const { verdict, kind } = check
  if (verdict === 'error') {
    // Ours, not the DOI's: not a check of the window; retry later, longer each time.
    const nextAt = retryAt(now, state.retries)
    return { state: { ...state, retries: state.retries + 1, nextAt }, nextAt }
  }
  // A confirmation re-check is an extra check by design: only the scheduled (or the command's) check takes the window.
  const window = kind === 'confirm' ? state.window : windowOf(now, rules.slot, rules.intervalMs)
  const scheduled = nextScheduled(window < 0 ? windowOf(now, rules.slot, rules.intervalMs) : window, rules.slot, rules.intervalMs)
  const done = (next: Omit<DoiState, 'window' | 'retries' | 'nextAt'>, nextAt: number, newlyBroken?: FailureVerdict): Advanced => {
    const after: Advanced = { state: { ...next, window, retries: 0, nextAt }, nextAt }
    if (newlyBroken !== undefined) after.newlyBroken = newlyBroken
    return after
  }
  const { verdict: was, since, confirmedAt } = state
  const streakOf = {
    streak: state.streak,
    streakVerdict: state.streakVerdict,
    streakFirstAt: state.streakFirstAt,
    streakLastAt: state.streakLastAt
  }

  if (!isFailure(verdict)) {
    // Believed at once; the streak ends. The same verdict again keeps its `since`.
    if (verdict === was) return done({ verdict, since, confirmedAt, ...NO_STREAK }, scheduled)
    return done({ verdict, since: now, confirmedAt: now, ...NO_STREAK }, scheduled)
  }
  if (isFailure(was as CheckVerdict)) {
    // Already broken: another failure kind switches the kind, keeping when it broke.
    return done({ verdict, since, confirmedAt, ...NO_STREAK }, scheduled)
  }
  if (state.streakLastAt !== null && now - state.streakLastAt < rules.gapMs) {
    // Too soon after the last failure to count: wait for the gap.
    return done({ verdict: was, since, confirmedAt, ...streakOf }, state.streakLastAt + rules.gapMs)
  }
  const streak = state.streak + 1
  const streakFirstAt = state.streakFirstAt ?? now
  if (streak >= rules.confirm) {
    return done({ verdict, since: streakFirstAt, confirmedAt: now, ...NO_STREAK }, scheduled, verdict)
  }
  return done({ verdict: was, since, confirmedAt, streak, streakVerdict: verdict, streakFirstAt, streakLastAt: now }, now + rules.gapMs)
}
