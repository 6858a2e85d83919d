/**
 * A DOI's registered metadata as `verify=metadata` compares it (issue 41): the CSL-JSON the record's
 * content-negotiation location gives, as `GET /{doi}` with `Accept: application/vnd.citationstyles.csl+json`
 * would answer it. First the metadata stored in the local record (offline, the only source); then, with
 * METADATA_MODE=fetch, the agencies' cache and queues (resolve/metadata/agencies.ts), the location on
 * METADATA_HOSTS only, sharing the negotiated route's cache entries. What cannot be had is a reason, never a throw,
 * but the line's admission (a limit's refusal) or the reader leaving.
 */
import { acceptCacheKey, recordedType } from '../../handle/metadata-types.js'
import { allowedMetadataUrl } from '../../handle/metadata-hosts.js'
import { cacheKey } from '../../handle/name.js'
import { negotiate } from '../../handle/negotiate.js'
import { parseProxyQuery } from '../../handle/query.js'
import { registeredWorkOf } from '../../handle/verify/csl.js'
import type { RegisteredWork } from '../../handle/verify/types.js'
import type { StoredMetadata } from '../local-store/metadata.js'
import type { ProxyService } from '../lookup/proxy-service.js'
import type { MetadataAnswer, MetadataService } from '../metadata/agencies.js'
import type { Recorder } from '../recording/recorder.js'
import type { Admit } from '../upstream/fetcher.js'

/** The CSL-JSON media type: what the agencies (Crossref, DataCite, mEDRA, JaLC…) all answer. */
export const CSL_TYPE = 'application/vnd.citationstyles.csl+json'

export interface RegisteredMetadataOptions {
  /** The proxy service: which location the record gives a CSL-JSON reader (its record is at hand: the line was just resolved). */
  proxyService: Pick<ProxyService, 'answer'>
  /** The agencies' cache and queues; undefined: nothing is fetched (METADATA_MODE=off, or offline). */
  service: Pick<MetadataService, 'peek' | 'get'> | undefined
  /** METADATA_HOSTS: only a location on them is fetched. */
  hosts: readonly string[]
  /** The local store's metadata, when there is a store. */
  stored?: ((handle: string) => StoredMetadata | undefined) | undefined
  /** RECORD_TO: the CSL-JSON fetched is recorded with the record, for an offline replay. */
  recorder?: Pick<Recorder, 'recordMetadata'> | undefined
}

/** The registered work, or why there is none to compare with. */
export type RegisteredAnswer = { work: RegisteredWork } | { why: string }

const PLAIN_PARAMS = parseProxyQuery('')
const CSL_READER = negotiate({ accept: CSL_TYPE })
const CSL_KEY = acceptCacheKey(CSL_TYPE) as string
// A CSL-JSON record larger than this is not read (a work with a thousand references is about 0.5 MB).
const MAX_CSL_CHARS = 8 * 1024 * 1024

export function createRegisteredMetadata(opts: RegisteredMetadataOptions) {
  const { service, hosts } = opts

  /** The registered work of `handle` (a registered DOI, its alias followed); `admit` passed only when an agency must be asked. */
  async function workOf(handle: string, admit: Admit): Promise<RegisteredAnswer> {
    const stored = opts.stored?.(handle)?.get(CSL_TYPE)
    if (stored !== undefined) return read(stored.body, 'the stored metadata')
    if (service === undefined) {
      return { why: 'no CSL-JSON is stored for this DOI and this server fetches no metadata (METADATA_MODE=off or OFFLINE)' }
    }
    const outcome = await opts.proxyService.answer({ handle, params: PLAIN_PARAMS, client: { negotiation: CSL_READER }, admit })
    if (outcome.kind !== 'redirect' || !outcome.negotiated) return { why: 'the record gives no location that answers content negotiation' }
    const url = allowedMetadataUrl(outcome.location, hosts)
    if (typeof url === 'string') return { why: `its metadata location is not fetched: ${url}` }
    // The negotiated route's key (http/metadata.ts): one cache entry for both.
    const key = `${cacheKey(outcome.handle)}\u0000${cacheKey(url.href)}\u0000${CSL_KEY}`
    let answer: MetadataAnswer | undefined = service.peek(key)
    if (answer === undefined) {
      const { client: ticket, deadline } = await admit()
      const got = await service.get({ key, url, accept: CSL_TYPE, ticket, deadline })
      answer = got.answer
      if (got.cache === 'MISS' && answer.status === 200) record(outcome.handle, answer)
    }
    if (answer.status === 404 || answer.status === 406 || answer.status === 204) return { why: 'the agency has no CSL-JSON for this DOI' }
    if (answer.status < 200 || answer.status >= 300) return { why: `the agency answered HTTP ${answer.status}` }
    return read(answer.body.toString('utf8'), "the agency's answer")
  }

  function record(handle: string, a: MetadataAnswer): void {
    const type = opts.recorder === undefined ? undefined : recordedType(CSL_TYPE, a.contentType)
    if (type !== undefined && a.contentType !== undefined) {
      opts.recorder!.recordMetadata(handle, type, { contentType: a.contentType, body: a.body.toString('utf8') })
    }
  }

  return { workOf }
}

export type RegisteredMetadata = ReturnType<typeof createRegisteredMetadata>

function read(body: string, from: string): RegisteredAnswer {
  if (body.length > MAX_CSL_CHARS) return { why: `${from} is larger than ${MAX_CSL_CHARS} characters` }
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return { why: `${from} is not JSON` }
  }
  const work = registeredWorkOf(parsed)
  return work === undefined ? { why: `${from} is not a CSL-JSON record` } : { work }
}
