import type { VerifyLevel, Verification } from './types.js'

/**
 * What may fail a `check` run (`--fail-on`, issue 41): a DOI not registered, one that could not be checked
 * (`unknown`: the registry failed, or a retraction or landing verdict could not be found out), a metadata
 * `mismatch`, a `retracted` work, a `dead` or `unconfirmed` landing page. Corrections, expressions of concern,
 * `blocked` pages and `unverifiable` metadata never fail a run: they are shown, as warnings.
 */
export const FAIL_ON = ['unregistered', 'unknown', 'mismatch', 'retracted', 'dead', 'unconfirmed'] as const
export type FailOn = (typeof FAIL_ON)[number]
/** Why one DOI fails the run: the names of `--fail-on` it meets. */
export type FailReason = FailOn

/** The level each verdict comes from: failing on it means nothing unless that level is verified. */
const NEEDS: Partial<Record<FailOn, VerifyLevel>> = {
  mismatch: 'metadata',
  retracted: 'retraction',
  dead: 'landing',
  unconfirmed: 'landing'
}

/** Without --verify, as before issue 41; with it, the failures a reference should not have. */
const DEFAULT: readonly FailOn[] = ['unregistered']
const DEFAULT_VERIFYING: readonly FailOn[] = ['unregistered', 'mismatch', 'retracted', 'dead']

/**
 * The `--fail-on` list in force. Unset: `unregistered`, and with `--verify` (any level)
 * `unregistered,mismatch,retracted,dead`, less what a level not asked would decide. A given list replaces that
 * default, but `unregistered` always fails: it always has (`--fail-on unknown` meant "also when one could
 * not be checked"), and a DOI that is not registered cannot be the work cited. A string: why it is refused
 * (a name that is not one of FAIL_ON, or one whose level is not verified).
 */
export function parseFailOn(raw: string | undefined, levels: readonly VerifyLevel[]): FailOn[] | string {
  if (raw === undefined) {
    const list = levels.length === 0 ? DEFAULT : DEFAULT_VERIFYING
    return list.filter((name) => NEEDS[name] === undefined || levels.includes(NEEDS[name]))
  }
  const asked = new Set<FailOn>(['unregistered'])
  for (const item of raw.split(',')) {
    const word = item.trim()
    if (word === '') continue
    const name = FAIL_ON.find((n) => n === word)
    if (name === undefined) return `--fail-on takes ${FAIL_ON.join(', ')} (a comma list), got ${JSON.stringify(word.slice(0, 40))}`
    const level = NEEDS[name]
    if (level !== undefined && !levels.includes(level)) return `--fail-on ${name} needs --verify ${level}`
    asked.add(name)
  }
  return FAIL_ON.filter((name) => asked.has(name))
}

/** One DOI's verdicts: registered or not (null: could not be checked), and the objects of the levels verified. */
export interface Verdicts extends Verification {
  registered: boolean | null
}

/** The names of `failOn` a DOI's verdicts meet, in failOn's order (FAIL_ON's, as parseFailOn gives it); empty when it passes. */
export function failuresOf(verdicts: Verdicts, failOn: readonly FailOn[]): FailReason[] {
  const met = new Set<FailOn>()
  if (verdicts.registered === false) met.add('unregistered')
  if (verdicts.registered === null) met.add('unknown')
  if (verdicts.metadata?.verdict === 'mismatch') met.add('mismatch')
  // A verdict that could not be found out is unknown; `unverifiable` metadata is not: nothing was cited to compare, or the agency has none.
  if (verdicts.retraction?.verdict === null || verdicts.landing?.verdict === null) met.add('unknown')
  if (verdicts.retraction?.verdict === 'retracted') met.add('retracted')
  if (verdicts.landing?.verdict === 'dead') met.add('dead')
  if (verdicts.landing?.verdict === 'unconfirmed') met.add('unconfirmed')
  return failOn.filter((name) => met.has(name))
}
