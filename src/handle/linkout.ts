/**
 * The link-out chain of a local service (docs/institutional.md "Open access first"): which step gives
 * which URL. Pure: no I/O. The open-access answer is looked up by src/resolve/open-access/finder.ts only when
 * the chain reaches its step; chooseLinkout says so by asking for it.
 */
import { locationFor } from './redirect.js'

/** The steps a link-out chain may name (docs/institutional.md); src/config/local-services.ts checks the settings against them. */
export const LINKOUT_STEPS = ['open-access', 'service', 'ezproxy', 'registered'] as const
export type LinkoutStep = (typeof LINKOUT_STEPS)[number]

/** What the open-access source said about a DOI, as far as the chain cares. */
export type OpenAccessAnswer =
  | { kind: 'found'; url: string }
  /** The provider knows no open copy, or knows nothing of the DOI. */
  | { kind: 'none' }
  /** Not answered within OA_BUDGET_MS (it is cached when it comes, for the next reader). */
  | { kind: 'late' }
  /** No answer to be had now: the provider failed, the daily budget is spent, or no provider is set. */
  | { kind: 'unavailable' }

export interface LinkoutFacts {
  steps: readonly LinkoutStep[]
  /** Where doi.org would send the reader: the redirect's Location. */
  registered: string
  /** The service's own URL, filled in; undefined when it has none or the loop guard holds it back. */
  service: string | undefined
  /** The service's EZproxy template with {url}; undefined when it has none. */
  ezproxy: string | undefined
  /** Undefined until it was looked up. */
  openAccess: OpenAccessAnswer | undefined
}

export type LinkoutChoice =
  | { kind: 'go'; step: LinkoutStep; location: string }
  /** The chain reached "open-access": look it up, then ask again with the answer. */
  | { kind: 'ask-open-access' }

/**
 * The first step that gives a URL. "registered" always does, so does "ezproxy" with a template;
 * "service" unless held back; "open-access" when a copy is known. A chain that runs out ends at
 * the registered URL, as doi.org would answer.
 */
export function chooseLinkout(facts: LinkoutFacts): LinkoutChoice {
  for (const step of facts.steps) {
    switch (step) {
      case 'open-access':
        if (facts.openAccess === undefined) return { kind: 'ask-open-access' }
        if (facts.openAccess.kind === 'found') return { kind: 'go', step, location: facts.openAccess.url }
        break
      case 'service':
        if (facts.service !== undefined) return { kind: 'go', step, location: facts.service }
        break
      case 'ezproxy':
        if (facts.ezproxy !== undefined) return { kind: 'go', step, location: ezproxyUrl(facts.ezproxy, facts.registered) }
        break
      case 'registered':
        return { kind: 'go', step, location: facts.registered }
    }
  }
  return { kind: 'go', step: 'registered', location: facts.registered }
}

/**
 * The registered URL behind EZproxy: OCLC's starting point URL takes the target after `url=` as it is,
 * unencoded, to the end (so the config check wants {url} last). The registered URL is already a safe
 * Location (no control characters, an allowed scheme, encoded).
 */
export function ezproxyUrl(template: string, registered: string): string {
  // A function: a '$&' in the URL is text, not a replacement pattern.
  return template.replace('{url}', () => registered)
}

/** Longest open-access URL we redirect to: a provider's answer is not trusted to be sane. */
export const MAX_OPEN_ACCESS_URL = 2048

/**
 * A provider's URL as a Location, or undefined when it must not be one: the same checks as a record's
 * URL (behaviour.md §4: no control characters, encoded, Punycode host), but http(s) only, with a host,
 * and bounded in length.
 */
export function openAccessLocation(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw.length > MAX_OPEN_ACCESS_URL) return undefined
  const location = locationFor(raw, undefined, ['http', 'https'])
  // An authority right after the scheme: browsers forgive 'https:///host' and 'https:\\host', we do not.
  if (location === undefined || !/^https?:\/\/[^/\\?#]/i.test(location)) return undefined
  let url: URL
  try {
    url = new URL(location)
  } catch {
    return undefined
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return undefined
  return location
}

/** `?linkout=registered`: the reader asks for the registered URL, past the chain. */
export function bypassesChain(all: ReadonlyMap<string, readonly string[]>): boolean {
  return all.get('linkout')?.some((v) => v.toLowerCase() === 'registered') === true
}
