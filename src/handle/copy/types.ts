/**
 * The shapes the registry copy (issue 43) shares between the importer, the store and the resolver's tier:
 * a record as a mapper makes it, its head as the store gives it back, and an agency's coverage.
 */

/** Who registered a DOI: the value stored in a record's byte 2 (docs/architecture.md, the copy's layout). */
export const AGENCIES = ['crossref', 'datacite', 'other'] as const
export type Agency = (typeof AGENCIES)[number]

/**
 * What a record says: `work`, a DOI and its registered URL; `alias`, a DOI that stands for another
 * (HS_ALIAS, only from our mirror format); `registered`, a DOI known to exist with no public URL
 * (DataCite's "Registered" state, from its DOI/state CSV).
 */
export const RECORD_KINDS = ['work', 'alias', 'registered'] as const
export type RecordKind = (typeof RECORD_KINDS)[number]

/** CSL-JSON of one item, as citation-js and the negotiated answers take it. */
export type Csl = Readonly<Record<string, unknown>>

/** One DOI as a mapper makes it from an agency's record, before it is encoded and stored. */
export interface CopyRecord {
  /** The DOI as registered (its case kept); the store's key folds it (key.ts). */
  doi: string
  kind: RecordKind
  agency: Agency
  /** The registered URL of a `work`. */
  url?: string
  /** The DOI an `alias` stands for. */
  aliasOf?: string
  /** The agency's last change to the record, in seconds since 1970 (Crossref `indexed`, DataCite `updated`): newer wins. */
  stamp: number
  csl?: Csl
  /** The abstract was left out (`import --no-abstracts`). */
  abstractDropped?: boolean
}

/** What the store reads of a record without inflating its metadata (record-codec.ts `decodeHead`). */
export interface CopyHead {
  kind: RecordKind
  agency: Agency
  /** Imported from a whole agency file or an update: the agency's coverage vouches for it (freshness.ts). */
  covered: boolean
  hasCsl: boolean
  abstractDropped: boolean
  stamp: number
  importedAt: number
  doi: string
  /** The URL of a `work`, the target of an `alias`, empty for `registered`. */
  target: string
}

/**
 * How far an agency's records are known complete: `base`, the newest stamp of the whole file imported;
 * `through`, that, then the end of each completed update (seconds since 1970).
 */
export interface AgencyCoverage {
  base: number
  through: number
}
export type Coverage = Partial<Record<Agency, AgencyCoverage>>

/** A prefix the copy holds: how many records, and whether a whole agency file vouched for all of it by `asOf`. */
export interface PrefixMark {
  agency: Agency
  records: number
  whole: boolean
  /** Seconds since 1970; 0 when not whole. */
  asOf: number
}

/** Something in an input skipped and named: where it was and why. */
export interface ImportProblem {
  file: string
  /** The entry of a tar, when the file is one. */
  entry?: string
  /** The item's number in its file or entry, from 1. */
  item?: number
  /** Byte offset in the (uncompressed) file or entry, when known. */
  offset?: number
  message: string
}

/** A mapper's answer: the record, or why the item cannot be one (a problem message). */
export type Mapped = CopyRecord | string

/** What the mappers are told of the run (`doi-proxy import` flags). */
export interface MapOptions {
  /** false with `--no-abstracts`: the CSL `abstract` is left out and the record says so. */
  abstracts: boolean
  /** ALLOWED_SCHEMES: the schemes a registered URL may have (default: its default, csl.ts COPY_URL_SCHEMES). */
  schemes?: readonly string[]
}

/** One row of DataCite's DOI/state CSV (`doi,state,client_id,updated`), as csv-parse gives it. */
export type DataciteStateRow = Readonly<Record<string, string | undefined>>

/** A record ready for the store: its key (key.ts) and its bytes (record-codec.ts), made off the writing thread. */
export interface EncodedRecord {
  key: Buffer
  value: Buffer
}
