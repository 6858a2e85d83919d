import type { Config } from '../config/schema.js'
import { ConfigError } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import { copyMetadata } from '../resolve/copy/metadata.js'
import type { CitationFormatter, CopyMetadata } from '../resolve/copy/metadata.js'
import type { CopyLog, CopyStore } from '../resolve/copy/store.js'
import { createCopyTier } from '../resolve/copy/tier.js'
import type { CopyTier } from '../resolve/copy/tier.js'

/** The settings the registry copy's serving reads. */
export type CopySettings = Pick<Config, 'registryCopy' | 'registryCopyMaxAgeSeconds' | 'offline'>

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
  /** The formatter of BibTeX, RIS and bibliographies (src/resolve/copy/citations.ts); without one, CSL-JSON only. */
  citations?: CitationFormatter | undefined
}

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
  deps.log.info({ dir: config.registryCopy, records: store.stats().records }, 'registry copy attached')
  return {
    store,
    tier,
    metadata: copyMetadata(tier, deps.citations),
    close: async () => {
      await store.close()
    }
  }
}
