import { setTimeout as sleep } from 'node:timers/promises'
import { Agent } from 'undici'
import type { AddressRules } from '../../handle/address-rules.js'
import { createPageScanner } from '../../handle/landing/page-evidence.js'
import { landingVerdictOf, type ProbeOutcome } from '../../handle/landing/verdict.js'
import type { LandingResult } from '../../handle/verify/types.js'
import { retryAfterMs } from '../upstream/client.js'
import { guardedLookup, refusedUrl, type LandingLookup } from './address-guard.js'
import { fetchPage, type HopAnswer, type HopContext } from './fetch-page.js'
import { createHostSlots, MAX_CRAWL_DELAY_MS, type HostSlots } from './host-slots.js'
import { createRobotsRules, MAX_ROBOTS_BYTES, type RobotsAnswer, type RobotsRules } from './robots.js'

/**
 * The landing prober (issue 41), a service of its own: `check --verify` asks it through the landing
 * checks' cache, issue 42's health checks may ask it directly. From the registered URL (never doi.org),
 * hop by hop: the address guard, robots.txt, a host slot, one GET; redirects followed (at most
 * MAX_REDIRECTS, a URL seen twice is a loop); each hop tried up to TRIES times on a timeout, a reset, a
 * DNS failure that may pass, a 5xx, or a 429/503 whose Retry-After is at most a minute. The outcome becomes
 * a verdict with its evidence (handle/landing/verdict.ts).
 */
export interface LandingProberOptions {
  /** The crawler's User-Agent: landingUserAgent(config). */
  userAgent: string
  timeoutMs: number
  maxBytes: number
  perHost: number
  hostDelayMs: number
  robotsTtlMs: number
  /** LANDING_ALLOW_PRIVATE as rules (addressRulesOf). */
  rules: AddressRules
  /** Name lookups (tests inject theirs: no test resolves a real name); node:dns by default. */
  lookup?: LandingLookup
  /** Host slots shared with another prober (or fleet-wide ones); this prober's own by default. */
  hostSlots?: HostSlots
  /** The first wait between tries (doubled each time); a Retry-After wins. */
  retryBaseMs?: number
  /** Counts each hop by outcome (observe/metrics.ts landingFetches). */
  onFetch?: (outcome: string) => void
}

export interface ProbeRequest {
  doi: string
  /** The registered URL, where the probe starts. */
  url: string
  /** The registered titles, for pages that name the title but not the DOI. */
  titles: readonly string[]
}

/** Redirects followed at most (issue 41): the 11th is `dead`. */
export const MAX_REDIRECTS = 10
/** Tries of one hop at most (issue 41). */
export const TRIES = 3
const MAX_ROBOTS_REDIRECTS = 5
const REDIRECTS = new Set([301, 302, 303, 307, 308])

export function createLandingProber(opts: LandingProberOptions) {
  const agent = new Agent({
    connect: { lookup: guardedLookup(opts.rules, opts.lookup), rejectUnauthorized: true, timeout: opts.timeoutMs },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    keepAliveTimeout: 4_000
  })
  const slots = opts.hostSlots ?? createHostSlots({ perHost: opts.perHost, delayMs: opts.hostDelayMs })
  // Ends every probe under way (and their robots.txt fetches) when the prober is closed.
  const closing = new AbortController()
  const tryHop = hopTrier(opts, agent, slots)
  const robots = createRobotsRules({
    fetchRobots: (robotsUrl) => fetchRobots(robotsUrl, tryHop, opts.rules, closing.signal),
    ttlMs: opts.robotsTtlMs
  })
  const walk: Walk = { opts, tryHop, robots }

  return {
    /** The landing verdict of one registered URL, with its evidence; the caller leaving (`signal`) throws its reason. */
    async probe(req: ProbeRequest, signal?: AbortSignal): Promise<LandingResult> {
      return landingVerdictOf(await outcomeOf(req, signal === undefined ? closing.signal : AbortSignal.any([signal, closing.signal]), walk))
    },
    /** Ends the probes under way (they reject) and closes the connections; twice is once. */
    async close(): Promise<void> {
      if (closing.signal.aborted) return
      closing.abort(new Error('the landing prober is closed'))
      await agent.destroy()
    }
  }
}

/**
 * One hop, tried up to TRIES times, each try in a host slot; `statuses`: a 5xx or 429 answer is tried again too
 * (a page's), or is the answer (a robots.txt's).
 */
type TryHop = (
  url: URL,
  crawlDelayMs: number | undefined,
  maxBytes: number,
  onText: (() => (text: string) => void) | undefined,
  signal: AbortSignal,
  statuses: boolean
) => Promise<{ answer: HopAnswer; tries: number }>

/** What a probe's walk from URL to URL goes by: the settings, the hop tried again, robots.txt per origin. */
interface Walk {
  opts: LandingProberOptions
  tryHop: TryHop
  robots: RobotsRules
}

function hopTrier(opts: LandingProberOptions, agent: Agent, slots: HostSlots): TryHop {
  const retryBaseMs = opts.retryBaseMs ?? 1_000
  return async function tryHop(url, crawlDelayMs, maxBytes, onText, signal, statuses) {
    for (let tries = 1; ; tries++) {
      const slot = await slots.acquire(url.host, { signal, crawlDelayMs })
      let answer: HopAnswer
      try {
        const ctx: HopContext = {
          dispatcher: agent,
          userAgent: opts.userAgent,
          timeoutMs: opts.timeoutMs,
          maxBytes,
          signal,
          onSent: slot.sent
        }
        answer = await fetchPage(url, ctx, onText?.() ?? (() => {}))
      } finally {
        slot.release()
      }
      opts.onFetch?.(fetchLabel(answer))
      const wait = answer.kind === 'answer' && !statuses ? undefined : retryWait(answer, tries, retryBaseMs)
      if (wait === undefined || tries >= TRIES) return { answer, tries }
      await sleep(wait, undefined, { signal }).catch(() => {
        throw signal.reason
      })
    }
  }
}

/** A hop as landingFetches counts it: its status class, or why it failed. */
function fetchLabel(answer: HopAnswer): string {
  if (answer.kind === 'answer') return `${Math.floor(answer.status / 100)}xx`
  return answer.reason === 'refused-address' ? 'refused_address' : answer.reason
}

/** How long before another try, or undefined when another would not help (or may not be made). */
function retryWait(answer: HopAnswer, tries: number, retryBaseMs: number): number | undefined {
  const backoff = retryBaseMs * 2 ** (tries - 1)
  if (answer.kind === 'failed') return answer.retryable ? backoff : undefined
  const { status } = answer
  if (status !== 429 && status < 500) return undefined
  const header = answer.headers['retry-after']
  const asked = retryAfterMs(Array.isArray(header) ? header[0] : header)
  if (asked !== undefined && asked > MAX_CRAWL_DELAY_MS) return undefined
  if (status === 429 && asked === undefined) return undefined // a 429 without a time: blocked now
  return asked ?? backoff
}

async function fetchRobots(robotsUrl: URL, tryHop: TryHop, rules: AddressRules, signal: AbortSignal): Promise<RobotsAnswer> {
  let current = robotsUrl
  for (let hop = 0; hop <= MAX_ROBOTS_REDIRECTS; hop++) {
    const refused = refusedUrl(current, rules)
    if (refused !== undefined) return { kind: 'failed', failure: refused }
    let text = ''
    // A robots.txt's status is its answer (RFC 9309: a 5xx disallows); only a failure to connect is tried again.
    const { answer, tries } = await tryHop(current, undefined, MAX_ROBOTS_BYTES, () => (chunk) => (text += chunk), signal, false)
    if (answer.kind === 'failed') return { kind: 'failed', failure: { reason: answer.reason, detail: answer.detail, tries } }
    const next = redirectOf(answer, current)
    if (next === undefined) return { kind: 'answer', status: answer.status, text }
    // RFC 9309 2.3.1.2: a robots.txt that cannot be reached through its redirects is as if unavailable (4xx: allow).
    if (next === 'bad') return { kind: 'answer', status: 404, text: '' }
    current = next
  }
  return { kind: 'answer', status: 404, text: '' }
}

/** From the registered URL, hop by hop, to the page's answer or the reason there is none. */
async function outcomeOf(req: ProbeRequest, signal: AbortSignal, { opts, tryHop, robots }: Walk): Promise<ProbeOutcome> {
  let current: URL
  try {
    current = new URL(req.url)
  } catch {
    return { kind: 'failed', url: req.url.slice(0, 2000), reason: 'bad-url', detail: 'the registered URL does not parse' }
  }
  const startUrl = current.href
  const seen = new Set<string>()
  for (let hop = 0; ; hop++) {
    const url = current.href
    const refused = refusedUrl(current, opts.rules)
    if (refused !== undefined) {
      if (refused.reason === 'refused-address') opts.onFetch?.('refused_address')
      return { kind: 'failed', url, ...refused }
    }
    if (seen.has(url)) return { kind: 'failed', url, reason: 'loop', detail: `${url} was reached before` }
    if (hop > MAX_REDIRECTS) return { kind: 'failed', url, reason: 'too-many-hops', detail: `more than ${MAX_REDIRECTS} redirects` }
    seen.add(url)
    const decision = await robots.decide(current, signal)
    if (!decision.allowed) {
      if ('failure' in decision) return { kind: 'failed', url, ...decision.failure }
      opts.onFetch?.('robots_disallowed')
      return { kind: 'robots', url, allowed: false, why: decision.why }
    }
    // Each try reads the page afresh: the evidence is that of the answer kept.
    let scanner = createPageScanner(req.doi, req.titles)
    const fresh = (): ((text: string) => void) => {
      scanner = createPageScanner(req.doi, req.titles)
      return (text) => scanner.write(text)
    }
    const { answer, tries } = await tryHop(current, decision.crawlDelayMs, opts.maxBytes, fresh, signal, true)
    if (answer.kind === 'failed') return { kind: 'failed', url, reason: answer.reason, detail: answer.detail, tries }
    const next = redirectOf(answer, current)
    if (next === 'bad') {
      return { kind: 'failed', url, reason: 'bad-redirect', detail: `HTTP ${answer.status} at ${url}`, status: answer.status }
    }
    if (next !== undefined) {
      current = next
      continue
    }
    return {
      kind: 'answer',
      status: answer.status,
      url,
      startUrl,
      headers: answer.headers,
      head: answer.head,
      evidence: scanner.end(),
      tries
    }
  }
}

export type LandingProber = ReturnType<typeof createLandingProber>

/** Where a redirect leads (http or https only), undefined when the answer is not one, 'bad' when its Location is unusable. */
function redirectOf(answer: Extract<HopAnswer, { kind: 'answer' }>, base: URL): URL | 'bad' | undefined {
  if (!REDIRECTS.has(answer.status)) return undefined
  const header = answer.headers.location
  const location = Array.isArray(header) ? header[0] : header
  if (location === undefined || location === '') return 'bad'
  try {
    const next = new URL(location, base)
    return next.protocol === 'http:' || next.protocol === 'https:' ? next : 'bad'
  } catch {
    return 'bad'
  }
}
