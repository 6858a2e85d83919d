/**
 * Keeps the registry copy fresh (issue 43, plan-43 §1.12): what changed at an agency since the copy's
 * coverage, page by page. Each page's records and the run's state (`update:<agency>`: where the next page
 * is) go into the copy in ONE transaction, so a killed run resumes at the page after the last one written;
 * the agency's coverage (`coverage:<agency>.through`) moves only when a run completes, to the time it
 * began (a change made during the run may have been listed before it was made). Newer wins, as for an
 * import: asking twice for a record changes nothing.
 *
 * A copy made with `--prefix` records its scope (meta `scope`: the prefixes it holds records of); its
 * updates ask only for those, the server's schedule too. A run limited to prefixes moves the agency's
 * coverage only when they include the whole scope: coverage says every record the copy holds of the agency
 * is as new as `through`, and a run that did not list the other prefixes' changes cannot vouch for them.
 *
 * One process updates a copy at a time, whatever the WORKERS or replicas sharing it: a lease in the copy's
 * own meta (`lease:updater` {holder, until}), taken and renewed in a write transaction (LMDB serialises
 * writers across processes), renewed each minute, lapsing after five: a holder that died frees it.
 */
import { hostname } from 'node:os'
import { crossrefRecordOf } from '../../handle/copy/crossref-record.js'
import { dataciteRecordOf } from '../../handle/copy/datacite-record.js'
import {
  cursorFits,
  inPrefixes,
  OVERLAP_S,
  pageOf,
  pageUrl,
  prefixUnion,
  runCoversScope,
  samePrefixes,
  scopeAfter,
  scopeOf,
  updateStateOf
} from '../../handle/copy/feeds.js'
import type { FeedAgency, FeedPage, UpdateState } from '../../handle/copy/feeds.js'
import { encodeEntry } from '../../handle/copy/record-codec.js'
import type { EncodedRecord, MapOptions, Mapped } from '../../handle/copy/types.js'
import { cacheKey } from '../../handle/name.js'
import { createFeedClient, FeedError } from './feeds.js'
import type { FeedClient } from './feeds.js'
import type { CopyLog, CopyStore } from './store.js'
import { createCopyWriter, DiskFull } from './writer.js'
import type { CopyWriter } from './writer.js'

export interface UpdateContext {
  copy: CopyStore
  writer: CopyWriter
  feeds: FeedClient
  /** The agency's API: CROSSREF_API_URL or DATACITE_API_URL. */
  baseUrl: string
  /** CONTACT_EMAIL, sent to Crossref as `mailto` (its polite pool). */
  mailto: string | undefined
  /** Seconds since 1970. */
  nowS: () => number
  /** Largest record kept (REGISTRY_COPY_MAX_RECORD_BYTES, its encoded bytes); a larger one is skipped and named. */
  maxRecordBytes: number
  /**
   * Where to start (seconds since 1970) when the copy holds no coverage of the agency, or earlier than its
   * coverage; without it a copy with no coverage is refused, and so is a `since` after the coverage (a gap).
   */
  since?: number
  /** Only DOIs of these prefixes are asked for and written (the copy's scope, or `--prefix`); undefined: all. */
  prefixes?: readonly string[]
  mapOptions?: MapOptions
  /** Stops between pages (and cuts the request in flight): the state saved, the run resumable. */
  signal?: AbortSignal
  /** Told after each page written. */
  onPage?: (progress: UpdateProgress) => void
  /** An expired cursor starts the pages again from the first, at most this many times a run (3). */
  maxRestarts?: number
  log?: CopyLog
}

export interface UpdateProgress {
  agency: FeedAgency
  pages: number
  records: number
  /** What the agency says the run lists, when it says. */
  total?: number
}

export interface UpdateOutcome {
  agency: FeedAgency
  /** `done`: every page read and the coverage moved; `interrupted`: stopped by the signal, resumable. */
  outcome: 'done' | 'interrupted'
  /** A run taken up where an earlier one stopped. */
  resumed: boolean
  /** Pages and records of the whole run, the earlier part of a resumed one included. */
  pages: number
  records: number
  /** In this process: records written (new or newer), unchanged (same stamp), older than held, outside the prefixes, malformed. */
  written: number
  unchanged: number
  older: number
  filtered: number
  malformed: number
  /** The prefixes asked for; undefined: all of the agency. */
  prefixes: string[] | undefined
  /** Done, and the agency's coverage moved (false when the run's prefixes leave out some the copy holds). */
  covered: boolean
  /** The first problems met (at most 50), each naming its page and item. */
  problems: string[]
  /** The agency's coverage after the run (seconds since 1970); unchanged unless done. */
  through: number | undefined
}

/** Nothing truthful to start from: no coverage of the agency and no `since`, or a `since` after the coverage. */
export class NoCoverage extends Error {
  override name = 'NoCoverage'
}

const MAX_PROBLEMS = 50
const YIELD_EVERY = 100
const mappers: Record<FeedAgency, (item: unknown, opts: MapOptions) => Mapped> = {
  crossref: crossrefRecordOf,
  datacite: dataciteRecordOf
}

export const stateKeyOf = (agency: FeedAgency): string => `update:${agency}`

/** The copy's scope in its meta: `{prefixes}` when it was made with --prefix. */
export const SCOPE_KEY = 'scope'

/** The prefixes the copy holds records of (its scope), or undefined: any. */
export function copyScopeOf(copy: CopyStore): string[] | undefined {
  return scopeOf(copy.meta(SCOPE_KEY))
}

/**
 * Before records of `prefixes` (undefined: of any prefix) are written into the copy (an import, an update):
 * its scope, widened as handle/copy/feeds.ts `scopeAfter` says, in one transaction. The scope after.
 */
export function noteScope(copy: CopyStore, prefixes: readonly string[] | undefined): string[] | undefined {
  const { root, meta } = copy.databases
  return root.transactionSync(() => {
    const held = scopeOf(meta.get(SCOPE_KEY))
    const records = (meta.get('stats') as { records?: unknown } | undefined)?.records
    const empty = held === undefined && !(typeof records === 'number' && records > 0) && meta.get(SCOPE_KEY) === undefined
    const next = scopeAfter(held, empty, prefixes)
    if (next === undefined) {
      // Any prefix from now on, written so that an empty copy's first import without --prefix is remembered too.
      if (meta.get(SCOPE_KEY) === undefined || held !== undefined) meta.putSync(SCOPE_KEY, { any: true })
    } else meta.putSync(SCOPE_KEY, { prefixes: next })
    return next
  })
}

/**
 * One update run of `agency`, from where the last one stopped or from its coverage less a day. Throws a
 * FeedError when the agency cannot give a page (after its retries), DiskFull when the copy has no room,
 * NoCoverage when there is nothing to start from: in each case the copy holds every page before, and the
 * next run resumes.
 */
export async function runUpdate(agency: FeedAgency, ctx: UpdateContext): Promise<UpdateOutcome> {
  const key = stateKeyOf(agency)
  const prefixes = ctx.prefixes === undefined ? undefined : prefixUnion([], ctx.prefixes)
  const { state, resumed } = startingState(agency, ctx, key, prefixes)
  if (prefixes !== undefined) noteScope(ctx.copy, prefixes)
  const run: UpdateRun = {
    agency,
    ctx,
    key,
    mapOptions: ctx.mapOptions ?? { abstracts: true },
    prefixKeys: prefixes === undefined ? undefined : new Set(prefixes.map(cacheKey)),
    state,
    restarts: 0,
    outcome: {
      agency,
      outcome: 'interrupted',
      resumed,
      pages: state.pages,
      records: state.records,
      written: 0,
      unchanged: 0,
      older: 0,
      filtered: 0,
      malformed: 0,
      prefixes,
      covered: false,
      problems: [],
      through: ctx.copy.coverage()[agency]?.through
    }
  }
  for (;;) {
    if (ctx.signal?.aborted === true) return run.outcome
    const url = pageUrl(agency, ctx.baseUrl, run.state, ctx.mailto)
    const json = await askPage(run, url)
    if (json === INTERRUPTED) return run.outcome
    if (json === RESTARTED) continue
    const page = pageOf(agency, json, ctx.baseUrl)
    if (typeof page === 'string') throw new FeedError('unreadable', `${page} (${url})`)
    if (page.items.length === 0) break
    writePage(run, page, await entriesOf(run, page))
    if (page.next === undefined) break
  }
  run.outcome.covered = finish(ctx, agency, run.state)
  run.outcome.outcome = 'done'
  run.outcome.through = ctx.copy.coverage()[agency]?.through
  return run.outcome
}

/** One update run under way: where its pages stand (saved with each) and what it did so far. */
interface UpdateRun {
  readonly agency: FeedAgency
  readonly ctx: UpdateContext
  /** The meta entry of its state (`update:<agency>`). */
  readonly key: string
  readonly mapOptions: MapOptions
  /** The cache keys of the prefixes asked for; undefined: all. */
  readonly prefixKeys: ReadonlySet<string> | undefined
  state: UpdateState
  /** Times the pages started again after an expired cursor. */
  restarts: number
  readonly outcome: UpdateOutcome
}

/**
 * Where the run starts (saved at once): where the last one stopped; or the agency's coverage less a day, or
 * `since` (less a day) when given and not after the coverage.
 */
function startingState(
  agency: FeedAgency,
  ctx: UpdateContext,
  key: string,
  prefixes: string[] | undefined
): { state: UpdateState; resumed: boolean } {
  const saved = updateStateOf(ctx.copy.meta(key))
  if (saved !== undefined) {
    const { from, pages, records, startedAt } = saved
    const asked = prefixes === undefined ? {} : { prefixes }
    // A link to an API no longer configured, or other prefixes asked for than the stopped run's: the pages
    // start again from the same date (the coverage the run vouches for stays its first start).
    if (!cursorFits(agency, saved.cursor, ctx.baseUrl) || !samePrefixes(saved.prefixes, prefixes)) {
      const state = { from, pages, records, startedAt, ...asked }
      ctx.writer.putMeta(key, state)
      return { state, resumed: true }
    }
    return { state: saved, resumed: true }
  }
  const through = ctx.copy.coverage()[agency]?.through
  const name = agency === 'crossref' ? "Crossref's" : "DataCite's"
  if (through === undefined && ctx.since === undefined) {
    throw new NoCoverage(
      `the registry copy in ${ctx.copy.dir} holds no ${agency} coverage to update from: import ${name} public data file into it first, or give --since DATE (the date the data it holds is as of) to ask for what changed since then`
    )
  }
  if (through !== undefined && ctx.since !== undefined && ctx.since > through) {
    throw new NoCoverage(
      `--since ${dayOf(ctx.since)} is after the copy's ${agency} coverage (${dayOf(through)}): the changes between would be missed; leave --since out, give an earlier date, or import ${name} newer data file`
    )
  }
  const start = Math.min(through ?? Infinity, ctx.since ?? Infinity)
  const state = {
    from: Math.max(0, start - OVERLAP_S),
    pages: 0,
    records: 0,
    startedAt: ctx.nowS(),
    ...(prefixes === undefined ? {} : { prefixes })
  }
  ctx.writer.putMeta(key, state)
  return { state, resumed: false }
}

const dayOf = (s: number): string => new Date(s * 1000).toISOString().slice(0, 10)

const INTERRUPTED = Symbol('interrupted')
const RESTARTED = Symbol('restarted')

/** The page's JSON; INTERRUPTED by the signal; RESTARTED when an expired cursor started the pages again. */
async function askPage(run: UpdateRun, url: string): Promise<unknown> {
  const { ctx, agency } = run
  try {
    return await ctx.feeds.getJson(url, ctx.signal)
  } catch (err) {
    if (err instanceof FeedError && err.kind === 'interrupted') return INTERRUPTED
    // A cursor expires after idle minutes (a run killed, then resumed later): the pages start again; the
    // records already written come back unchanged.
    if (err instanceof FeedError && err.kind === 'refused' && run.state.cursor !== undefined && run.restarts < (ctx.maxRestarts ?? 3)) {
      run.restarts++
      ctx.log?.warn({ agency, url, err: err.message }, 'registry copy update: the cursor was refused; starting the pages again')
      const { from, pages, records, startedAt, prefixes } = run.state
      run.state = { from, pages, records, startedAt, ...(prefixes === undefined ? {} : { prefixes }) }
      ctx.writer.putMeta(run.key, run.state)
      return RESTARTED
    }
    throw err
  }
}

function problem(run: UpdateRun, message: string): void {
  run.outcome.malformed++
  if (run.outcome.problems.length < MAX_PROBLEMS) run.outcome.problems.push(message)
}

/** The page's items mapped and encoded; an item that is no record, or too large, named and skipped. */
async function entriesOf(run: UpdateRun, page: FeedPage): Promise<EncodedRecord[]> {
  const { agency, ctx } = run
  const pageNo = run.state.pages + 1
  const entries: EncodedRecord[] = []
  const importedAt = ctx.nowS()
  for (let i = 0; i < page.items.length; i++) {
    // Mapping and encoding a page takes a while: let the server answer in between.
    if (i > 0 && i % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve))
    const mapped = mappers[agency](page.items[i], run.mapOptions)
    if (typeof mapped === 'string') {
      problem(run, `${agency} update page ${pageNo} item ${i + 1}: ${mapped}`)
      continue
    }
    // The agency's prefix filter is trusted for economy only: a record outside the prefixes is not written.
    if (run.prefixKeys !== undefined && !inPrefixes(mapped.doi, run.prefixKeys)) {
      run.outcome.filtered++
      continue
    }
    const entry = encodeEntry(mapped, { importedAt, covered: true })
    if (entry.value.length > ctx.maxRecordBytes) {
      problem(
        run,
        `${agency} update page ${pageNo} item ${i + 1}: ${mapped.doi} is ${entry.value.length} bytes, over REGISTRY_COPY_MAX_RECORD_BYTES ${ctx.maxRecordBytes}`
      )
      continue
    }
    entries.push(entry)
  }
  return entries
}

/** The page's records and the run's next state in one transaction, then counted. */
function writePage(run: UpdateRun, page: FeedPage, entries: EncodedRecord[]): void {
  const { ctx, outcome, state } = run
  const next: UpdateState = {
    from: state.from,
    pages: state.pages + 1,
    records: state.records + page.items.length,
    startedAt: state.startedAt,
    ...(page.next === undefined ? {} : { cursor: page.next }),
    ...(state.prefixes === undefined ? {} : { prefixes: state.prefixes })
  }
  const counts = ctx.writer.putBatch(entries, { name: run.key, value: next })
  run.state = next
  outcome.pages = next.pages
  outcome.records = next.records
  outcome.written += counts.written
  outcome.unchanged += counts.unchanged
  outcome.older += counts.older
  outcome.malformed += counts.unreadable
  ctx.onPage?.({ agency: run.agency, pages: next.pages, records: next.records, ...(page.total === undefined ? {} : { total: page.total }) })
}

/**
 * The run complete, its state gone and, when its prefixes include all the copy holds (its scope), the
 * coverage moved to when it began, in one transaction. Whether the coverage moved.
 */
function finish(ctx: UpdateContext, agency: FeedAgency, state: UpdateState): boolean {
  const { root, meta } = ctx.copy.databases
  return root.transactionSync(() => {
    const covers = runCoversScope(state.prefixes, copyScopeOf(ctx.copy))
    if (covers) {
      const held = ctx.copy.coverage()[agency]
      ctx.writer.extendCoverage(agency, { base: held?.base ?? 0, through: state.startedAt })
    }
    meta.removeSync(stateKeyOf(agency))
    return covers
  })
}

// ---- the last run, for /status ----

export const lastRunKeyOf = (agency: FeedAgency): string => `lastUpdate:${agency}`

/** How an agency's last update run ended, kept in the copy's meta (every process sharing it reads the same). */
export interface LastUpdate {
  outcome: 'done' | 'interrupted' | 'disk_full' | 'failed'
  /** Seconds since 1970. */
  endedAt: number
  pages: number
  records: number
  /** Why a run that failed stopped (its first 300 characters). */
  error?: string
}

/** The run's end written into the copy's meta; a copy that cannot take it (full) is left as it is. */
export function recordRunEnd(writer: CopyWriter, agency: FeedAgency, result: UpdateOutcome | Error, endedAt: number, log?: CopyLog): void {
  const last: LastUpdate =
    result instanceof Error
      ? { outcome: updateOutcomeLabel(result), endedAt, pages: 0, records: 0, error: result.message.slice(0, 300) }
      : { outcome: result.outcome, endedAt, pages: result.pages, records: result.records }
  try {
    writer.putMeta(lastRunKeyOf(agency), last)
  } catch (err) {
    log?.warn({ agency, err: (err as Error).message }, 'registry copy update: the end of the run could not be noted in the copy')
  }
}

/** The agency's last update run as the copy holds it, or undefined when none was noted. */
export function lastUpdateOf(copy: CopyStore, agency: FeedAgency): LastUpdate | undefined {
  const raw = copy.meta(lastRunKeyOf(agency)) as Partial<LastUpdate> | null | undefined
  if (raw === null || typeof raw !== 'object') return undefined
  const outcomes: readonly string[] = ['done', 'interrupted', 'disk_full', 'failed']
  if (typeof raw.outcome !== 'string' || !outcomes.includes(raw.outcome) || typeof raw.endedAt !== 'number') return undefined
  return {
    outcome: raw.outcome,
    endedAt: raw.endedAt,
    pages: typeof raw.pages === 'number' ? raw.pages : 0,
    records: typeof raw.records === 'number' ? raw.records : 0,
    ...(typeof raw.error === 'string' ? { error: raw.error.slice(0, 300) } : {})
  }
}

// ---- the lease: one updater per copy ----

export const LEASE_KEY = 'lease:updater'
export const LEASE_MS = 5 * 60_000
export const LEASE_RENEW_MS = 60_000

export interface Lease {
  holder: string
  /** Date.now() after which the lease is free. */
  until: number
}

/** Who this process is in a lease: host and process id. */
export function leaseHolder(): string {
  return `${hostname()}:${process.pid}`
}

const leaseOf = (raw: unknown): Lease | undefined => {
  const l = raw as Partial<Lease> | null | undefined
  return typeof l?.holder === 'string' && typeof l.until === 'number' ? { holder: l.holder, until: l.until } : undefined
}

/**
 * Takes (or renews) the lease for `holder` when it is free, lapsed or already its own: in one write
 * transaction, so of two processes asking at once exactly one gets it. The lease as it stands after.
 */
export function takeLease(copy: CopyStore, holder: string, nowMs: number, leaseMs = LEASE_MS): { taken: boolean; lease: Lease } {
  const { root, meta } = copy.databases
  return root.transactionSync(() => {
    const held = leaseOf(meta.get(LEASE_KEY))
    if (held !== undefined && held.holder !== holder && held.until > nowMs) return { taken: false, lease: held }
    const lease = { holder, until: nowMs + leaseMs }
    meta.putSync(LEASE_KEY, lease)
    return { taken: true, lease }
  })
}

/** Gives the lease up, if `holder` still holds it. */
export function releaseLease(copy: CopyStore, holder: string): void {
  const { root, meta } = copy.databases
  root.transactionSync(() => {
    if (leaseOf(meta.get(LEASE_KEY))?.holder === holder) meta.removeSync(LEASE_KEY)
  })
}

/** The lease as the copy holds it (for /status and the messages), or undefined when none. */
export function leaseNow(copy: CopyStore): Lease | undefined {
  return leaseOf(copy.meta(LEASE_KEY))
}

export interface LeaseOptions {
  holder: string
  nowMs?: () => number
  leaseMs?: number
  renewMs?: number
  log?: CopyLog
}

/**
 * Runs `work` holding the lease, renewed while it runs; its signal aborts if the lease is lost (another
 * process took it after a lapse) or `outer` aborts. `undefined` when another holder has it.
 */
export async function withLease<T>(
  copy: CopyStore,
  opts: LeaseOptions,
  outer: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>
): Promise<{ ran: true; value: T } | { ran: false; lease: Lease }> {
  const nowMs = opts.nowMs ?? Date.now
  const leaseMs = opts.leaseMs ?? LEASE_MS
  const first = takeLease(copy, opts.holder, nowMs(), leaseMs)
  if (!first.taken) return { ran: false, lease: first.lease }
  const controller = new AbortController()
  const onOuter = (): void => controller.abort()
  outer?.addEventListener('abort', onOuter)
  if (outer?.aborted === true) controller.abort()
  const renew = setInterval(() => {
    try {
      if (!takeLease(copy, opts.holder, nowMs(), leaseMs).taken) {
        opts.log?.warn({ holder: opts.holder }, 'registry copy update: the lease was lost to another process; stopping')
        controller.abort()
      }
    } catch (err) {
      opts.log?.warn({ err: (err as Error).message }, 'registry copy update: the lease could not be renewed; stopping')
      controller.abort()
    }
  }, opts.renewMs ?? LEASE_RENEW_MS)
  renew.unref()
  try {
    return { ran: true, value: await work(controller.signal) }
  } finally {
    clearInterval(renew)
    outer?.removeEventListener('abort', onOuter)
    try {
      releaseLease(copy, opts.holder)
    } catch {
      // The copy closed under us: the lease lapses by itself.
    }
  }
}

// ---- the schedule, in the server ----

/** The settings the schedule reads. */
export interface UpdateScheduleSettings {
  /** REGISTRY_COPY_UPDATE_HOURS: an agency is due when its coverage is this old (0: startUpdateSchedule refuses). */
  registryCopyUpdateHours: number
  crossrefApiUrl: string
  dataciteApiUrl: string
  contactEmail: string | undefined
  registryCopyUpdateTimeoutMs: number
  registryCopyMaxBytes: number
  registryCopyMinFreeBytes: number
  registryCopyMaxRecordBytes: number
  /** ALLOWED_SCHEMES: the same URL rules as the import's (and the records'). */
  allowedSchemes: readonly string[]
}

export interface UpdateScheduleOptions {
  settings: UpdateScheduleSettings
  /** The copy, opened writable (openCopy({writable: true})); the caller closes it after stop(). */
  copy: CopyStore
  /** upstreamUserAgent(config): names CONTACT_EMAIL. */
  userAgent: string
  log: CopyLog
  /** The agencies kept fresh; those the copy holds no coverage of are skipped (logged once). Both by default. */
  agencies?: readonly FeedAgency[]
  /** How often due agencies are looked for (10 minutes; the first look a few seconds after start). */
  checkMs?: number
  firstCheckMs?: number
  holder?: string
  nowMs?: () => number
  leaseMs?: number
  renewMs?: number
  /** Told of each run's end (tests, the log): an outcome, or the error that stopped it. */
  onRun?: (agency: FeedAgency, result: UpdateOutcome | Error) => void
  /** `doi_proxy_copy_updates_total` (observe/metrics.ts `copy.updates`): counted by agency and outcome at each run's end. */
  updatesCounter?: { inc(labels: { agency: string; outcome: string }): void }
  /** Test hooks for the feed client. */
  feedRetries?: number
  feedBaseDelayMs?: number
  feedMinIntervalMs?: number
}

export interface UpdateSchedule {
  /** Looks for due agencies now and updates them (if this process gets the lease); resolves when done. */
  checkNow(): Promise<void>
  /** Stops the schedule: the run in flight is cut (its state saved), the lease given up. Never waits on a stalled agency. */
  stop(): Promise<void>
}

/** A run's end as `doi_proxy_copy_updates_total` labels it: done, interrupted, disk_full, failed. */
export function updateOutcomeLabel(result: UpdateOutcome | Error): 'done' | 'interrupted' | 'disk_full' | 'failed' {
  if (result instanceof DiskFull) return 'disk_full'
  if (result instanceof FeedError && result.kind === 'interrupted') return 'interrupted'
  if (result instanceof Error) return 'failed'
  return result.outcome
}

const DEFAULT_CHECK_MS = 10 * 60_000
const DEFAULT_FIRST_CHECK_MS = 5_000
// stop() waits this long at most for the run to notice its signal (a batch being written).
const STOP_WAIT_MS = 5_000

/**
 * The server's updater (REGISTRY_COPY_UPDATE_HOURS): every `checkMs` it looks for agencies whose coverage
 * is older than the setting (or whose last run stopped midway) and, holding the copy's lease, updates them
 * one after the other. Several processes on one copy each run a schedule; the lease makes one of them update.
 */
export function startUpdateSchedule(opts: UpdateScheduleOptions): UpdateSchedule {
  const { settings, copy } = opts
  if (settings.registryCopyUpdateHours <= 0) throw new Error('startUpdateSchedule: REGISTRY_COPY_UPDATE_HOURS is 0 (no updates)')
  if (!copy.writable) throw new Error(`startUpdateSchedule: the registry copy in ${copy.dir} was opened read-only`)
  const nowMs = opts.nowMs ?? Date.now
  const s: Schedule = {
    opts,
    nowMs,
    holder: opts.holder ?? leaseHolder(),
    agencies: opts.agencies ?? (['crossref', 'datacite'] as const),
    feeds: createFeedClient({
      userAgent: opts.userAgent,
      timeoutMs: settings.registryCopyUpdateTimeoutMs,
      ...(opts.feedRetries === undefined ? {} : { retries: opts.feedRetries }),
      ...(opts.feedBaseDelayMs === undefined ? {} : { baseDelayMs: opts.feedBaseDelayMs }),
      ...(opts.feedMinIntervalMs === undefined ? {} : { minIntervalMs: opts.feedMinIntervalMs }),
      onRetry: (url, attempt, reason, waitMs) => opts.log.warn({ url, attempt, reason, waitMs }, 'registry copy update: asking again')
    }),
    writer: createCopyWriter(copy, {
      maxBytes: settings.registryCopyMaxBytes,
      minFreeBytes: settings.registryCopyMinFreeBytes,
      nowS: () => Math.floor(nowMs() / 1000)
    }),
    stopping: new AbortController(),
    skipped: new Set(),
    running: undefined,
    timer: undefined
  }
  scheduleCheck(s, opts.firstCheckMs ?? DEFAULT_FIRST_CHECK_MS)
  return { checkNow: () => checkNow(s), stop: () => stopSchedule(s) }
}

/** A schedule under way: its feed client and writer, the check in flight, the next one's timer. */
interface Schedule {
  readonly opts: UpdateScheduleOptions
  readonly nowMs: () => number
  readonly holder: string
  readonly agencies: readonly FeedAgency[]
  readonly feeds: FeedClient
  readonly writer: CopyWriter
  readonly stopping: AbortController
  /** Agencies the copy holds no coverage of: logged once. */
  readonly skipped: Set<FeedAgency>
  running: Promise<void> | undefined
  timer: NodeJS.Timeout | undefined
}

/** Due: a run stopped midway, or the coverage older than REGISTRY_COPY_UPDATE_HOURS. */
function due(s: Schedule, agency: FeedAgency): boolean {
  const { copy, log, settings } = s.opts
  if (copy.meta(stateKeyOf(agency)) !== undefined) return true
  const through = copy.coverage()[agency]?.through
  if (through === undefined) {
    if (!s.skipped.has(agency)) log.info({ agency }, 'registry copy update: the copy holds no coverage of this agency; not updated')
    s.skipped.add(agency)
    return false
  }
  return s.nowMs() / 1000 - through >= settings.registryCopyUpdateHours * 3600
}

/** The due agencies updated one after the other, if this process gets the lease. */
async function check(s: Schedule): Promise<void> {
  const { opts } = s
  const dueNow = s.agencies.filter((agency) => due(s, agency))
  if (dueNow.length === 0 || s.stopping.signal.aborted) return
  const leaseOptions: LeaseOptions = {
    holder: s.holder,
    nowMs: s.nowMs,
    log: opts.log,
    ...(opts.leaseMs === undefined ? {} : { leaseMs: opts.leaseMs }),
    ...(opts.renewMs === undefined ? {} : { renewMs: opts.renewMs })
  }
  const result = await withLease(opts.copy, leaseOptions, s.stopping.signal, async (signal) => {
    for (const agency of dueNow) {
      if (signal.aborted) return
      await scheduledRun(s, agency, signal)
    }
  })
  if (!result.ran) opts.log.info({ lease: result.lease }, 'registry copy update: another process holds the lease')
}

/** The schedule's one run of an agency: its end logged, counted and noted in the copy, whatever it was. */
async function scheduledRun(s: Schedule, agency: FeedAgency, signal: AbortSignal): Promise<void> {
  const { opts } = s
  const { settings } = opts
  const scope = copyScopeOf(opts.copy)
  try {
    const outcome = await runUpdate(agency, {
      copy: opts.copy,
      writer: s.writer,
      feeds: s.feeds,
      baseUrl: agency === 'crossref' ? settings.crossrefApiUrl : settings.dataciteApiUrl,
      mailto: settings.contactEmail,
      nowS: () => Math.floor(s.nowMs() / 1000),
      maxRecordBytes: settings.registryCopyMaxRecordBytes,
      mapOptions: { abstracts: true, schemes: settings.allowedSchemes },
      signal,
      log: opts.log,
      // A copy made with --prefix is kept fresh for its prefixes only.
      ...(scope === undefined ? {} : { prefixes: scope })
    })
    opts.log.info({ ...outcome, problems: outcome.problems.slice(0, 5) }, 'registry copy update: run ended')
    runEnded(s, agency, outcome)
  } catch (err) {
    opts.log.warn({ agency, err: (err as Error).message }, 'registry copy update: run stopped; the next one resumes')
    runEnded(s, agency, err as Error)
  }
}

function runEnded(s: Schedule, agency: FeedAgency, result: UpdateOutcome | Error): void {
  s.opts.updatesCounter?.inc({ agency, outcome: updateOutcomeLabel(result) })
  recordRunEnd(s.writer, agency, result, Math.floor(s.nowMs() / 1000), s.opts.log)
  s.opts.onRun?.(agency, result)
}

function checkNow(s: Schedule): Promise<void> {
  // One check at a time: a tick during a run waits for it rather than start a second.
  s.running ??= check(s)
    .catch((err: unknown) => s.opts.log.warn({ err: (err as Error).message }, 'registry copy update: the check failed'))
    .finally(() => {
      s.running = undefined
    })
  return s.running
}

function scheduleCheck(s: Schedule, ms: number): void {
  s.timer = setTimeout(() => {
    // checkNow never rejects: its failures are logged.
    checkNow(s).then(
      () => {
        if (!s.stopping.signal.aborted) scheduleCheck(s, s.opts.checkMs ?? DEFAULT_CHECK_MS)
      },
      () => undefined
    )
  }, ms)
  s.timer.unref()
}

async function stopSchedule(s: Schedule): Promise<void> {
  s.stopping.abort()
  clearTimeout(s.timer)
  if (s.running !== undefined) {
    let waited: NodeJS.Timeout | undefined
    await Promise.race([s.running, new Promise<void>((resolve) => (waited = setTimeout(resolve, STOP_WAIT_MS)))])
    clearTimeout(waited)
  }
  await s.feeds.close()
}
