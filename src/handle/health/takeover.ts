/**
 * Whether a watched DOI's landing page was taken over (issue 42, plan D12): the page no longer names the DOI or its
 * title (the prober's `unconfirmed`), it is on another registrable domain than both the page last seen alive and the
 * URL the DOI is registered with, and the DOI was seen alive before (else it is a DOI we never knew working, not a
 * takeover). A page that drifted on its own domain stays `unconfirmed`, saying since when it named the DOI.
 */
import { registrableDomain } from '../landing/domain.js'
import type { LandingVerdict } from '../verify/types.js'
import { checkVerdictOf } from './types.js'
import type { CheckVerdict } from './types.js'

/** What the landing prober found: its verdict, the final URL reached and its one line of evidence. */
export interface LandingSeen {
  verdict: LandingVerdict
  url: string
  evidence: string
}

/** The last `alive` check of the DOI: its final URL and when. */
export interface LastGood {
  url: string
  at: number
}

/** The check's verdict and evidence, `takeover` when the rule above holds. */
export function takeoverOf(
  landing: LandingSeen,
  registeredUrl: string | null,
  lastGood: LastGood | null
): { verdict: CheckVerdict; evidence: string } {
  const verdict = checkVerdictOf(landing.verdict)
  if (landing.verdict !== 'unconfirmed' || lastGood === null) return { verdict, evidence: landing.evidence }
  const until = new Date(lastGood.at).toISOString().slice(0, 10)
  const landed = domainOf(landing.url)
  const good = domainOf(lastGood.url)
  const registered = registeredUrl === null ? null : domainOf(registeredUrl)
  if (landed !== null && good !== null && landed !== good && landed !== registered) {
    return { verdict: 'takeover', evidence: `landed on ${landed}; alive on ${good} until ${until}` }
  }
  return { verdict, evidence: `${landing.evidence}; named the DOI until ${until}` }
}

/** The registrable domain of a URL; null for one that does not parse or has no host. */
function domainOf(url: string): string | null {
  if (!URL.canParse(url)) return null
  const host = new URL(url).hostname
  return host === '' ? null : registrableDomain(host)
}
