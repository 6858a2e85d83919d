import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { encodeHandlePath, handleFromInput, handleFromPath, hasControlChar, splitRequestTarget } from '../../handle/name.js'
import { parseApiQuery } from '../../handle/api.js'
import { missStatus } from '../../handle/lookup-params.js'
import { parseProxyQuery } from '../../handle/query.js'
import type { ProxyParams } from '../../handle/query.js'
import type { ProxyOutcome, ProxyRequest, ProxyService } from '../../resolve/lookup/proxy-service.js'
import type { Resolver } from '../../resolve/lookup/resolver.js'
import type { AnsweredFrom, Metrics, Resolution, Tally } from '../../observe/metrics.js'
import type { CountryLookup } from '../../resolve/lookup/geoip.js'
import type { Admission } from '../admission.js'
import { baseUrlFor } from '../base-url.js'
import { RequestError, describeError, errorsAbout } from '../errors.js'
import { acceptFormBodies } from '../form-body.js'
import type { RouteContext } from '../route-context.js'
import { renderHomePage, renderNoValuesPage, renderNotFoundPage, renderRedirectBody, renderValuesPage } from '../views/pages.js'
import type { PageContext } from '../views/pages.js'
import { answerApi } from './api.js'
import { sendDiversion } from '../local-service.js'
import type { LocalServices } from '../local-service.js'
import type { MetadataAnswers } from '../metadata.js'
import { negotiate, negotiationHeadersOf } from '../../handle/negotiate.js'
import type { AnswerKind, AnswerParts, PreparedAnswers } from '../prepared-answers.js'
import { httpDate, sendParts } from '../prepared-answers.js'
import { HTML, redirectParts, SAFE_HEADER_VALUE } from '../redirect-parts.js'

// No script, no style, no loads, and a sandbox: an XHTML namespace in a hostile record stays inert text.
const SHOWURLS_CSP = "default-src 'none'; sandbox"

export interface ProxyRouteOptions {
  service: ProxyService
  /** For `?action=api`, which answers the REST API's JSON. */
  resolver: Resolver
  admission: Admission
  metrics: Metrics
  maxHandleLength: number
  publicBaseUrl: string | undefined
  fallbackHost: string
  /** Request header holding the client's country (e.g. CF-IPCountry), for the 10320/loc country chooser. */
  countryHeader: string | undefined
  /** The optional GeoIP database, the last resort for the client's country. */
  countryLookup: CountryLookup | undefined
  /** The local services (behaviour.md §10), when any is configured. */
  localServices?: LocalServices | undefined
  /** Negotiated requests answered with metadata instead of a redirect (docs/metadata.md). */
  metadata?: MetadataAnswers | undefined
  /** Where an answer every plain request of its variant gets is kept (src/http/prepared-answers.ts). */
  prepared: PreparedAnswers
  /** OFFLINE=true: a DOI not found is one not in the local records, and its page says so. */
  offline?: boolean
}

/** The HTML proxy: `/{handle}` → redirect, values page, showurls XML or an error page; `/` → the home page. */
/** The settings the proxy reads (and /openurl, answered as the proxy). */
export type ProxySettings = 'maxHandleLength' | 'publicBaseUrl' | 'countryHeader' | 'offline'

export default async function proxyRoutes(app: FastifyInstance, context: RouteContext<ProxySettings>): Promise<void> {
  const handler = proxyHandler(proxyOptions(context))
  app.get('/*', handler)
  // The reference's query form posts `hdl` to `/` (behaviour.md R1 step 5); a form body is read as text.
  acceptFormBodies(app)
  app.post('/*', handler)
}

/** The proxy's options, read from the app's context: for its routes, /openurl's, and app.ts' handler of paths the router cannot decode. */
export function proxyOptions({ config, services }: RouteContext<ProxySettings>): ProxyRouteOptions {
  return {
    service: services.proxyService,
    resolver: services.resolver,
    admission: services.admission,
    metrics: services.metrics,
    maxHandleLength: config.maxHandleLength,
    publicBaseUrl: config.publicBaseUrl,
    fallbackHost: services.fallbackHost,
    countryHeader: config.countryHeader,
    countryLookup: services.countryLookup,
    localServices: services.localServices,
    metadata: services.metadata,
    prepared: services.prepared,
    offline: config.offline
  }
}

/**
 * The handler itself, exported because the router refuses some raw paths (a lone '%', invalid
 * UTF-8) before routing; app.ts sends those here so they get our own answer (behaviour.md §2.2).
 */
export function proxyHandler(opts: ProxyRouteOptions) {
  const answer = proxyAnswer(opts)
  const { count } = answer
  return async function handleProxyRequest(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const ctx = lazyPageContext(request, opts)
    const { path, query: urlQuery, fragment } = splitRequestTarget(request.raw.url ?? '/')
    const post = request.method === 'POST'
    const form = post ? formOf(request.body) : undefined
    // POST: the form's fields join the query, and its `hdl` replaces the path's handle.
    const query = form === undefined ? urlQuery : [urlQuery, form.query].filter((q) => q !== '').join('&')
    const parsed =
      form?.hdl !== undefined
        ? handleFromPath(`/${encodeHandlePath(form.hdl)}`, { maxLength: opts.maxHandleLength })
        : handleFromPath(path, { maxLength: opts.maxHandleLength })
    if (!parsed.ok) {
      count('bad_request')
      throw new RequestError(parsed.status, parsed.message)
    }
    const params = parseProxyQuery(query, fragment)
    if (parsed.handle === '') {
      if (post) throw new RequestError(400, 'Type a DOI name in the form to look it up.')
      return home(reply, ctx, query)
    }
    return await answer(request, reply, ctx, { handle: parsed.handle, query, params, post })
  }
}

/**
 * The answer for one handle and its query, whichever route took the request (`/{doi}`, the form posted
 * to `/`, `/openurl`): limits, resolution, the local service and the page all happen here.
 */
export function proxyAnswer(opts: ProxyRouteOptions) {
  // Every tally bound once (RESOLUTIONS × where the record came from): the answer only increments one.
  const counters = new Map<string, Tally>()
  const count = (outcome: Resolution, from: AnsweredFrom = 'miss'): void => {
    const key = `${outcome}|${from}`
    let tally = counters.get(key)
    if (tally === undefined) counters.set(key, (tally = opts.metrics.answer(outcome, from)))
    tally.inc()
  }
  const { localServices } = opts
  async function answerHandle(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: PageContext,
    asked: { handle: string; query: string; params: ProxyParams; post: boolean }
  ): Promise<FastifyReply> {
    const { handle, query, params, post } = asked
    // Its errors are rendered by the one error handler (src/plugins/error-pages.ts), about this handle.
    errorsAbout(request, { handle })
    if (params.urlappend !== undefined && hasControlChar(params.urlappend)) {
      count('bad_request')
      throw new RequestError(400, 'The urlappend parameter contains a control character.', handle)
    }
    // action=api answers the REST API's JSON for the handle (behaviour.md R4), errors included.
    if (params.action === 'api') {
      errorsAbout(request, { format: 'handle-api' })
      return await answerApi(request, reply, handle, parseApiQuery(query), opts)
    }
    // Only upstream-bound work passes the limits (behaviour.md §9): cached answers never do.
    const req: ProxyRequest = {
      handle,
      params,
      post,
      client: clientOf(request, opts, params),
      admit: opts.admission.gate(request, reply, params.bypassCache)
    }
    try {
      const outcome = await opts.service.answer(req)
      count(outcomeLabel(outcome), outcome.from)
      if (outcome.kind === 'redirect' && outcome.negotiated && opts.metadata !== undefined) {
        const answered = await opts.metadata.answer(request, reply, outcome, req)
        if (answered !== undefined) return answered
      }
      if (outcome.kind === 'redirect' && localServices !== undefined) {
        const diversion = await localServices.divert(
          request,
          { handle: outcome.handle, negotiated: outcome.negotiated, params, location: outcome.location },
          () => ctx.baseUrl
        )
        if (diversion.kind === 'divert') {
          return sendDiversion(reply.header('x-cache', outcome.cache), diversion.location, renderRedirectBody(diversion.location))
        }
        // Whether a reader is diverted depends on who asks (network, cookie), so no shared cache may give
        // this answer to another reader, and a browser asks again once its cookie changes (behaviour.md §10).
        reply.header('cache-control', 'private').header('vary', outcome.vary ? 'Accept, Cookie' : 'Cookie')
        return sendParts(reply, redirectParts({ ...outcome, vary: false }), outcome.cache, outcome.expires)
      }
      if (outcome.kind === 'redirect' || outcome.kind === 'not-found' || outcome.kind === 'values') {
        const parts =
          outcome.kind === 'redirect'
            ? redirectParts(outcome)
            : outcome.kind === 'values'
              ? valuesParts(ctx, outcome)
              : notFoundParts(ctx, outcome, opts.offline === true)
        // What every plain request of its variant gets is kept (the door decides which requests are plain).
        opts.prepared.keep(request, answerKind(outcome), outcome.reuse, parts, outcome.kind === 'redirect' ? undefined : ctx.baseUrl)
        return sendParts(reply, parts, outcome.cache, outcome.kind === 'redirect' ? outcome.expires : undefined)
      }
      return render(reply, ctx, outcome, query)
    } catch (err) {
      count(describeError(err).status >= 500 ? 'upstream_error' : 'bad_request')
      reply.header('x-cache', missStatus(params))
      throw err
    }
  }
  return Object.assign(answerHandle, { count })
}

/** A POSTed form: its `hdl` (browser form encoding: '+' is a space) and its other fields as a query string. */
function formOf(body: unknown): { hdl: string | undefined; query: string } {
  const fields = new URLSearchParams(typeof body === 'string' ? body : '')
  const hdl = fields.get('hdl') ?? undefined
  fields.delete('hdl')
  // Re-encoded for the proxy's query parser, which keeps '+' as '+'.
  const query = [...fields]
    .map(([k, v]) => (v === '' ? encodeURIComponent(k) : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`))
    .join('&')
  return { hdl, query }
}

/** Pages need our base URL; a redirect does not, so it is worked out only when asked for. */
export function lazyPageContext(request: FastifyRequest, opts: Pick<ProxyRouteOptions, 'publicBaseUrl' | 'fallbackHost'>): PageContext {
  let base: string | undefined
  return {
    get baseUrl() {
      base ??= baseUrlFor(request, opts.publicBaseUrl, opts.fallbackHost)
      return base
    }
  }
}

/** `/` shows the home page; its form sends `/?hdl=X&…`, which we turn into the shareable `/X?…`. */
function home(reply: FastifyReply, ctx: PageContext, rawQuery: string): FastifyReply {
  // The form's answer is browser form encoding: '+' is a space there, and a typed '+' arrives as %2B.
  const form = new URLSearchParams(rawQuery)
  const hdl = form.get('hdl')?.trim() ?? ''
  if (hdl === '') return reply.type(HTML).send(renderHomePage(ctx))
  const rest: string[] = []
  for (const [key, v] of form) {
    if (key !== 'hdl') rest.push(v === '' ? encodeURIComponent(key) : `${encodeURIComponent(key)}=${encodeURIComponent(v)}`)
  }
  // A pasted `https://doi.org/…` or `doi:…` goes to the DOI's own URL (behaviour.md §2.4).
  const target = `${ctx.baseUrl}${encodeHandlePath(handleFromInput(hdl))}${rest.length > 0 ? `?${rest.join('&')}` : ''}`
  return reply.code(302).header('location', target).type(HTML).send(renderRedirectBody(target))
}

/** behaviour.md R2 HS_ALIAS: a 301 to our own URL of the target, the original query kept, no body. */
function aliasLocation(ctx: PageContext, target: string, rawQuery: string): string {
  return `${ctx.baseUrl}${encodeHandlePath(target)}${rawQuery === '' ? '' : `?${rawQuery}`}`
}

/** The status this route answers for an outcome (an error page's comes with its error). */
function statusOf(outcome: ProxyOutcome): number {
  switch (outcome.kind) {
    case 'redirect':
      return outcome.status
    case 'alias':
      return 301
    case 'not-found':
      return 404
    case 'refused':
      return 400
    default:
      return 200
  }
}

/**
 * What a plain `GET /{doi}` (no query, no form, no local service) answers for an outcome: its status, and
 * the Location it redirects to, if any. The batch API (src/http/batch.ts) reports these for each line.
 */
export function plainAnswer(ctx: PageContext, outcome: ProxyOutcome): { status: number; location: string | null } {
  const location = outcome.kind === 'redirect' ? outcome.location : outcome.kind === 'alias' ? aliasLocation(ctx, outcome.target, '') : null
  return { status: statusOf(outcome), location }
}

/** The not-found page (its links use our base URL). */
function notFoundParts(ctx: PageContext, outcome: Extract<ProxyOutcome, { kind: 'not-found' }>, offline: boolean): AnswerParts {
  const body = renderNotFoundPage(
    ctx,
    outcome.handle,
    outcome.message === undefined ? { offline, absence: outcome.absence } : { message: outcome.message }
  )
  return { status: statusOf(outcome), headers: { 'content-type': HTML }, body }
}

/** The values page (its links use our base URL). */
function valuesParts(ctx: PageContext, outcome: Extract<ProxyOutcome, { kind: 'values' }>): AnswerParts {
  const headers: Record<string, string> = { 'content-type': HTML }
  if (outcome.vary) headers.vary = 'Accept'
  return { status: statusOf(outcome), headers, body: renderValuesPage(ctx, outcome.handle, outcome.values) }
}

/** The answers that are neither a redirect, the values page nor not found: aliases, showurls, refusals. */
function render(
  reply: FastifyReply,
  ctx: PageContext,
  outcome: Exclude<ProxyOutcome, { kind: 'redirect' | 'not-found' | 'values' }>,
  rawQuery: string
): FastifyReply {
  reply.header('x-cache', outcome.cache)
  switch (outcome.kind) {
    case 'alias': {
      const location = aliasLocation(ctx, outcome.target, rawQuery)
      if (!SAFE_HEADER_VALUE.test(location)) throw new RequestError(400, 'The query string cannot be carried over.', outcome.handle)
      return reply.code(statusOf(outcome)).header('location', location).header('expires', httpDate(outcome.expires)).send()
    }
    case 'no-values':
      return reply.type(HTML).send(renderNoValuesPage(ctx, outcome.handle))
    case 'showurls':
      if (outcome.vary) reply.header('vary', 'Accept')
      // The XML repeats the record's attributes as written (behaviour.md R3): a browser must never run it as a page.
      return reply
        .type('text/xml; charset=utf-8')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', SHOWURLS_CSP)
        .send(outcome.xml)
    case 'refused':
      throw new RequestError(400, outcome.message, outcome.handle)
  }
}

/** Which kind of prepared answer an outcome gives. */
function answerKind(outcome: Extract<ProxyOutcome, { kind: 'redirect' | 'values' | 'not-found' }>): AnswerKind {
  return outcome.kind === 'redirect' ? (outcome.negotiated ? 'negotiated-redirect' : 'redirect') : outcome.kind
}

function outcomeLabel(outcome: ProxyOutcome): Resolution {
  return outcome.kind === 'not-found'
    ? 'not_found'
    : outcome.kind === 'no-values'
      ? 'values'
      : outcome.kind === 'refused'
        ? 'bad_request'
        : outcome.kind
}

/** What negotiation and the 10320/loc choosers read from a request: the one place the proxy reads a client's headers. */
function clientOf(
  request: FastifyRequest,
  opts: Pick<ProxyRouteOptions, 'countryHeader' | 'countryLookup'>,
  params: Pick<ProxyParams, 'all'>
): ProxyRequest['client'] {
  const header = opts.countryHeader === undefined ? undefined : request.headers[opts.countryHeader.toLowerCase()]
  // Cloudflare sends XX for unknown and T1 for Tor: neither is a country.
  const fromHeader = typeof header === 'string' && /^[A-Za-z]{2}$/.test(header) && !/^(xx|t1)$/i.test(header) ? header : undefined
  return {
    negotiation: negotiate({ ...negotiationHeadersOf(request.headers), action: params.all.get('action')?.[0] }),
    address: request.ip,
    // The ?country= parameter wins over both (the service applies it).
    country: fromHeader ?? opts.countryLookup?.country(request.ip)
  }
}
