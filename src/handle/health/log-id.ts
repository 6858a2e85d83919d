/**
 * The ids of the fleet log (issue 42, plan D8): a Redis stream's `<ms>-<seq>` (two unsigned 64-bit numbers),
 * and the same form for the in-process log, so a database fed by either keeps one position. '0-0' is before
 * every entry (a new database's position). Pure: the in-process log passes its clock in.
 */

export const LOG_START = '0-0'

/** A stream id's two numbers, or undefined when `text` is no id (whatever Redis or a file held). */
export function parseLogId(text: unknown): { ms: bigint; seq: bigint } | undefined {
  if (typeof text !== 'string') return undefined
  const m = /^(\d{1,20})-(\d{1,20})$/.exec(text)
  if (m === null) return undefined
  const [ms, seq] = [BigInt(m[1] ?? ''), BigInt(m[2] ?? '')]
  // Redis ids are 64-bit unsigned on both sides.
  return ms > U64_MAX || seq > U64_MAX ? undefined : { ms, seq }
}

const U64_MAX = 2n ** 64n - 1n

export function isLogId(text: unknown): text is string {
  return parseLogId(text) !== undefined
}

/** Negative, 0 or positive as `a` comes before, is, or comes after `b` (both ids; a non-id sorts first). */
export function compareLogIds(a: string, b: string): number {
  const [x, y] = [parseLogId(a), parseLogId(b)]
  if (x === undefined || y === undefined) return x === undefined ? (y === undefined ? 0 : -1) : 1
  if (x.ms !== y.ms) return x.ms < y.ms ? -1 : 1
  return x.seq === y.seq ? 0 : x.seq < y.seq ? -1 : 1
}

/** The later of two ids. */
export function laterLogId(a: string, b: string): string {
  return compareLogIds(a, b) >= 0 ? a : b
}

/** The time of an id (its milliseconds), as a number; 0 for no id. */
export function logIdTime(id: string): number {
  const parsed = parseLogId(id)
  return parsed === undefined ? 0 : Number(parsed.ms)
}

/**
 * The in-process log's next id after `last` at `now` (epoch ms): `<now>-0`, or `<last ms>-<seq+1>` while the clock
 * has not passed the last id (the same millisecond, a clock set back, a position left by a Redis fleet ahead of it):
 * always after `last`, so a database's position only grows.
 */
export function nextLogId(last: string, now: number): string {
  const prev = parseLogId(last) ?? { ms: 0n, seq: 0n }
  const ms = BigInt(Math.max(0, Math.floor(now)))
  return ms > prev.ms ? `${ms}-0` : `${prev.ms}-${prev.seq + 1n}`
}
