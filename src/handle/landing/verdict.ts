import type { LandingResult } from '../verify/types.js'
import { registrableDomain } from './domain.js'
import type { PageEvidence } from './page-evidence.js'

/**
 * A landing probe's outcome as a verdict with one line of evidence (issue 41, docs/checking-dois.md):
 * `alive` (2xx, and the page names the DOI or the registered title), `unconfirmed` (2xx without either:
 * drift, a taken-over domain), `blocked` (a bot wall, an access refusal, robots.txt: the page exists,
 * never a failure), `dead` (gone, an error on every try, no answer, a loop, too many hops, a refused address).
 */
export type ProbeOutcome =
  | {
      kind: 'answer'
      /** The final hop's status and URL, headers and the body's first characters (for a challenge's markers). */
      status: number
      url: string
      headers: Readonly<Record<string, string | string[] | undefined>>
      head: string
      evidence: PageEvidence
      /** The URL the probe started at (the registered one): a page on another registrable domain says so. */
      startUrl: string
      /** How many tries the last hop took (a 5xx is dead only after them all). */
      tries?: number
    }
  | { kind: 'robots'; url: string; allowed: false; why: string }
  | {
      kind: 'failed'
      url: string
      /** Why no answer came: each reads as the evidence's start. */
      reason: FailureReason
      detail: string
      status?: number
      tries?: number
    }

export type FailureReason =
  'dns' | 'tls' | 'connection' | 'timeout' | 'refused-address' | 'loop' | 'too-many-hops' | 'bad-url' | 'bad-redirect'

const FAILURE_WORDS: Record<FailureReason, string> = {
  dns: 'DNS',
  tls: 'TLS',
  connection: 'connection',
  timeout: 'timeout',
  'refused-address': 'refused',
  loop: 'redirect loop',
  'too-many-hops': 'too many redirects',
  'bad-url': 'not a URL to fetch',
  'bad-redirect': 'a redirect without a usable Location'
}

export function landingVerdictOf(outcome: ProbeOutcome): LandingResult {
  if (outcome.kind === 'robots') return { verdict: 'blocked', status: null, url: outcome.url, evidence: outcome.why }
  if (outcome.kind === 'failed') {
    const tries = outcome.tries !== undefined && outcome.tries > 1 ? ` (${outcome.tries} tries)` : ''
    return {
      verdict: 'dead',
      status: outcome.status ?? null,
      url: outcome.url,
      evidence: `${FAILURE_WORDS[outcome.reason]}: ${outcome.detail}${tries}`
    }
  }
  const { status, url, evidence } = outcome
  const result = (verdict: 'alive' | 'unconfirmed' | 'blocked' | 'dead', line: string): LandingResult => ({
    verdict,
    status,
    url,
    evidence: line
  })
  const wall = challengeOf(status, outcome.headers, outcome.head)
  if (wall !== undefined) return result('blocked', wall)
  if (status >= 200 && status < 300) {
    if (evidence.doiAt !== undefined) return result('alive', `${evidence.doiAt} names the DOI`)
    if (evidence.titleMatch !== undefined) {
      return result('alive', `${evidence.titleMatch.at} names the title: ${quoted(evidence.titleMatch.title)}`)
    }
    return result('unconfirmed', `HTTP ${status}, but the page names neither the DOI nor the title${elsewhere(outcome.startUrl, url)}`)
  }
  if (status === 401 || status === 403) return result('blocked', `HTTP ${status}: the site refuses the crawler (no known challenge page)`)
  if (status === 429) return result('blocked', `HTTP 429: the site asks the crawler to slow down`)
  if (status === 404 || status === 410) return result('dead', `HTTP ${status} at ${url}`)
  const tries = outcome.tries !== undefined && outcome.tries > 1 ? ` (${outcome.tries} tries)` : ''
  if (status >= 500) return result('dead', `HTTP ${status} at ${url}${tries}`)
  return result('dead', `HTTP ${status} at ${url}`)
}

/** ", landed on casino.example, registered on journal.example" when the page is on another registrable domain. */
function elsewhere(startUrl: string, finalUrl: string): string {
  const from = hostOf(startUrl)
  const to = hostOf(finalUrl)
  if (from === undefined || to === undefined) return ''
  const [a, b] = [registrableDomain(from), registrableDomain(to)]
  return a === b ? '' : `; landed on ${b}, registered on ${a}`
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname
  } catch {
    return undefined
  }
}

function quoted(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text)
}

// Markers of the bot walls in front of publishers' pages, in the first bytes of a 403/429/503 body.
const WALLS: ReadonlyArray<{ marker: RegExp; name: string }> = [
  { marker: /\/cdn-cgi\/challenge-platform\/|_cf_chl_opt|cf-browser-verification/i, name: 'Cloudflare challenge' },
  { marker: /<title>\s*Just a moment\.\.\.|Just a moment…/i, name: 'Cloudflare challenge ("Just a moment")' },
  // Akamai's "Access Denied" page writes "Reference #18.6f2c3e17…", often with the characters as entities.
  { marker: /Reference(?:\s|&#32;)*(?:#|&#35;)(?:\s|&#32;)*\d+(?:\.|&#46;)[0-9a-f]+/i, name: 'Akamai access denial' },
  { marker: /captcha-delivery\.com|datadome/i, name: 'DataDome challenge' },
  { marker: /perimeterx|px-captcha|_pxAppId/i, name: 'PerimeterX (HUMAN) challenge' },
  { marker: /_Incapsula_Resource|incapsula incident id|imperva/i, name: 'Imperva (Incapsula) challenge' },
  { marker: /awswaf|aws-waf-token/i, name: 'AWS WAF challenge' }
]

/**
 * The bot wall an answer is, if any: Cloudflare's `cf-mitigated: challenge` on any status, else a
 * 403/429/503 whose body carries a known challenge page's marker. Undefined when none is recognised.
 */
export function challengeOf(
  status: number,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  head: string
): string | undefined {
  const mitigated = headers['cf-mitigated']
  if ((Array.isArray(mitigated) ? mitigated.join(',') : (mitigated ?? '')).toLowerCase().includes('challenge')) {
    return 'Cloudflare challenge (cf-mitigated: challenge)'
  }
  if (status !== 403 && status !== 429 && status !== 503) return undefined
  const wall = WALLS.find(({ marker }) => marker.test(head))
  return wall === undefined ? undefined : `${wall.name} (HTTP ${status})`
}

const VERDICTS: ReadonlySet<string> = new Set(['alive', 'unconfirmed', 'blocked', 'dead'])
const MAX_TEXT = 4_000

/**
 * A landing verdict read back from elsewhere (Redis, a recording), believed only when it is one: a known
 * verdict, an HTTP status or null, a URL and evidence of bounded length. Anything else is undefined, and
 * the page is asked anew (or, offline, the verdict is unknown).
 */
export function landingResultOf(value: unknown): LandingResult | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { verdict, status, url, evidence } = value as Record<string, unknown>
  if (typeof verdict !== 'string' || !VERDICTS.has(verdict)) return undefined
  if (status !== null && !(typeof status === 'number' && Number.isInteger(status) && status >= 100 && status <= 999)) return undefined
  if (typeof url !== 'string' || url.length > MAX_TEXT || typeof evidence !== 'string' || evidence.length > MAX_TEXT) return undefined
  return { verdict: verdict as NonNullable<LandingResult['verdict']>, status, url, evidence }
}
