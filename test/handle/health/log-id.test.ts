import { describe, expect, it } from 'vitest'
import { compareLogIds, isLogId, laterLogId, LOG_START, logIdTime, nextLogId } from '../../../src/handle/health/log-id.js'

// Issue 42, plan D8: the fleet log's ids, a Redis stream's `<ms>-<seq>` (redis.io, "Stream IDs": two 64-bit
// numbers, ordered by time then sequence), also written by the in-process log, so one database position serves both.
describe('the ids of the health log', () => {
  it.each([
    ['0-0', true],
    ['1790000000000-0', true],
    ['1790000000000-17', true],
    ['18446744073709551615-18446744073709551615', true], // the largest Redis accepts
    ['18446744073709551616-0', false], // past 64 bits
    ['1790000000000', false], // Redis's shorthand, never in a reply
    ['-1-0', false],
    ['1-0 ', false],
    ['1-0\n2-0', false],
    ['a-b', false],
    ['', false],
    [17, false],
    [null, false]
  ] as Array<[unknown, boolean]>)('%j is an id: %s', (text, ok) => {
    expect(isLogId(text)).toBe(ok)
  })

  it.each([
    ['1-0', '2-0', -1],
    ['2-0', '1-5', 1], // time first
    ['1-2', '1-10', -1], // numbers, not text
    ['1790000000000-3', '1790000000000-3', 0],
    ['18446744073709551615-0', '18446744073709551614-9', 1], // beyond 2^53: exact
    [LOG_START, '0-1', -1],
    ['garbage', '0-0', -1] // a non-id sorts first: never past a real position
  ])('%s against %s is %i', (a, b, sign) => {
    expect(Math.sign(compareLogIds(a, b))).toBe(sign)
    expect(Math.sign(compareLogIds(b, a))).toBe(sign === 0 ? 0 : -sign)
  })

  it.each([
    // [last id, now, next]: the clock's millisecond, or one more in the last id's while the clock has not passed it
    ['0-0', 1_790_000_000_000, '1790000000000-0'],
    ['1790000000000-0', 1_790_000_000_000, '1790000000000-1'],
    ['1790000000000-4', 1_790_000_000_001, '1790000000001-0'],
    ['1790000060000-7', 1_790_000_000_000, '1790000060000-8'], // the clock set back, or a Redis fleet's position ahead
    ['garbage', 5, '5-0']
  ])('after %s at %i comes %s', (last, now, next) => {
    expect(nextLogId(last, now)).toBe(next)
    expect(compareLogIds(next, last)).toBeGreaterThan(0)
  })

  it('keeps the later of two ids, and reads the time of one', () => {
    expect(laterLogId('5-1', '5-0')).toBe('5-1')
    expect(laterLogId('5-0', '6-0')).toBe('6-0')
    expect(logIdTime('1790000000000-3')).toBe(1_790_000_000_000)
    expect(logIdTime('no id')).toBe(0)
  })
})
