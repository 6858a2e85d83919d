import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config/schema.js'
import { updateStateOf } from '../handle/copy/feeds.js'
import { AGENCIES } from '../handle/copy/types.js'
import { ConfigError, upstreamUserAgent } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import { copyMetadata } from '../resolve/copy/metadata.js'
import type { CitationFormatter, CopyMetadata } from '../resolve/copy/metadata.js'
import type { CopyLog, CopyStore } from '../resolve/copy/store.js'
import { createCopyTier } from '../resolve/copy/tier.js'
import type { CopyTier } from '../resolve/copy/tier.js'
import type { UpdateSchedule, UpdateScheduleOptions, UpdateScheduleSettings } from '../resolve/copy/updater.js'
import type { RegistryCopyAgency, RegistryCopyStatus } from '../status/snapshot.js'

/** The settings the registry copy's serving reads. */
export type CopySettings = Pick<
  Config,
  'registryCopy' | 'registryCopyMaxAgeSeconds' | 'registryCopyCitationQueue' | 'offline' | 'userAgent' | keyof UpdateScheduleSettings
>

/** What the serving of the copy is made of: its store, the resolver's tier, the negotiated answers. */
export interface RegistryCopy {
  store: CopyStore
  tier: CopyTier
  metadata: CopyMetadata
  /** REGISTRY_COPY_UPDATE_HOURS > 0: the schedule keeping the copy fresh (stopped at close, before the copy closes). */
  updates: UpdateSchedule | undefined
  /** What /status shows of the copy, read from it now. */
  status(): RegistryCopyStatus
  close(): Promise<void>
}

export interface CopyDeps {
  metrics: Metrics
  log: CopyLog
  /** Epoch ms. */
  now: () => number
  /** The update schedule's test hooks (how soon it first looks, the feeds' pace) and its runs' ends. */
  updates?: Pick<UpdateScheduleOptions, 'firstCheckMs' | 'checkMs' | 'feedMinIntervalMs' | 'onRun'> | undefined
}

// Formatted citations kept (citations.ts bounds their bytes too: 16 MiB).
const CITATIONS_KEPT = 10_000

/**
 * The registry copy (REGISTRY_COPY, issue 43), opened read-only for serving, with its tier for the resolver
 * (after the cache, before the upstream), its negotiated answers, and its figures on /metrics; undefined
 * when no copy is set. A directory that holds no copy this version reads stops the start (exit 78), naming it.
 * LMDB's native module is loaded only then: a server without a copy never loads it.
 */
export async function setUpRegistryCopy(config: CopySettings, deps: CopyDeps): Promise<RegistryCopy | undefined> {
  if (config.registryCopy === undefined) return undefined
  const { CopyError, openCopy } = await import('../resolve/copy/store.js')
  // Writable only when this process may update it (LMDB: one writer at a time, across processes).
  const updating = config.registryCopyUpdateHours > 0 && !config.offline
  let store: CopyStore
  try {
    // Opened writable, LMDB would make a copy where there is none: there must be one already.
    if (updating && !existsSync(join(config.registryCopy, 'data.mdb'))) {
      throw new CopyError(
        'absent',
        `${JSON.stringify(config.registryCopy)} holds no registry copy (no data.mdb): make one with doi-proxy import --to ${config.registryCopy}`
      )
    }
    store = openCopy({ dir: config.registryCopy, writable: updating, log: deps.log })
  } catch (err) {
    if (err instanceof CopyError) throw new ConfigError(`invalid setting registryCopy (REGISTRY_COPY): ${err.message}`)
    throw err
  }
  const { lookups } = deps.metrics.copy
  const tier = createCopyTier({
    copy: store,
    maxAgeS: config.registryCopyMaxAgeSeconds,
    offline: config.offline,
    now: deps.now,
    count: {
      hit: lookups.tally({ result: 'hit' }),
      tooOld: lookups.tally({ result: 'too_old' }),
      absent: lookups.tally({ result: 'absent' }),
      standIn: lookups.tally({ result: 'stand_in' })
    }
  })
  deps.metrics.observeCopy(() => {
    const stats = store.stats()
    const asOf: Record<string, number> = {}
    for (const [agency, coverage] of Object.entries(store.coverage())) asOf[agency] = coverage.through
    return { records: stats.byAgency, asOf }
  })
  const citations = await setUpCitations(config, deps)
  const updates = updating ? await startUpdates(config, store, deps) : undefined
  deps.log.info({ dir: config.registryCopy, records: store.stats().records, updating }, 'registry copy attached')
  return {
    store,
    tier,
    metadata: copyMetadata(tier, citations.formatter),
    updates,
    status: await copyStatusReader(config, store, deps.now),
    close: async () => {
      // The run in flight is cut (its state saved) before the copy it writes closes.
      await updates?.stop()
      await citations.close()
      await store.close()
    }
  }
}

/**
 * REGISTRY_COPY_UPDATE_HOURS: every process serving the copy runs the schedule (src/resolve/copy/updater.ts);
 * the lease in the copy makes one of them update it at a time. Each run counted in doi_proxy_copy_updates_total.
 */
async function startUpdates(config: CopySettings, store: CopyStore, deps: CopyDeps): Promise<UpdateSchedule> {
  const { startUpdateSchedule } = await import('../resolve/copy/updater.js')
  if (config.contactEmail === undefined) {
    deps.log.warn(
      { setting: 'CONTACT_EMAIL' },
      'REGISTRY_COPY_UPDATE_HOURS asks Crossref without a mailto: set CONTACT_EMAIL so Crossref serves the updates from its polite pool and can reach you'
    )
  }
  return startUpdateSchedule({
    settings: config,
    copy: store,
    userAgent: upstreamUserAgent(config),
    log: deps.log,
    nowMs: deps.now,
    updatesCounter: deps.metrics.copy.updates,
    ...deps.updates
  })
}

/**
 * BibTeX, RIS and bibliographies from the copy's CSL-JSON (src/resolve/copy/citations.ts): citation-js is
 * loaded on the first citation asked, never at start; bibliographies wait in a queue of
 * REGISTRY_COPY_CITATION_QUEUE (beyond it: 503 + Retry-After); each render counted in doi_proxy_copy_citations_total.
 */
async function setUpCitations(config: CopySettings, deps: CopyDeps): Promise<{ formatter: CitationFormatter; close: () => Promise<void> }> {
  const { createCitations } = await import('../resolve/copy/citations.js')
  const counter = deps.metrics.copy.citations
  const citations = createCitations({
    queueMax: config.registryCopyCitationQueue,
    cacheMax: CITATIONS_KEPT,
    log: deps.log,
    count: (format, outcome) => counter.inc({ format, outcome })
  })
  const { keys, types, styles, locales } = citations.formats
  const bibliography = types.find((t) => t.startsWith('text/x-bibliography'))
  const formatter: CitationFormatter = {
    formats: keys,
    // What a 406 names: each type, each style and each locale once (not their combinations).
    held: [
      ...types.filter((t) => t !== bibliography),
      ...(bibliography === undefined
        ? []
        : [...styles.map((s) => `${bibliography}; style=${s}`), ...locales.map((l) => `${bibliography}; locale=${l}`)])
    ],
    render: (csl, type, params) => citations.render(csl, type, params)
  }
  return { formatter, close: () => citations.close() }
}

/** /status's registry copy: its records, as-of and last update per agency, and the update lease, read from the copy. */
async function copyStatusReader(
  config: Pick<Config, 'registryCopyUpdateHours'>,
  store: CopyStore,
  now: () => number
): Promise<() => RegistryCopyStatus> {
  // updater.ts loads the writer and LMDB: imported only once a copy is open.
  const { lastUpdateOf, leaseNow, stateKeyOf } = await import('../resolve/copy/updater.js')
  const iso = (seconds: number): string | null => (seconds > 0 ? new Date(seconds * 1000).toISOString() : null)
  return () => {
    const stats = store.stats()
    const coverage = store.coverage()
    const agencies: RegistryCopyAgency[] = []
    for (const agency of AGENCIES) {
      const fed = agency === 'other' ? undefined : agency
      const last = fed === undefined ? undefined : lastUpdateOf(store, fed)
      const pending = fed === undefined ? undefined : updateStateOf(store.meta(stateKeyOf(fed)))
      const records = stats.byAgency[agency] ?? 0
      const through = coverage[agency]?.through
      if (records === 0 && through === undefined && last === undefined && pending === undefined) continue
      agencies.push({
        agency,
        records,
        asOf: through === undefined ? null : iso(through),
        lastUpdate:
          last === undefined
            ? null
            : { outcome: last.outcome, at: iso(last.endedAt) ?? '', pages: last.pages, records: last.records, error: last.error ?? null },
        pending: pending === undefined ? null : { pages: pending.pages, records: pending.records }
      })
    }
    const lease = leaseNow(store)
    return {
      records: stats.records,
      fileBytes: stats.fileBytes,
      updatedAt: iso(stats.updatedAt),
      updateHours: config.registryCopyUpdateHours,
      agencies,
      // A lease past its time is nobody's.
      lease: lease === undefined || lease.until <= now() ? null : { holder: lease.holder, until: new Date(lease.until).toISOString() }
    }
  }
}
