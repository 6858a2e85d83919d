/**
 * The local service ("appropriate copy", behaviour.md §10, R10): a library's readers are sent to the
 * library's own link resolver instead of the publisher, by their network or by their choice (the
 * doi_proxy_ls cookie). Only redirect answers are ever diverted; the proxy route asks here after the
 * DOI is resolved, and only when at least one service is configured (the hot path pays nothing else).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { parse as parseCookie, serialize as serializeCookie } from 'cookie'
import { LRUCache } from 'lru-cache'
import type { LocalServiceConfig } from '../config/local-services.js'
import { bypassesChain, chooseLinkout } from '../handle/linkout.js'
import type { LinkoutFacts, LinkoutStep, OpenAccessAnswer } from '../handle/linkout.js'
import { cacheKey, encodeHandlePath, prefixOf } from '../handle/name.js'
import type { ProxyParams } from '../handle/query.js'
import type { Metrics } from '../observe/metrics.js'
import { clientKey, networkMatcher } from './client.js'

export const COOKIE_NAME = 'doi_proxy_ls'
/** The cookie value that turns the local service off for a reader, even inside a service's networks. */
export const NO_SERVICE = 'none'
const ONE_YEAR_SECONDS = 365 * 24 * 3600
/** The same client is not diverted to the same DOI twice within this long (behaviour.md §10). */
export const LOOP_GUARD_MS = 10_000
/** Most (client, DOI) pairs the loop guard remembers at once; the oldest are forgotten first. */
const LOOP_GUARD_ENTRIES = 50_000

export interface LocalServiceOptions {
  services: readonly LocalServiceConfig[]
  metrics: Metrics
  /** The app's clock (epoch ms), so tests can move time for the loop guard. */
  now: () => number
  loopGuardMs?: number
  /** The open-access source of the chains' "open-access" step; undefined: that step finds nothing. */
  openAccess?: { find: (doi: string) => Promise<OpenAccessAnswer> } | undefined
}

/** Why a redirect was diverted, or why not. */
export type Diversion =
  | {
      kind: 'divert'
      service: LocalServiceConfig
      reason: 'network' | 'cookie'
      location: string
      step: Exclude<LinkoutStep, 'registered'>
    }
  | { kind: 'keep' }

export interface RedirectFacts {
  /** The DOI the redirect is for (after aliases). */
  handle: string
  /** The chosen location answers content negotiation: never diverted. */
  negotiated: boolean
  params: ProxyParams
  /** The redirect's Location: the registered URL, for a chain's "registered" and "ezproxy" steps. */
  location: string
}

export type LocalServices = ReturnType<typeof createLocalServices>

type Chosen = { service: LocalServiceConfig; reason: 'network' | 'cookie' }
type RecentlyDiverted = LRUCache<string, true>

export function createLocalServices(opts: LocalServiceOptions) {
  const { metrics } = opts
  const byId = new Map(opts.services.map((s) => [s.id, s]))
  const choose = serviceChooser(opts.services, byId, metrics)
  // Bounded, with a TTL on the app's clock (ttlResolution 0: read the clock on every check).
  const recentlyDiverted: RecentlyDiverted = new LRUCache<string, true>({
    max: LOOP_GUARD_ENTRIES,
    ttl: opts.loopGuardMs ?? LOOP_GUARD_MS,
    ttlResolution: 0,
    perf: { now: opts.now }
  })
  // To the service's own URL (its template filled in), remembered by the loop guard.
  const divertToService = (chosen: Chosen, facts: RedirectFacts, guardKey: string, baseUrl: () => string): Diversion => {
    const location = fillTemplate(chosen.service.url as string, facts.handle, baseUrl())
    recentlyDiverted.set(guardKey, true)
    metrics.localServiceDiversions.inc({ service: chosen.service.id, reason: chosen.reason })
    return { kind: 'divert', service: chosen.service, reason: chosen.reason, location, step: 'service' }
  }
  const followChain = chainFollower(opts, recentlyDiverted, divertToService)

  return {
    services: opts.services,
    byId,

    /**
     * For a redirect answer: where the reader goes instead, or keep the redirect. Never for a
     * negotiated answer, noredirect, or an action other than redirect (behaviour.md §10). A service
     * with a `linkout` chain answers by its chain; one without, by its URL, as always.
     */
    async divert(request: FastifyRequest, facts: RedirectFacts, baseUrl: () => string): Promise<Diversion> {
      const action = facts.params.all.get('action')?.[0]
      if (facts.negotiated || facts.params.noredirect || (action !== undefined && action.toLowerCase() !== 'redirect')) {
        return { kind: 'keep' }
      }
      const chosen = choose(request, facts)
      if (chosen === undefined) return { kind: 'keep' }
      if (chosen.service.linkout !== undefined) return await followChain(request, facts, chosen, baseUrl)
      // A link resolver that sends the reader back without nols must not make a loop.
      const guardKey = guardKeyOf(request, facts)
      if (recentlyDiverted.has(guardKey)) {
        metrics.localServiceLoopGuard.inc()
        return { kind: 'keep' }
      }
      return divertToService(chosen, facts, guardKey, baseUrl)
    }
  }
}

/** The service for this reader and DOI, and why, by nols, the cookie, then the networks; undefined when none applies. */
function serviceChooser(configured: readonly LocalServiceConfig[], byId: ReadonlyMap<string, LocalServiceConfig>, metrics: Metrics) {
  const services = configured.map((service) => ({
    service,
    inNetworks: networkMatcher(service.networks),
    prefixes: new Set(service.prefixes.map(cacheKey))
  }))
  const bypassed = { nols: metrics.localServiceBypasses.labels('nols'), cookie_none: metrics.localServiceBypasses.labels('cookie_none') }
  return function choose(request: FastifyRequest, facts: RedirectFacts): Chosen | undefined {
    if (facts.params.nols) {
      bypassed.nols.inc()
      return undefined
    }
    const header = request.headers.cookie
    if (header !== undefined && header.includes(COOKIE_NAME)) {
      const chosen = parseCookie(header)[COOKIE_NAME]
      if (chosen === NO_SERVICE) {
        bypassed.cookie_none.inc()
        return undefined
      }
      const service = chosen === undefined ? undefined : byId.get(chosen)
      if (service !== undefined) return { service, reason: 'cookie' }
    }
    const prefix = cacheKey(prefixOf(facts.handle))
    for (const s of services) {
      if (s.inNetworks(request.ip) && (s.prefixes.size === 0 || s.prefixes.has(prefix))) return { service: s.service, reason: 'network' }
    }
    return undefined
  }
}

/** The loop guard's key: this client and this DOI. */
function guardKeyOf(request: FastifyRequest, facts: RedirectFacts): string {
  return `${clientKey(request.ip)}\u0000${cacheKey(facts.handle)}`
}

/**
 * The service's chain (src/handle/linkout.ts): its steps in order until one gives a URL. The
 * service step is held back by the loop guard as a plain service is; the open-access source is
 * asked only when the chain reaches it, and never makes the reader wait past OA_BUDGET_MS.
 */
function chainFollower(
  opts: LocalServiceOptions,
  recentlyDiverted: RecentlyDiverted,
  divertToService: (chosen: Chosen, facts: RedirectFacts, guardKey: string, baseUrl: () => string) => Diversion
) {
  const { metrics } = opts
  const bypassed = metrics.localServiceBypasses.labels('linkout_registered')
  const counts = {
    openAccess: {
      found: metrics.linkout.labels('open-access', 'found'),
      none: metrics.linkout.labels('open-access', 'missed'),
      late: metrics.linkout.labels('open-access', 'timed_out'),
      unavailable: metrics.linkout.labels('open-access', 'unavailable')
    },
    taken: {
      service: metrics.linkout.labels('service', 'taken'),
      ezproxy: metrics.linkout.labels('ezproxy', 'taken'),
      registered: metrics.linkout.labels('registered', 'taken')
    }
  }
  return async function followChain(
    request: FastifyRequest,
    facts: RedirectFacts,
    chosen: Chosen,
    baseUrl: () => string
  ): Promise<Diversion> {
    const { service } = chosen
    const steps = service.linkout ?? []
    if (bypassesChain(facts.params.all)) {
      bypassed.inc()
      return { kind: 'keep' }
    }
    const guardKey = guardKeyOf(request, facts)
    const guarded = service.url !== undefined && steps.includes('service') && recentlyDiverted.has(guardKey)
    if (guarded) metrics.localServiceLoopGuard.inc()
    const linkout: LinkoutFacts = {
      steps,
      registered: facts.location,
      service: service.url === undefined || guarded ? undefined : service.url,
      ezproxy: service.ezproxy,
      openAccess: undefined
    }
    let choice = chooseLinkout(linkout)
    if (choice.kind === 'ask-open-access') {
      linkout.openAccess = opts.openAccess === undefined ? { kind: 'unavailable' } : await opts.openAccess.find(facts.handle)
      counts.openAccess[linkout.openAccess.kind].inc()
      choice = chooseLinkout(linkout)
    }
    if (choice.kind !== 'go') return { kind: 'keep' } // never: the second answer always goes
    if (choice.step !== 'open-access') counts.taken[choice.step].inc()
    if (choice.step === 'registered') return { kind: 'keep' }
    if (choice.step === 'service') return divertToService(chosen, facts, guardKey, baseUrl)
    metrics.localServiceDiversions.inc({ service: service.id, reason: chosen.reason })
    return { kind: 'divert', service, reason: chosen.reason, location: choice.location, step: choice.step }
  }
}

/**
 * The template filled in: {doi} is the DOI as a query value, {return} our own absolute URL for the DOI
 * with nols=y (so the reader can come back to the publisher's copy), as a query value.
 */
export function fillTemplate(template: string, handle: string, baseUrl: string): string {
  const returnUrl = `${baseUrl}${encodeHandlePath(handle)}?nols=y`
  return template.replace(/\{doi\}|\{return\}/g, (placeholder) => queryValue(placeholder === '{doi}' ? handle : returnUrl))
}

/** Every character but RFC 3986's unreserved ones as UTF-8 %XX; a lone surrogate as U+FFFD. */
function queryValue(s: string): string {
  return encodeURIComponent(s.replace(LONE_SURROGATE, '\ufffd')).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`
  )
}
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** The diversion itself: a 302 no cache may keep, since it depends on who asks. */
export function sendDiversion(reply: FastifyReply, location: string, body: string): FastifyReply {
  return reply
    .code(302)
    .header('location', location)
    .header('cache-control', 'private, no-store')
    .type('text/html; charset=utf-8')
    .send(body)
}

/** Set-Cookie for a reader's choice: an id, `none`, or undefined to forget it (automatic). */
export function choiceCookie(value: string | undefined, opts: { secure: boolean; crossSite?: boolean }): string {
  // A cookie set from an <img> on the library's own site is a cross-site response: browsers keep it only
  // with SameSite=None (and Secure), and then only if they allow third-party cookies at all.
  const sameSite = opts.crossSite === true && opts.secure ? 'none' : 'lax'
  if (value === undefined) {
    return serializeCookie(COOKIE_NAME, '', { path: '/', maxAge: 0, expires: new Date(0), httpOnly: true, sameSite, secure: opts.secure })
  }
  return serializeCookie(COOKIE_NAME, value, { path: '/', maxAge: ONE_YEAR_SECONDS, httpOnly: true, sameSite, secure: opts.secure })
}

/** The reader's saved choice: a configured id, `none`, or undefined (automatic, or an id no longer configured). */
export function savedChoice(request: FastifyRequest, byId: ReadonlyMap<string, LocalServiceConfig>): string | undefined {
  const header = request.headers.cookie
  if (header === undefined || !header.includes(COOKIE_NAME)) return undefined
  const value = parseCookie(header)[COOKIE_NAME]
  return value === NO_SERVICE || (value !== undefined && byId.has(value)) ? value : undefined
}
