import { LRUCache } from 'lru-cache'
import robotsParserModule from 'robots-parser'
import type { FailureReason } from '../../handle/landing/verdict.js'
import { untilAborted } from '../upstream/deadline.js'

// A CommonJS module whose types say `export default`: under NodeNext the default import is module.exports, the function itself.
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default

/**
 * robots.txt per origin for landing checks (RFC 9309), under the crawler's token `doi-proxy`: a 4xx
 * answer allows everything, a 5xx or no answer disallows everything (the page is `blocked`, the evidence
 * says robots.txt was unreachable), a 2xx is read (robots-parser: the token's group, else `*`; wildcards;
 * Crawl-delay). Kept per origin for `ttlMs` in a bounded LRU; one fetch per origin at a time.
 */
export const ROBOTS_TOKEN = 'doi-proxy'
/** RFC 9309 2.5: a crawler must read at least 500 KiB; more is not read. */
export const MAX_ROBOTS_BYTES = 500 * 1024

/** A robots.txt fetched: its status and text, or no answer (why, as a hop's failure: the host itself is unreachable). */
export type RobotsAnswer = { kind: 'answer'; status: number; text: string } | { kind: 'failed'; failure: HostFailure }

/** Why a host gave no answer at all (a DNS, TLS or connection failure, every try timed out, a refused address). */
export interface HostFailure {
  reason: FailureReason
  detail: string
  tries?: number
}

/** A host that gave no answer is asked again after this long at most (not kept for a day). */
const FAILED_TTL_MS = 60_000

export interface RobotsOptions {
  /** Fetch `<origin>/robots.txt` (following at most 5 redirects, bounded, through the guard and a host slot). */
  fetchRobots: (robotsUrl: URL) => Promise<RobotsAnswer>
  ttlMs: number
  maxEntries?: number
}

/**
 * May the crawler fetch the URL: yes (with the Crawl-delay asked), no (`why`), or the host answers nothing
 * at all (`failure`: the page is as unreachable as its robots.txt, and dead for that reason).
 */
export type RobotsDecision =
  { allowed: true; crawlDelayMs?: number } | { allowed: false; why: string } | { allowed: false; failure: HostFailure }

type Rules =
  | { kind: 'all' }
  | { kind: 'none'; why: string }
  | { kind: 'failed'; failure: HostFailure }
  | { kind: 'read'; robots: ReturnType<typeof robotsParser> }

export function createRobotsRules(opts: RobotsOptions) {
  const cache = new LRUCache<string, Promise<Rules>>({ max: opts.maxEntries ?? 10_000, ttl: Math.max(1, opts.ttlMs) })

  async function rulesOf(robotsUrl: URL): Promise<Rules> {
    const answer = await opts.fetchRobots(robotsUrl)
    if (answer.kind === 'failed') return { kind: 'failed', failure: answer.failure }
    if (answer.status >= 500) return { kind: 'none', why: `robots.txt unreachable (HTTP ${answer.status})` }
    if (answer.status >= 400) return { kind: 'all' }
    if (answer.status < 200 || answer.status >= 300) return { kind: 'none', why: `robots.txt unreachable (HTTP ${answer.status})` }
    return { kind: 'read', robots: robotsParser(robotsUrl.href, answer.text) }
  }

  return {
    /** Whether the crawler may fetch `url`, and the Crawl-delay its group asks; the caller leaving throws its reason. */
    async decide(url: URL, signal?: AbortSignal): Promise<RobotsDecision> {
      const robotsUrl = new URL('/robots.txt', url.origin)
      let pending = cache.get(url.origin)
      if (pending === undefined) {
        // Fetched for every asker of the origin, so not stopped by the first one leaving (its time is bounded).
        pending = rulesOf(robotsUrl)
        cache.set(url.origin, pending)
        const origin = url.origin
        const fetched = pending
        pending.then(
          (rules) => {
            if (rules.kind === 'failed' && cache.get(origin) === fetched) {
              cache.set(origin, fetched, { ttl: Math.min(FAILED_TTL_MS, opts.ttlMs) })
            }
          },
          () => cache.delete(origin)
        )
      }
      const rules = await untilAborted(pending, signal)
      if (rules.kind === 'all') return { allowed: true }
      if (rules.kind === 'none') return { allowed: false, why: rules.why }
      if (rules.kind === 'failed') return { allowed: false, failure: rules.failure }
      if (rules.robots.isAllowed(url.href, ROBOTS_TOKEN) === false) {
        return { allowed: false, why: `robots.txt disallows ${url.pathname.slice(0, 200)} for ${ROBOTS_TOKEN}` }
      }
      const delay = rules.robots.getCrawlDelay(ROBOTS_TOKEN)
      return delay === undefined || !(delay > 0) ? { allowed: true } : { allowed: true, crawlDelayMs: delay * 1000 }
    }
  }
}

export type RobotsRules = ReturnType<typeof createRobotsRules>
