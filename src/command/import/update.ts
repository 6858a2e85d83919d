import type { Config } from '../../config/schema.js'
import { upstreamUserAgent } from '../../config/schema.js'
import { createFeedClient, FeedError } from '../../resolve/copy/feeds.js'
import { CopyError, openCopy } from '../../resolve/copy/store.js'
import type { CopyStore } from '../../resolve/copy/store.js'
import { updateStateOf } from '../../handle/copy/feeds.js'
import { copyScopeOf, leaseHolder, NoCoverage, recordRunEnd, runUpdate, stateKeyOf, withLease } from '../../resolve/copy/updater.js'
import type { UpdateOutcome } from '../../resolve/copy/updater.js'
import { createCopyWriter, DiskFull } from '../../resolve/copy/writer.js'
import type { CopyWriter } from '../../resolve/copy/writer.js'

/** The agencies whose APIs `doi-proxy import --update` asks for what changed. */
export const UPDATE_AGENCIES = ['crossref', 'datacite'] as const
export type UpdateAgency = (typeof UPDATE_AGENCIES)[number]

export interface ImportUpdateOptions {
  agency: UpdateAgency
  /** The copy's directory (`--to`, else REGISTRY_COPY). */
  dir: string
  /** The settings: CROSSREF_API_URL, DATACITE_API_URL, CONTACT_EMAIL, USER_AGENT, REGISTRY_COPY_* limits. */
  config: Config
  /** One line for the person running it (progress, the summary). */
  say: (line: string) => void
  /** Stops between pages, the state saved (Ctrl-C). */
  signal?: AbortSignal
  /**
   * Where to start (seconds since 1970; `--since`) when the copy holds no coverage of the agency, or earlier
   * than its coverage; without it a copy with no coverage is refused (exit 2), as is a date after the
   * coverage (the changes between would be missed).
   */
  since?: number
  /** Only DOIs of these prefixes (`--prefix`); undefined: the copy's scope (the prefixes it was imported with), else all. */
  prefixes?: readonly string[]
  /** Test hooks: the feed client's tries, first wait and spacing, how often progress is said. */
  retries?: number
  baseDelayMs?: number
  minIntervalMs?: number
  progressEveryMs?: number
}

export interface ImportUpdateResult {
  /**
   * 0 done; 2 nothing to update from (no coverage, no `since`); 69 the agency gave no page (after its
   * retries); 73 the copy cannot be opened or written; 75 disk full, or another process holds the copy's
   * update lease (try again later); 130 interrupted. In every case but 0 the next run resumes.
   */
  exitCode: number
  pages: number
  records: number
  /** The run's figures when it ran (done or stopped midway), for `--json`. */
  outcome?: UpdateOutcome
}

const PROGRESS_EVERY_MS = 10_000

/** Said before a Crossref update without CONTACT_EMAIL (Crossref's etiquette: identify yourself with a mailto). */
export const NO_CONTACT =
  'CONTACT_EMAIL is not set: Crossref serves requests without a mailto from its public pool, with lower limits, and cannot reach you when a run misbehaves; set CONTACT_EMAIL=you@example.org'

/**
 * `doi-proxy import --update crossref|datacite`: what changed at the agency since the copy's coverage,
 * page by page, resumable (plan-43 §1.12), through resolve/copy/updater.ts `runUpdate`, holding the copy's
 * update lease (a server updating the same copy is not run alongside).
 */
export async function importUpdate(opts: ImportUpdateOptions): Promise<ImportUpdateResult> {
  const { config, agency, say } = opts
  let copy: CopyStore
  try {
    copy = openCopy({ dir: opts.dir, writable: true, noReadAhead: false })
  } catch (err) {
    say(
      `cannot update: ${err instanceof CopyError ? err.message : `the registry copy in ${opts.dir} cannot be opened: ${(err as Error).message}`}`
    )
    return { exitCode: 73, pages: 0, records: 0 }
  }
  if (agency === 'crossref' && config.contactEmail === undefined) say(NO_CONTACT)
  const scope = copyScopeOf(copy)
  const prefixes = opts.prefixes ?? scope
  if (opts.prefixes === undefined && scope !== undefined) {
    say(`asking ${agency} only for ${scope.join(', ')}: the prefixes the copy was imported with (--prefix)`)
  }
  const feeds = createFeedClient({
    userAgent: upstreamUserAgent(config),
    timeoutMs: config.registryCopyUpdateTimeoutMs,
    ...(opts.retries === undefined ? {} : { retries: opts.retries }),
    ...(opts.baseDelayMs === undefined ? {} : { baseDelayMs: opts.baseDelayMs }),
    ...(opts.minIntervalMs === undefined ? {} : { minIntervalMs: opts.minIntervalMs }),
    onRetry: (url, attempt, reason, waitMs) =>
      say(`${agency}: ${reason}; asking again in ${Math.ceil(waitMs / 1000)} s (try ${attempt + 1})`)
  })
  let outcome: UpdateOutcome | undefined
  let lastSaid = 0
  let writer: CopyWriter | undefined
  try {
    const copyWriter = createCopyWriter(copy, {
      maxBytes: config.registryCopyMaxBytes,
      minFreeBytes: config.registryCopyMinFreeBytes,
      nowS: () => Math.floor(Date.now() / 1000)
    })
    writer = copyWriter
    const ran = await withLease(copy, { holder: leaseHolder() }, opts.signal, (signal) =>
      runUpdate(agency, {
        copy,
        writer: copyWriter,
        feeds,
        baseUrl: agency === 'crossref' ? config.crossrefApiUrl : config.dataciteApiUrl,
        mailto: config.contactEmail,
        nowS: () => Math.floor(Date.now() / 1000),
        maxRecordBytes: config.registryCopyMaxRecordBytes,
        mapOptions: { abstracts: true, schemes: config.allowedSchemes },
        signal,
        ...(opts.since === undefined ? {} : { since: opts.since }),
        ...(prefixes === undefined ? {} : { prefixes }),
        onPage(p) {
          if (Date.now() - lastSaid < (opts.progressEveryMs ?? PROGRESS_EVERY_MS)) return
          lastSaid = Date.now()
          const of = p.total === undefined ? '' : ` of ${p.total.toLocaleString('en-US')}`
          say(`updating ${agency}: page ${p.pages.toLocaleString('en-US')}, ${p.records.toLocaleString('en-US')}${of} records`)
        }
      })
    )
    if (!ran.ran) {
      say(
        `cannot update: ${ran.lease.holder} is updating the registry copy in ${opts.dir} (its lease runs to ${new Date(ran.lease.until).toISOString()}); run this again later`
      )
      return { exitCode: 75, pages: 0, records: 0 }
    }
    outcome = ran.value
    // As the server's runs are: /status shows the last one, whoever ran it.
    recordRunEnd(copyWriter, agency, outcome, Math.floor(Date.now() / 1000))
    say(summaryOf(outcome))
    for (const problem of outcome.problems) say(`  ${problem}`)
    return { exitCode: outcome.outcome === 'done' ? 0 : 130, pages: outcome.pages, records: outcome.records, outcome }
  } catch (err) {
    const code = exitCodeOf(err)
    if (writer !== undefined && !(err instanceof NoCoverage)) recordRunEnd(writer, agency, err as Error, Math.floor(Date.now() / 1000))
    const resume = code === 2 ? '' : '; the pages written are kept: run the same command to go on'
    say(`${agency} update stopped: ${(err as Error).message}${resume}`)
    const saved = updateStateOf(copy.meta(stateKeyOf(agency)))
    return { exitCode: code, pages: saved?.pages ?? 0, records: saved?.records ?? 0 }
  } finally {
    await feeds.close()
    await copy.close()
  }
}

function exitCodeOf(err: unknown): number {
  if (err instanceof NoCoverage) return 2
  if (err instanceof DiskFull) return 75
  if (err instanceof FeedError) return err.kind === 'interrupted' ? 130 : 69
  return 73
}

/** "1 page", "2 pages", "1,201 records". */
function counted(x: number, noun: string): string {
  return `${x.toLocaleString('en-US')} ${noun}${x === 1 ? '' : 's'}`
}

function summaryOf(o: UpdateOutcome): string {
  const n = (x: number): string => x.toLocaleString('en-US')
  const of = o.prefixes === undefined ? '' : ` (${o.prefixes.join(', ')})`
  const since = new Date((o.through ?? 0) * 1000).toISOString()
  const head =
    o.outcome === 'interrupted'
      ? `${o.agency} update interrupted: run the same command to go on from page ${n(o.pages + 1)}`
      : o.covered
        ? `${o.agency}${of} updated${o.resumed ? ' (resumed)' : ''}: the copy now covers it to ${since}`
        : // The run left out prefixes the copy holds: it cannot vouch for their records (updater.ts finish).
          `${o.agency}${of} updated${o.resumed ? ' (resumed)' : ''}: its records written; the copy's ${o.agency} coverage ${o.through === undefined ? 'is still none' : `stays at ${since}`}, as the copy holds other prefixes too (an update of them all moves it)`
  const filtered = o.prefixes === undefined ? '' : ` · filtered ${n(o.filtered)}`
  return `${head} · ${counted(o.pages, 'page')} · ${counted(o.records, 'record')} · written ${n(o.written)} · unchanged ${n(o.unchanged)} · older than held ${n(o.older)}${filtered} · malformed ${n(o.malformed)}`
}
