/**
 * The fleet log's events as text (issue 42, plan §5): JSON, one a stream entry, written by the checker (and by
 * any replica for a DOI it saw) and read back by every replica's database. What is read back came through
 * Redis, so it is checked field by field like any upstream's answer: a known shape, every string and number
 * bounded, only the known fields kept (a fresh object: nothing else of the text reaches the database).
 */
import { prefixOfKey } from './watch.js'
import { CHECK_KINDS, CHECK_VERDICTS, FAILURES, SHOWN_VERDICTS } from './types.js'
import type { CheckResult, DoiState, HealthEvent } from './types.js'

/** The longest event, in UTF-8 bytes of its JSON (the longest key, DOI and cut URLs and evidence fit in it). */
export const MAX_EVENT_BYTES = 16 * 1024
/** The longest key or DOI an event carries (a longer one is not watched: encode refuses it). */
export const MAX_KEY_CHARS = 1024
/** URLs and evidence longer than these are cut (with '…') when written; longer ones read back are refused. */
export const MAX_URL_CHARS = 2048
export const MAX_EVIDENCE_CHARS = 1000
// Cut to these when an event of long non-ASCII text would pass MAX_EVENT_BYTES.
const SHORT_CHARS = 256

// The latest time JavaScript's Date holds; a longer check than a day is no check.
const MAX_TIME = 8.64e15
const MAX_CHECK_MS = 86_400_000
const MAX_COUNT = 1_000_000
const WINDOW_MAX = Number.MAX_SAFE_INTEGER

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * An event as the log's text: URLs and evidence cut to their limits (then shorter, if the whole would pass
 * MAX_EVENT_BYTES); undefined when its key, DOI or prefix is not one an event may carry (too long, a control
 * character, a prefix not the key's).
 */
export function encodeHealthEvent(event: HealthEvent): string | undefined {
  if (keyFieldsOf(event) === undefined) return undefined
  if (event.t === 'watch') {
    return JSON.stringify({ v: 1, t: 'watch', key: event.key, doi: event.doi, prefix: event.prefix, source: event.source })
  }
  for (const limits of [
    { url: MAX_URL_CHARS, evidence: MAX_EVIDENCE_CHARS },
    { url: SHORT_CHARS, evidence: SHORT_CHARS }
  ]) {
    const text = JSON.stringify({
      v: 1,
      t: 'check',
      key: event.key,
      doi: event.doi,
      prefix: event.prefix,
      at: event.at,
      kind: event.kind,
      verdict: event.verdict,
      status: event.status,
      registeredUrl: cut(event.registeredUrl, limits.url),
      finalUrl: cut(event.finalUrl, limits.url),
      evidence: cut(event.evidence, limits.evidence),
      ms: event.ms,
      state: stateFields(event.state)
    })
    if (Buffer.byteLength(text) <= MAX_EVENT_BYTES) return text
  }
  return undefined
}

/** An event read back from the log, checked; undefined when the text is not one (then it is skipped, never applied). */
export function decodeHealthEvent(text: unknown): HealthEvent | undefined {
  if (typeof text !== 'string' || text.length > MAX_EVENT_BYTES || Buffer.byteLength(text) > MAX_EVENT_BYTES) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  return healthEventOf(value)
}

/** A parsed value as an event, checked field by field; undefined when it is not one. */
export function healthEventOf(value: unknown): HealthEvent | undefined {
  if (!isRecord(value) || value.v !== 1) return undefined
  const names = keyFieldsOf(value)
  if (names === undefined) return undefined
  const { key, doi, prefix } = names
  if (value.t === 'watch') {
    return value.source === 'seen' ? { v: 1, t: 'watch', key, doi, prefix, source: 'seen' } : undefined
  }
  if (value.t !== 'check') return undefined
  const result = checkResultOf(value)
  const state = doiStateOf(value.state)
  const { at, kind } = value
  if (result === undefined || state === undefined || !isTime(at) || !oneOf(CHECK_KINDS, kind)) return undefined
  return { v: 1, t: 'check', key, doi, prefix, at, kind, ...result, state }
}

function checkResultOf(value: Record<string, unknown>): CheckResult | undefined {
  const { verdict, status, registeredUrl, finalUrl, evidence, ms } = value
  if (!oneOf(CHECK_VERDICTS, verdict)) return undefined
  if (status !== null && !isInt(status, 100, 999)) return undefined
  if (!isUrlField(registeredUrl) || !isUrlField(finalUrl)) return undefined
  if (typeof evidence !== 'string' || evidence.length > MAX_EVIDENCE_CHARS || !isInt(ms, 0, MAX_CHECK_MS)) return undefined
  return { verdict, status, registeredUrl, finalUrl, evidence, ms }
}

function doiStateOf(value: unknown): DoiState | undefined {
  if (!isRecord(value)) return undefined
  const { verdict, since, confirmedAt, streak, streakVerdict, streakFirstAt, streakLastAt, window, retries, nextAt } = value
  if (!oneOf(SHOWN_VERDICTS, verdict) || !isTimeOrNull(since) || !isTimeOrNull(confirmedAt)) return undefined
  if (!isInt(streak, 0, MAX_COUNT) || (streakVerdict !== null && !oneOf(FAILURES, streakVerdict))) return undefined
  if (!isTimeOrNull(streakFirstAt) || !isTimeOrNull(streakLastAt)) return undefined
  if (!isInt(window, -1, WINDOW_MAX) || !isInt(retries, 0, MAX_COUNT) || !isTime(nextAt)) return undefined
  return { verdict, since, confirmedAt, streak, streakVerdict, streakFirstAt, streakLastAt, window, retries, nextAt }
}

/** The state's fields in a fixed order (and nothing else a caller's object may carry). */
function stateFields(s: DoiState): DoiState {
  return {
    verdict: s.verdict,
    since: s.since,
    confirmedAt: s.confirmedAt,
    streak: s.streak,
    streakVerdict: s.streakVerdict,
    streakFirstAt: s.streakFirstAt,
    streakLastAt: s.streakLastAt,
    window: s.window,
    retries: s.retries,
    nextAt: s.nextAt
  }
}

/** Key, DOI and prefix as an event may carry them: bounded, no control character, the prefix the key's own. */
function keyFieldsOf(value: { key?: unknown; doi?: unknown; prefix?: unknown }): { key: string; doi: string; prefix: string } | undefined {
  const { key, doi, prefix } = value
  if (typeof key !== 'string' || typeof doi !== 'string' || typeof prefix !== 'string') return undefined
  if (key.length > MAX_KEY_CHARS || doi.length === 0 || doi.length > MAX_KEY_CHARS) return undefined
  if (CONTROL.test(key) || CONTROL.test(doi)) return undefined
  // prefixOfKey is null for a prefix record (no '/'): never watched, never in the log.
  return prefixOfKey(key) === prefix ? { key, doi, prefix } : undefined
}

function cut(text: string, max: number): string
function cut(text: string | null, max: number): string | null
function cut(text: string | null, max: number): string | null {
  if (text === null || text.length <= max) return text
  let head = text.slice(0, max - 1)
  // Never half a surrogate pair (it would be written as an escape, and read as no character).
  if (/[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1)
  return `${head}…`
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function oneOf<T extends string>(list: readonly T[], value: unknown): value is T {
  return typeof value === 'string' && (list as readonly string[]).includes(value)
}

function isInt(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max
}

function isTime(value: unknown): value is number {
  return isInt(value, 0, MAX_TIME)
}

function isTimeOrNull(value: unknown): value is number | null {
  return value === null || isTime(value)
}

function isUrlField(value: unknown): value is string | null {
  return value === null || (typeof value === 'string' && value.length <= MAX_URL_CHARS)
}
