/**
 * The retraction service (issue 41, `verify=retraction`): a DOI's `retraction` object, from the source
 * RETRACTIONS_FROM names: Crossref's `updated-by` notices (resolve/retraction/crossref-updates.ts), or the
 * Retraction Watch file read at start (retraction-watch.ts). Crossref's verdicts are kept in memory for
 * RETRACTIONS_TTL_SECONDS (an LRU) and, with Redis, for every replica, fetched once per DOI across them
 * (fleet/shared-answers.ts); one lookup per DOI at a time in this process. A DOI Crossref does not know
 * (another agency's) has a `null` verdict with `error`, kept like a verdict; a source that fails gives a
 * `null` verdict with its reason, never kept. RECORD_TO records Crossref's answers (trimmed to the notices) with
 * the DOI's record; OFFLINE replays them, never asking Crossref. Nothing here throws at a reader but the admission it is given.
 */
import { LRUCache } from 'lru-cache'
import { cacheKey } from '../../handle/name.js'
import { noticesOfCrossrefWork, retractionVerdictOf } from '../../handle/verify/retraction.js'
import type { RetractionResult } from '../../handle/verify/types.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RedisClient } from '../fleet/redis.js'
import { createSharedAnswers } from '../fleet/shared-answers.js'
import type { SharedAnswer, SharedAnswerCodec } from '../fleet/shared-answers.js'
import type { StoredMetadata } from '../local-store/metadata.js'
import type { Recorder } from '../recording/recorder.js'
import { untilAborted } from '../upstream/deadline.js'
import type { CrossrefUpdates } from './crossref-updates.js'
import type { RetractionWatchNotices } from './retraction-watch.js'

export interface RetractionsOptions {
  /** RETRACTIONS_FROM. */
  from: 'crossref' | 'file' | 'off'
  /** With `crossref`: the REST API's client. */
  crossref?: Pick<CrossrefUpdates, 'workOf'>
  /** With `file`: the Retraction Watch notices read at start. */
  file?: Pick<RetractionWatchNotices, 'noticesOf'>
  metrics: Metrics
  /** The app's clock (epoch ms): how long a verdict stays in memory. */
  now: () => number
  /** RETRACTIONS_TTL_SECONDS; 0: nothing kept, in memory or Redis. */
  ttlSeconds: number
  /** Most verdicts in memory. */
  maxEntries?: number
  /** With REDIS_URL: the verdicts of every replica, one Crossref lookup per DOI across them. */
  redis?: RedisClient | undefined
  /** REDIS_KEY_PREFIX; our keys are `<prefix>retraction:1:…` (1: the format of what is stored). */
  redisPrefix?: string
  /** The longest a lookup takes (queue, Crossref's pauses and its answer): its deadline, and how long the other replicas wait for it. */
  lookupMs: number
  /** How often the other replicas look for its answer. */
  pollMs?: number
  /** A source's failure, for the log (the caller throttles it). */
  onError?: (doi: string, err: unknown) => void
  /** RECORD_TO: each Crossref answer (trimmed to its notices) recorded under CROSSREF_WORK_TYPE, beside the DOI's record. */
  recorder?: Pick<Recorder, 'recordMetadata'>
  /** OFFLINE: Crossref is never asked; the answers recorded earlier (the local store's metadata) give the verdicts. */
  recorded?: { metadata: (handle: string) => StoredMetadata | undefined }
}

export interface FindOptions {
  /**
   * Admission (rate limits, load shedding) for a lookup that must go past this process's memory: called once,
   * by the reader who starts it; its error is thrown to that reader.
   */
  admit?: () => Promise<unknown>
  /** The reader left: its wait ends (with the signal's reason); the lookup goes on for the others. */
  signal?: AbortSignal
}

const VERDICTS = new Set(['retracted', 'corrected', 'expression-of-concern', 'none'])
const DAY = /^\d{4}-\d{2}-\d{2}$/
const MAX_ENTRIES = 100_000
// Never more than this many lookups in flight at once in this process; one more has an unknown verdict.
const MAX_IN_FLIGHT = 10_000

export const OTHER_AGENCY = "Crossref does not know this DOI (another registration agency's): its notices cannot be looked up"

/** The media type a Crossref answer is recorded under (RECORD_TO) and replayed from (OFFLINE). */
export const CROSSREF_WORK_TYPE = 'application/vnd.crossref-api-message+json'
// Crossref's own answer for a DOI it does not know (HTTP 404), recorded as it came.
const NOT_FOUND = { contentType: 'text/plain', body: 'Resource not found.' }
export const NOT_RECORDED = "offline, and this DOI's retraction notices were not recorded (RECORD_TO)"

const unknownVerdict = (error: string): RetractionResult => ({ verdict: null, notice: null, date: null, error })

/** A verdict read back (from Redis, a recording): checked field by field, rebuilt; undefined when it is not one. */
export function retractionResultOf(value: unknown): RetractionResult | undefined {
  if (value === null || typeof value !== 'object') return undefined
  const { verdict, notice, date, error } = value as Record<string, unknown>
  if (verdict === null) return typeof error === 'string' && error.length <= 500 ? unknownVerdict(error) : undefined
  if (typeof verdict !== 'string' || !VERDICTS.has(verdict)) return undefined
  if (notice !== null && (typeof notice !== 'string' || notice.length > 1000)) return undefined
  if (date !== null && (typeof date !== 'string' || !DAY.test(date))) return undefined
  return { verdict: verdict as Exclude<RetractionResult['verdict'], null>, notice, date }
}

const CODEC: SharedAnswerCodec<RetractionResult> = {
  encode: (value) => JSON.stringify(value),
  decode: (text) => {
    try {
      return retractionResultOf(JSON.parse(text))
    } catch {
      return undefined
    }
  }
}

/** What is recorded of Crossref's work: its answer's shape with only what the verdict reads (DOI, `updated-by`, `update-to`). */
function recordedWork(work: Record<string, unknown>): { contentType: string; body: string } {
  const message: Record<string, unknown> = { DOI: work.DOI }
  for (const field of ['updated-by', 'update-to']) if (Array.isArray(work[field])) message[field] = work[field]
  return { contentType: 'application/json', body: JSON.stringify({ status: 'ok', 'message-type': 'work', message }) }
}

/** The verdict of a recorded Crossref answer (OFFLINE); undefined when none was recorded. */
function replayed(stored: StoredMetadata | undefined): RetractionResult | undefined {
  const answer = stored?.get(CROSSREF_WORK_TYPE)
  if (answer === undefined) return undefined
  if (answer.contentType.startsWith('text/plain')) return unknownVerdict(OTHER_AGENCY)
  try {
    return retractionVerdictOf(noticesOfCrossrefWork(JSON.parse(answer.body)))
  } catch {
    return unknownVerdict('the recorded Crossref answer is not JSON')
  }
}

/** The label of a lookup's outcome (doi_proxy_retraction_lookups_total). */
function outcomeOf(result: RetractionResult): string {
  if (result.verdict === null) {
    return result.error === OTHER_AGENCY ? 'other_agency' : result.error === NOT_RECORDED ? 'not_recorded' : 'error'
  }
  return result.verdict === 'none' ? 'none' : 'found'
}

export function createRetractions(opts: RetractionsOptions) {
  const { metrics, now } = opts
  checkSource(opts)
  const ttlMs = opts.ttlSeconds * 1000
  const kept = verdictMemory(opts.maxEntries ?? MAX_ENTRIES, now)
  const inFlight = new Map<string, Promise<RetractionResult>>()
  const shared = createSharedAnswers<RetractionResult>({
    redis: opts.redis,
    prefix: `${opts.redisPrefix ?? ''}retraction:1:`,
    codec: CODEC,
    lockMs: opts.lookupMs,
    pollMs: opts.pollMs ?? 50,
    maxChars: 4096
  })
  const count = (source: string, result: RetractionResult): RetractionResult => {
    metrics.retractionLookups.labels(source, outcomeOf(result)).inc()
    return result
  }

  /** Crossref's verdict for the DOI; a failure is an unknown verdict, kept nowhere (ttl 0). */
  async function fromCrossref(doi: string, deadline: number): Promise<SharedAnswer<RetractionResult>> {
    const result = count('crossref', await crossrefVerdict(opts, doi, deadline))
    return { value: result, ttlMs: result.verdict === null && result.error !== OTHER_AGENCY ? 0 : ttlMs }
  }

  async function lookUp(key: string, doi: string): Promise<RetractionResult> {
    const deadline = performance.now() + opts.lookupMs
    let outcome: Awaited<ReturnType<typeof shared.once>>
    try {
      outcome = await shared.once(key, async () => await fromCrossref(doi, deadline))
    } catch (err) {
      opts.onError?.(doi, err)
      return count('crossref', unknownVerdict('the lookup failed'))
    }
    if (outcome.from === 'gave-up') return count('shared', unknownVerdict("another replica's lookup of this DOI did not finish in time"))
    if (outcome.from === 'shared') count('shared', outcome.value)
    kept.keep(key, outcome.value, Math.min(outcome.ttlMs, ttlMs))
    return outcome.value
  }

  return {
    from: opts.from,

    /** The `retraction` object of a DOI (see the module's comment). */
    async find(doi: string, findOpts: FindOptions = {}): Promise<RetractionResult> {
      if (opts.from === 'off') return unknownVerdict('retraction checks are off here (RETRACTIONS_FROM=off)')
      if (opts.from === 'file') return count('file', retractionVerdictOf(opts.file!.noticesOf(doi)))
      if (opts.recorded !== undefined) {
        const result = replayed(opts.recorded.metadata(doi))
        return result === undefined ? count('recorded', unknownVerdict(NOT_RECORDED)) : count('recorded', result)
      }
      const key = cacheKey(doi)
      const joined = kept.get(key) ?? inFlight.get(key)
      if (joined !== undefined) return await untilAborted(Promise.resolve(joined), findOpts.signal)
      await findOpts.admit?.()
      // Admission took its time: another reader may have started or finished this lookup meanwhile.
      const meanwhile = kept.get(key) ?? inFlight.get(key)
      if (meanwhile !== undefined) return await untilAborted(Promise.resolve(meanwhile), findOpts.signal)
      if (inFlight.size >= MAX_IN_FLIGHT) return count('crossref', unknownVerdict('too many retraction lookups at once: try again later'))
      const lookup = lookUp(key, doi).finally(() => inFlight.delete(key))
      inFlight.set(key, lookup)
      return await untilAborted(lookup, findOpts.signal)
    },

    /** Every lookup still running has ended (tests; a clean close). */
    async settled(): Promise<void> {
      await Promise.all([...inFlight.values()])
    },

    stats: () => ({ entries: kept.size, inFlight: inFlight.size })
  }
}

export type Retractions = ReturnType<typeof createRetractions>

/** The services build it from the settings: a source missing is their mistake, said at start, not per DOI. */
function checkSource(opts: RetractionsOptions): void {
  if (opts.from === 'crossref' && opts.crossref === undefined && opts.recorded === undefined) {
    throw new Error('createRetractions: RETRACTIONS_FROM=crossref needs the Crossref client, or the recorded answers when offline')
  }
  if (opts.from === 'file' && opts.file === undefined) {
    throw new Error('createRetractions: RETRACTIONS_FROM=file needs the notices read from RETRACTIONS_FILE')
  }
}

/** Verdicts in memory, each until its own time by the app's clock (an LRU bounds them). */
function verdictMemory(max: number, now: () => number) {
  const kept = new LRUCache<string, { result: RetractionResult; until: number }>({ max })
  return {
    get(key: string): RetractionResult | undefined {
      const entry = kept.get(key)
      if (entry === undefined) return undefined
      if (entry.until > now()) return entry.result
      kept.delete(key)
      return undefined
    },
    keep(key: string, result: RetractionResult, forMs: number): void {
      if (forMs > 0) kept.set(key, { result, until: now() + forMs })
    },
    get size(): number {
      return kept.size
    }
  }
}

/** Crossref's verdict for the DOI, its answer recorded with RECORD_TO; a failure is an unknown verdict, logged. */
async function crossrefVerdict(opts: RetractionsOptions, doi: string, deadline: number): Promise<RetractionResult> {
  try {
    const found = await opts.crossref!.workOf(doi, deadline)
    const result = found.kind === 'not-found' ? unknownVerdict(OTHER_AGENCY) : retractionVerdictOf(noticesOfCrossrefWork(found.work))
    opts.recorder?.recordMetadata(doi, CROSSREF_WORK_TYPE, found.kind === 'not-found' ? NOT_FOUND : recordedWork(found.work))
    return result
  } catch (err) {
    opts.onError?.(doi, err)
    return unknownVerdict(`Crossref could not say: ${(err as Error).message}`)
  }
}
