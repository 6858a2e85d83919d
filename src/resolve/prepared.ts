/**
 * Prepared answers: what a common request for a cached record gets (status, headers, body), worked out
 * once and kept with the record's cache entry, counted in the cache's bytes. The next such request costs
 * a lookup and a write (src/http/hot-path.ts). Plain data: no HTTP objects, no I/O.
 */
import type { ExpiryRule } from '../handle/record.js'

export interface PreparedAnswer {
  status: number
  /** Every header but Expires, lower-case names, `x-cache: HIT` included; Expires is set per second. */
  headers: Record<string, string | string[]>
  body: Buffer
  /** Until when (epoch ms) the answer holds: namespace locations it was chosen with may change after. */
  validUntil: number
  /** How Expires follows from the request's time; undefined: no Expires header. */
  expires: ExpiryRule | undefined
  /** The second (epoch s) the Expires header in `headers` was last formatted for. */
  expiresSecond: number
  /** What it costs the cache's byte budget. */
  bytes: number
}

/** The prepared answers of one entry, by variant (see src/http/prepared-answers.ts for the keys). */
export type PreparedAnswers = ReadonlyMap<string, PreparedAnswer>

/**
 * How many variants one entry keeps: spellings of the handle times negotiation classes (browser, tool,
 * a BibTeX request…). A client sending endless spellings only keeps its own requests off the hot path.
 */
export const MAX_VARIANTS = 8

/** An answer this large is not kept: it would crowd out records. */
export const MAX_PREPARED_BYTES = 64 * 1024

/** Bytes an answer holds: its body, its header text and the objects around them. */
export function preparedBytes (status: number, headers: Record<string, string | string[]>, body: Buffer): number {
  let bytes = 256 + body.length + String(status).length
  for (const [name, value] of Object.entries(headers)) {
    bytes += name.length + (typeof value === 'string' ? value.length : value.reduce((n, v) => n + v.length + 16, 0)) + 32
  }
  return bytes
}
