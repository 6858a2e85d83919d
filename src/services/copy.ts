import type { Config } from '../config/schema.js'
import { ConfigError } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import { copyMetadata } from '../resolve/copy/metadata.js'
import type { CitationFormatter, CopyMetadata } from '../resolve/copy/metadata.js'
import type { CopyLog, CopyStore } from '../resolve/copy/store.js'
import { createCopyTier } from '../resolve/copy/tier.js'
import type { CopyTier } from '../resolve/copy/tier.js'

/** The settings the registry copy's serving reads. */
export type CopySettings = Pick<Config, 'registryCopy' | 'registryCopyMaxAgeSeconds' | 'registryCopyCitationQueue' | 'offline'>

/** What the serving of the copy is made of: its store, the resolver's tier, the negotiated answers. */
export interface RegistryCopy {
  store: CopyStore
  tier: CopyTier
  metadata: CopyMetadata
  close(): Promise<void>
}

export interface CopyDeps {
  metrics: Metrics
  log: CopyLog
  /** Epoch ms. */
  now: () => number
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
  let store: CopyStore
  try {
    store = openCopy({ dir: config.registryCopy, writable: false, log: deps.log })
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
  deps.log.info({ dir: config.registryCopy, records: store.stats().records }, 'registry copy attached')
  return {
    store,
    tier,
    metadata: copyMetadata(tier, citations.formatter),
    close: async () => {
      await citations.close()
      await store.close()
    }
  }
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
