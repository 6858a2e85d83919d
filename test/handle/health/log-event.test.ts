import { describe, expect, it } from 'vitest'
import {
  decodeHealthEvent,
  encodeHealthEvent,
  MAX_EVENT_BYTES,
  MAX_EVIDENCE_CHARS,
  MAX_URL_CHARS
} from '../../../src/handle/health/log-event.js'
import type { HealthEvent } from '../../../src/handle/health/types.js'

// Issue 42, plan §5: the fleet log's events, JSON, written by the checker and read back through Redis by every
// replica, so checked field by field on the way back (what Redis holds may be anything: "every record may be
// hostile", the project's brief).
type Check = Extract<HealthEvent, { t: 'check' }>
const AT = 1_790_000_000_000

const CHECK: Check = {
  v: 1,
  t: 'check',
  key: '10.5555/ABC',
  doi: '10.5555/abc',
  prefix: '10.5555',
  at: AT,
  kind: 'confirm',
  verdict: 'dead',
  status: 404,
  registeredUrl: 'https://journal.test/abc',
  finalUrl: 'https://journal.test/abc',
  evidence: 'HTTP 404 at https://journal.test/abc',
  ms: 312,
  state: {
    verdict: 'dead',
    since: AT - 43_200_000,
    confirmedAt: AT,
    streak: 0,
    streakVerdict: null,
    streakFirstAt: null,
    streakLastAt: null,
    window: 2959,
    retries: 0,
    nextAt: AT + 604_800_000
  }
}
const WATCH: HealthEvent = { v: 1, t: 'watch', key: '10.5555/SEEN', doi: '10.5555/seen', prefix: '10.5555', source: 'seen' }

/** The check as JSON with some fields replaced (undefined: removed). */
function with_(fields: Record<string, unknown>, state: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...CHECK, ...fields, state: { ...CHECK.state, ...state } })
}

describe('the events of the health log', () => {
  it.each([
    ['a check', CHECK],
    ['a check without a page (not found)', { ...CHECK, verdict: 'not-found', status: null, registeredUrl: null, finalUrl: null }],
    ['a check of our own failure', { ...CHECK, verdict: 'error', status: null, state: { ...CHECK.state, retries: 3 } }],
    ['a DOI seen by a replica', WATCH],
    ['a DOI in another script', { ...WATCH, key: '10.5555/ДОИ', doi: '10.5555/дои' }]
  ] as Array<[string, HealthEvent]>)('%s reads back as it was written', (_, event) => {
    const text = encodeHealthEvent(event)
    expect(text).toBeDefined()
    expect(decodeHealthEvent(text)).toEqual(event)
  })

  it.each([
    ['its JSON', 'not json'],
    ['an array', JSON.stringify([CHECK])],
    ['a later version', with_({ v: 2 })],
    ['a kind of event this version does not know', with_({ t: 'purge' })],
    ['an unknown verdict', with_({ verdict: 'alive<script>' })],
    ['an unknown kind of check', with_({ kind: 'sometimes' })],
    ['a status outside 100–999', with_({ status: 1000 })],
    ['a status that is text', with_({ status: '404' })],
    ['a time that is text', with_({ at: '2026-01-01' })],
    ['a time past any date', with_({ at: 1e300 })],
    ['a negative duration', with_({ ms: -1 })],
    ['a duration of more than a day', with_({ ms: 86_400_001 })],
    ['a URL of another type', with_({ finalUrl: 42 })],
    ['a URL longer than written ones', with_({ registeredUrl: `https://x.test/${'a'.repeat(MAX_URL_CHARS)}` })],
    ['evidence longer than written', with_({ evidence: 'x'.repeat(MAX_EVIDENCE_CHARS + 1) })],
    ['no evidence', with_({ evidence: undefined })],
    ['a key of a prefix record (no "/")', with_({ key: '10.5555', doi: '10.5555' })],
    ['a prefix that is not the key’s', with_({ prefix: '10.9999' })],
    ['a key too long', with_({ key: `10.5555/${'x'.repeat(1100)}` })],
    ['an empty DOI', with_({ doi: '' })],
    ['a control character in the DOI', with_({ doi: '10.5555/a\u0000b' })],
    ['an unknown shown verdict', with_({}, { verdict: 'fine' })],
    ['a streak of a verdict that is no failure', with_({}, { streakVerdict: 'alive' })],
    ['a streak that is not a count', with_({}, { streak: 1.5 })],
    ['a window below -1', with_({}, { window: -2 })],
    ['a state without its next time', with_({}, { nextAt: undefined })],
    ['no state', JSON.stringify({ ...CHECK, state: null })],
    ['a seen DOI from another source', JSON.stringify({ ...WATCH, source: 'list' })],
    ['an event over MAX_EVENT_BYTES', with_({ doi: `10.5555/${'é'.repeat(MAX_EVENT_BYTES / 2)}` })]
  ])('an entry with %s is no event', (_, text) => {
    expect(decodeHealthEvent(text)).toBeUndefined()
  })

  it('keeps only the known fields of what it reads', () => {
    const text = JSON.stringify(CHECK).replace('{', '{"__proto__":{"polluted":true},"extra":"<b>",')
    const event = decodeHealthEvent(text)
    expect(event).toEqual(CHECK)
    expect(Object.getPrototypeOf(event)).toBe(Object.prototype)
    expect(Object.keys(event ?? {})).not.toContain('extra')
  })

  it('cuts long URLs and evidence when it writes them, and reads them back', () => {
    const long = `https://journal.test/${'a'.repeat(5_000)}`
    const event = decodeHealthEvent(encodeHealthEvent({ ...CHECK, finalUrl: long, evidence: `HTTP 404 at ${long}` })) as Check
    expect(event.finalUrl).toHaveLength(MAX_URL_CHARS)
    expect(event.finalUrl?.endsWith('a…')).toBe(true)
    expect(event.evidence).toHaveLength(MAX_EVIDENCE_CHARS)
  })

  it('cuts them shorter when long non-Latin text would pass MAX_EVENT_BYTES, never half a character', () => {
    const long = `https://journal.test/${'😀'.repeat(3_000)}`
    const text = encodeHealthEvent({
      ...CHECK,
      key: `10.5555/${'ア'.repeat(1000)}`,
      doi: `10.5555/${'ア'.repeat(1000)}`,
      finalUrl: long,
      registeredUrl: long,
      evidence: long
    })
    expect(Buffer.byteLength(text ?? '')).toBeLessThanOrEqual(MAX_EVENT_BYTES)
    const event = decodeHealthEvent(text) as Check
    expect(event.finalUrl?.length).toBeLessThanOrEqual(256)
    expect(event.finalUrl).not.toMatch(/[\ud800-\udbff]…$/)
  })

  it.each([
    ['a key too long', { ...CHECK, key: `10.5555/${'x'.repeat(1100)}`, doi: '10.5555/x' }],
    ['a prefix record', { ...WATCH, key: '10.5555', doi: '10.5555', prefix: '10.5555' }],
    ['a prefix not the key’s', { ...CHECK, prefix: '10.5555 ' }]
  ] as Array<[string, HealthEvent]>)('refuses to write an event with %s', (_, event) => {
    expect(encodeHealthEvent(event)).toBeUndefined()
  })
})
