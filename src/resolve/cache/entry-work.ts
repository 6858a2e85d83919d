/**
 * Work done once per record and kept with its cache entry, counted in the cache's bytes: what its
 * 10320/loc refers to, its location plans (the candidate set, per spelling of the handle), and prepared
 * answers, what a common request for it gets (status, headers, body), so the next such request costs a
 * lookup and a write (src/http/prepared-answers.ts). Plain data: no HTTP objects, no I/O.
 */
import type { ExpiryRule } from '../../handle/record.js'
import type { HandleValue } from '../../handle/types.js'
import type { LocationPlan, ReferencedHandles } from '../../handle/locations.js'

/** What is kept with one cache entry. Replaced with the entry when the record is fetched again. */
export interface EntryWork {
  /** Prepared answers by variant (src/http/prepared-answers.ts for the keys). */
  answers: Map<string, PreparedAnswer>
  /** Location plans by the handle as written, with the namespace locations they were built with. */
  plans: Map<string, { plan: LocationPlan; namespaceValues: readonly HandleValue[] }>
  references?: ReferencedHandles
  /** What all of it costs the cache's byte budget. */
  bytes: number
}

export interface PreparedAnswer {
  status: number
  /**
   * Every header as `writeHead` takes them flat ([name, value, …], lower-case names, `x-cache: HIT`
   * included): Node writes a list in order without walking an object's keys. Expires, when the answer
   * has one, is the last pair, its value set per second.
   */
  headers: Array<string | string[]>
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

/**
 * How many answers (spellings of the handle times negotiation classes: browser, tool, a BibTeX request…)
 * and how many plans (spellings) one entry keeps. A client sending endless spellings only keeps its own
 * requests off the hot path.
 */
export const MAX_VARIANTS = 8

/** An answer this large is not kept: it would crowd out records. */
export const MAX_PREPARED_BYTES = 64 * 1024

/** Bytes an answer holds: its body, its header text and the objects around them. */
export function preparedBytes(status: number, headers: Record<string, string | string[]>, body: Buffer): number {
  let bytes = 256 + body.length + String(status).length
  for (const [name, value] of Object.entries(headers)) {
    bytes += name.length + (typeof value === 'string' ? value.length : value.reduce((n, v) => n + v.length + 16, 0)) + 32
  }
  return bytes
}

/** Rough bytes of a plan: its candidates and parsed XML, about twice the JSON of what it was built from. */
export function planBytes(values: readonly HandleValue[], namespaceValues: readonly HandleValue[]): number {
  return 256 + 2 * (JSON.stringify(values).length + (namespaceValues.length === 0 ? 0 : JSON.stringify(namespaceValues).length))
}

/** Rough bytes of a record's references. */
export function referencesBytes(refs: ReferencedHandles): number {
  return 128 + 2 * JSON.stringify(refs).length
}

export function emptyWork(): EntryWork {
  return { answers: new Map(), plans: new Map(), bytes: 0 }
}

/** Keep an answer in an entry's work, within the bounds: the bytes it added, or undefined. */
export function addAnswer(work: EntryWork, variant: string, answer: PreparedAnswer): number | undefined {
  if (answer.bytes > MAX_PREPARED_BYTES) return undefined
  const old = work.answers.get(variant)
  // The same answer, kept already (requests on the route at once, a storm): nothing to change.
  if (old !== undefined && old.validUntil >= answer.validUntil) return undefined
  if (old === undefined && work.answers.size >= MAX_VARIANTS) return undefined
  work.answers.set(variant, answer)
  return answer.bytes - (old?.bytes ?? -2 * variant.length)
}

/** Keep a location plan for a spelling of the handle, within the bounds: the bytes it added, or undefined. */
export function addPlan(
  work: EntryWork,
  handle: string,
  plan: LocationPlan,
  values: readonly HandleValue[],
  namespaceValues: readonly HandleValue[]
): number | undefined {
  const old = work.plans.get(handle)
  if (old === undefined && work.plans.size >= MAX_VARIANTS) return undefined
  work.plans.set(handle, { plan, namespaceValues })
  // A plan replaced (new namespace locations) is counted again: an overestimate until the entry goes.
  return planBytes(values, namespaceValues) + (old === undefined ? 2 * handle.length : 0)
}
