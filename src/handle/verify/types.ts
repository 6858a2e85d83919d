/**
 * The shapes of `check --verify` and `POST /api/batch?verify=` (issue 41), exactly as the issue names them
 * on the wire: each registered line carries `metadata`, `retraction` and `landing` objects (for the levels
 * asked), `null` on a line that is not registered.
 */

/** What a verification may look at, in the order they are always listed. */
export const VERIFY_LEVELS = ['metadata', 'retraction', 'landing'] as const
export type VerifyLevel = (typeof VERIFY_LEVELS)[number]

/** What a reference says of its work: an entry of a .bib, CITATION.cff, CSL-JSON or RIS file, or a batch object. */
export interface CitedWork {
  title?: string
  year?: number
  /** The first author as written: "Müller, H.", "H. Müller", "{\"u}ller", an organisation. */
  author?: string
}

/** A person as CSL-JSON names one: family and given names, or one literal (an organisation). */
export interface PersonName {
  family?: string
  given?: string
  literal?: string
}

/** What the registration agency holds of the work (from its CSL-JSON), as the comparison reads it. */
export interface RegisteredWork {
  /** Every title the record gives (main, with subtitle, original, short), first the main one. */
  titles: string[]
  /** The years the record gives: issued, first online, in print, posted (a preprint). */
  years: { issued?: number; online?: number; print?: number; posted?: number }
  /** The authors in order. */
  authors: PersonName[]
}

export type MetadataVerdict = 'match' | 'mismatch' | 'unverifiable'

/** One field that differs, with both values as they were given (the registered one as the agency wrote it). */
export interface Mismatch {
  field: 'title' | 'year' | 'author'
  cited: string | number
  registered: string | number
}

/**
 * The `metadata` object: `mismatch` names each field that differs; `kind` tells a DOI that names another
 * work (`other-work`: the title differs) from a real work cited with wrong details (`details`: only the year
 * or the author); `why` says why a work is `unverifiable` (no metadata, nothing cited to compare).
 */
export interface MetadataResult {
  verdict: MetadataVerdict
  mismatches: Mismatch[]
  kind?: 'other-work' | 'details'
  why?: string
}

export type RetractionVerdict = 'retracted' | 'corrected' | 'expression-of-concern' | 'none'

/**
 * The `retraction` object: the verdict, the notice's DOI and its date (YYYY-MM-DD); a `null` verdict when it
 * could not be found out, with `error` saying why (the source failed, another agency's DOI, offline and not recorded).
 */
export type RetractionResult =
  { verdict: RetractionVerdict; notice: string | null; date: string | null } | { verdict: null; notice: null; date: null; error: string }

export type LandingVerdict = 'alive' | 'unconfirmed' | 'blocked' | 'dead'

/**
 * The `landing` object: the verdict, the last HTTP status (null when no answer came: DNS, TLS, refused,
 * a timeout, a refused address), the final URL reached (or the one that failed), and one line of evidence.
 * A `null` verdict when it could not be found out (offline with nothing recorded), with `error`.
 */
export type LandingResult =
  | { verdict: LandingVerdict; status: number | null; url: string; evidence: string }
  | { verdict: null; status: null; url: string | null; evidence: null; error: string }

/** The verification of one registered line: an object per level asked; `null` on a line that is not registered. */
export interface Verification {
  metadata?: MetadataResult | null
  retraction?: RetractionResult | null
  landing?: LandingResult | null
}
