import type { Config } from '../config/schema.js'
import { upstreamUserAgent } from '../config/schema.js'
import { metadataFreshnessPolicy } from '../handle/freshness.js'
import type { FreshnessPolicy } from '../handle/freshness.js'
import { createMetadataAnswers } from '../http/metadata.js'
import type { MetadataAnswers, MetadataAnswersOptions } from '../http/metadata.js'
import { createMetadataFetcher, createMetadataService } from '../resolve/metadata/agencies.js'
import type { MetadataService } from '../resolve/metadata/agencies.js'

/** The settings the metadata answers read (docs/metadata.md); the agencies' queue takes the upstream's per-client limits. */
export type MetadataSettings = Pick<
  Config,
  | 'metadataMode'
  | 'verifyLevels'
  | 'offline'
  | 'metadataHosts'
  | 'metadataTimeoutMs'
  | 'metadataMaxBodyBytes'
  | 'metadataAgencyConcurrency'
  | 'metadataMaxRedirects'
  | 'metadataCacheMaxBytes'
  | 'metadataMaxTtlSeconds'
  | 'userAgent'
  | 'contactEmail'
  | 'upstreamConnectTimeoutMs'
  | 'upstreamRetries'
  | 'upstreamRetryBaseMs'
  | 'upstreamRetryMaxMs'
  | 'upstreamPerClient'
  | 'upstreamClientQueue'
  | 'upstreamQueueSize'
  | 'upstreamQueueTimeoutMs'
>

/** What the metadata answers are given: the gate, the stored metadata, the recorder, the clock, and the records' freshness. */
export type MetadataParts = Omit<MetadataAnswersOptions, 'service' | 'hosts'> & { freshness: FreshnessPolicy }

/**
 * Negotiated requests answered with metadata (docs/metadata.md): stored metadata always; with
 * METADATA_MODE=fetch (and not offline) an agency's too, through its fetcher (an undici Agent, closed by
 * `close`) and the cache and queues in front of it, fresh and kept by the records' rule (`freshness`) with
 * METADATA_MAX_TTL_SECONDS as its cap. The same service is built, for `verify=metadata` and `landing` only
 * (`service`), when VERIFY_LEVELS names one of them: the negotiated route then still answers with the redirect.
 */
export function setUpMetadata(
  settings: MetadataSettings,
  deps: MetadataParts
): { answers: MetadataAnswers; service: MetadataService | undefined; close: () => Promise<void> } {
  const { freshness, ...answering } = deps
  const hosts = settings.metadataHosts
  const forVerify = settings.verifyLevels.some((level) => level === 'metadata' || level === 'landing')
  const fetcher =
    (settings.metadataMode === 'fetch' || forVerify) && !settings.offline
      ? createMetadataFetcher({
          hosts,
          userAgent: upstreamUserAgent(settings),
          timeoutMs: settings.metadataTimeoutMs,
          connectTimeoutMs: settings.upstreamConnectTimeoutMs,
          maxBodyBytes: settings.metadataMaxBodyBytes,
          connectionsPerHost: settings.metadataAgencyConcurrency,
          maxRedirects: settings.metadataMaxRedirects,
          retry: { retries: settings.upstreamRetries, baseMs: settings.upstreamRetryBaseMs, maxMs: settings.upstreamRetryMaxMs }
        })
      : undefined
  const service =
    fetcher === undefined
      ? undefined
      : createMetadataService({
          fetcher,
          now: deps.now,
          cacheMaxBytes: settings.metadataCacheMaxBytes,
          freshness: metadataFreshnessPolicy(freshness, settings.metadataMaxTtlSeconds),
          queue: {
            maxActive: settings.metadataAgencyConcurrency,
            perClient: settings.upstreamPerClient,
            perClientQueue: settings.upstreamClientQueue,
            maxWaiting: settings.upstreamQueueSize,
            waitTimeoutMs: settings.upstreamQueueTimeoutMs,
            retryAfterMs: 5000
          }
        })
  return {
    answers: createMetadataAnswers({ ...answering, service: settings.metadataMode === 'fetch' ? service : undefined, hosts }),
    service,
    close: async () => {
      await fetcher?.close()
    }
  }
}
