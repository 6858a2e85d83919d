/**
 * One check of one watched DOI (issue 42, plan D13): the DOI resolved as a reader's browser would have it
 * (local records, cache, the fair queue upstream as its own client), its registered titles read when they
 * can be (a page naming the work but not its DOI is alive), its landing page verdict from issue 41's cached
 * checks (a confirmation probes again), and a takeover told apart from drift. Our own failures (the registry
 * unreachable, a limit) are `error`: they say nothing of the DOI.
 */
import { negotiate } from '../../handle/negotiate.js'
import { parseProxyQuery } from '../../handle/query.js'
import { takeoverOf } from '../../handle/health/takeover.js'
import type { LastGood } from '../../handle/health/takeover.js'
import type { CheckKind, CheckResult } from '../../handle/health/types.js'
import type { LandingResult } from '../../handle/verify/types.js'
import type { LandingChecks } from '../landing/landing-checks.js'
import type { ProxyService } from '../lookup/proxy-service.js'
import type { ClientTicket } from '../upstream/fair-queue.js'
import type { Admit } from '../upstream/fetcher.js'
import type { RegisteredMetadata } from '../verify/registered-metadata.js'

/** The fair queue's client for health checks: its own turn beside the readers', bounded by UPSTREAM_PER_CLIENT. */
export const HEALTH_CLIENT: ClientTicket = { key: 'doi-proxy:health', trusted: false }

const PLAIN = parseProxyQuery('')
const BROWSER = negotiate({ accept: 'text/html' })

export interface CheckerOptions {
  proxyService: Pick<ProxyService, 'answer'>
  /** The registered titles (CSL-JSON); undefined: none are read, the page must name the DOI. */
  registered?: Pick<RegisteredMetadata, 'workOf'> | undefined
  landing: Pick<LandingChecks, 'check' | 'recheck'>
  /** How long one resolution may wait in the queue and upstream. */
  resolveMs: number
}

/** What the checker needs of a watched DOI: its name as shown and the last page seen alive (for takeovers). */
export interface CheckTarget {
  doi: string
  lastGood: LastGood | null
}

export function createChecker(opts: CheckerOptions) {
  /** The DOI checked now; `signal` is the scheduler stopping (its reason thrown, nothing recorded). */
  async function check(target: CheckTarget, kind: CheckKind, signal: AbortSignal): Promise<CheckResult> {
    const started = performance.now()
    const ms = (): number => Math.round(performance.now() - started)
    let passed: ReturnType<Admit> | undefined
    const admit: Admit = async () =>
      await (passed ??= Promise.resolve({ client: HEALTH_CLIENT, deadline: performance.now() + opts.resolveMs }))
    const resolved = await resolve(target.doi, admit, signal)
    if ('verdict' in resolved) return { ...resolved, ms: ms() }
    const { url } = resolved
    const titles = await titlesOf(target.doi, admit, signal)
    let landing: LandingResult
    try {
      landing =
        kind === 'confirm'
          ? await opts.landing.recheck(target.doi, url, titles, signal)
          : await opts.landing.check(target.doi, url, titles, signal)
    } catch (err) {
      signal.throwIfAborted()
      return {
        verdict: 'error',
        status: null,
        registeredUrl: url,
        finalUrl: null,
        evidence: `the landing page could not be checked: ${messageOf(err)}`,
        ms: ms()
      }
    }
    if (landing.verdict === null) {
      return { verdict: 'error', status: null, registeredUrl: url, finalUrl: landing.url, evidence: landing.error, ms: ms() }
    }
    const { verdict, evidence } = takeoverOf(
      { verdict: landing.verdict, url: landing.url, evidence: landing.evidence },
      url,
      target.lastGood
    )
    return { verdict, status: landing.status, registeredUrl: url, finalUrl: landing.url, evidence, ms: ms() }
  }

  /** The registered URL, or the check's result when there is none to visit. */
  async function resolve(doi: string, admit: Admit, signal: AbortSignal): Promise<{ url: string } | Omit<CheckResult, 'ms'>> {
    const none = { registeredUrl: null, finalUrl: null }
    try {
      // `post`: an alias is followed to its target's URL, as a reader's browser ends up there (behaviour.md R2).
      const outcome = await opts.proxyService.answer({ handle: doi, params: PLAIN, post: true, client: { negotiation: BROWSER }, admit })
      switch (outcome.kind) {
        case 'redirect':
          return { url: outcome.location }
        case 'not-found':
          return {
            verdict: 'not-found',
            status: 404,
            ...none,
            evidence: outcome.message ?? 'the registry does not know this DOI (HTTP 404)'
          }
        case 'refused':
          return { verdict: 'no-url', status: null, ...none, evidence: outcome.message }
        default:
          return { verdict: 'no-url', status: null, ...none, evidence: 'the record gives no URL to send a reader to' }
      }
    } catch (err) {
      signal.throwIfAborted()
      return { verdict: 'error', status: null, ...none, evidence: `the DOI could not be resolved: ${messageOf(err)}` }
    }
  }

  /** The registered titles when the metadata can be had; none otherwise (the page must then name the DOI). */
  async function titlesOf(doi: string, admit: Admit, signal: AbortSignal): Promise<string[]> {
    if (opts.registered === undefined) return []
    try {
      const got = await opts.registered.workOf(doi, admit)
      return 'work' in got ? got.work.titles : []
    } catch {
      signal.throwIfAborted()
      return []
    }
  }

  return { check }
}

export type Checker = ReturnType<typeof createChecker>

function messageOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return message.replace(/\s+/g, ' ').trim().slice(0, 300)
}
