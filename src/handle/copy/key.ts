import { createHash } from 'node:crypto'
import { cacheKey, hasControlChar } from '../name.js'

/**
 * The registry copy's keys (issue 43): a DOI is stored under its cache key (ASCII a–z folded only,
 * behaviour.md §2.8), as UTF-8, so every spelling a reader may ask finds it. LMDB refuses keys over
 * 1,978 bytes (lmdb-js README, "Keys"); a longer one is stored under 0x01 + its SHA-256, and the reader
 * compares the DOI kept in the value (`sameDoi`). 0x01 cannot start a real key: a DOI never holds a control character.
 */

/** Longest key stored as it is; above it the key is hashed (LMDB's limit is 1,978 bytes with 4 KiB pages). */
export const LONGEST_PLAIN_KEY = 1900

const HASHED = 0x01

// 10. + a prefix without '/' + '/' + a suffix of at least one character.
const DOI_SHAPE = /^10\.[^/]+\/./

/**
 * A DOI as the copy accepts it from an agency's file: the local store's rule for a handle (non-empty, no
 * control character, no white space at the ends: docs/local-records.md) and a DOI's shape, `10.` + prefix + `/` + suffix.
 */
export function checkedDoi(raw: unknown): { doi: string } | { problem: string } {
  if (typeof raw !== 'string') return { problem: `the DOI is not text (${raw === null ? 'null' : typeof raw})` }
  if (raw === '') return { problem: 'the DOI is empty' }
  const control = controlCharOf(raw)
  if (control !== undefined) return { problem: `the DOI has a control character (${control})` }
  if (raw.trim() !== raw) return { problem: `the DOI ${JSON.stringify(raw)} starts or ends with white space` }
  if (!DOI_SHAPE.test(raw)) return { problem: `${JSON.stringify(raw.slice(0, 200))} is not a DOI (10.<prefix>/<suffix>)` }
  return { doi: raw }
}

/** The store's key of a checked DOI. */
export function copyKeyOf(doi: string): Buffer {
  const plain = Buffer.from(cacheKey(doi), 'utf8')
  if (plain.length <= LONGEST_PLAIN_KEY) return plain
  return Buffer.concat([Buffer.of(HASHED), createHash('sha256').update(plain).digest()])
}

/** Whether a key was hashed: the value's DOI must then be compared with the one asked. */
export function isHashedKey(key: Uint8Array): boolean {
  return key[0] === HASHED
}

/** Whether the DOI kept in a value is the one asked for, as the resolver compares names (cache keys). */
export function sameDoi(stored: string, asked: string): boolean {
  return stored === asked || cacheKey(stored) === cacheKey(asked)
}

/** The key of a prefix in the copy's `prefixes` database. */
export function prefixKeyOf(prefix: string): Buffer {
  return Buffer.from(cacheKey(prefix), 'utf8')
}

function controlCharOf(s: string): string | undefined {
  if (!hasControlChar(s)) return undefined
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0
    if (code <= 0x1f || (code >= 0x7f && code <= 0x9f)) return 'U+' + code.toString(16).toUpperCase().padStart(4, '0')
  }
  return undefined
}
