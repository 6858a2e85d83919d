import { randomUUID } from 'node:crypto'
import Fastify, { LogController } from 'fastify'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import cors from '@fastify/cors'
import type { Dispatcher } from 'undici'
import { LRUCache } from 'lru-cache'
import { cacheKey } from './handle/name.js'
import type { Config } from './config/schema.js'
import { upstreamUserAgent } from './config/schema.js'
import { createMetrics } from './metrics.js'
import { createRecordCache } from './resolve/cache.js'
import { setUpCacheTiers } from './cache-tiers.js'
import { createUpstreamClient } from './resolve/upstream.js'
import { guardUpstream } from './resolve/guard.js'
import { createFairQueue } from './resolve/fair-queue.js'
import { openCountryLookup } from './resolve/geoip.js'
import { openLocalStore } from './resolve/local-store.js'
import { registerAdmission } from './http/admission.js'
import { createResolver } from './resolve/resolver.js'
import { createProxyService } from './resolve/proxy-service.js'
import { registerOpsRoutes } from './http/routes/ops.js'
import type { Lifecycle } from './http/routes/ops.js'
import { registerStaticRoutes } from './http/routes/static.js'
import { proxyHandler, registerProxyRoutes } from './http/routes/proxy.js'
import { apiHandler, registerApiRoutes, sendApiError } from './http/routes/api.js'
import { registerRaRoutes } from './http/routes/ra.js'
import { createLocalServices } from './http/local-service.js'
import { createMetadataAnswers } from './http/metadata.js'
import { registerOpenUrlRoutes } from './http/routes/openurl.js'
import { registerSettingsRoutes } from './http/routes/settings.js'
import { registerStatusRoutes } from './http/routes/status.js'
import { baseUrlFor } from './http/base-url.js'
import { describeError, logError, sendHtmlError, setRetryAfter } from './http/errors.js'
import { renderErrorPage } from './http/views/pages.js'
import { createLogThrottle } from './log-throttle.js'
import { STATUS_CODES, createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createHotPath } from './http/hot-path.js'
import { CORS_HEADERS, EXPOSED_HEADERS } from './http/prepared-answers.js'
import type { Socket } from 'node:net'

/** What buildApp may be given instead of building it itself; tests pass real objects here, never mocks. */
export interface AppDeps {
  /** A pino logger (main.ts makes one); default: no logging. */
  logger?: FastifyBaseLogger
  /** An undici dispatcher for the upstream; default: a bounded Pool to UPSTREAM_URL's origin. */
  upstreamDispatcher?: Dispatcher
  /** Clock in epoch ms; default Date.now. */
  now?: () => number
  /** Random source in [0,1) for 10320/loc weighted choice; default Math.random. */
  random?: () => number
}

const REQUEST_ID_PREFIX = randomUUID().slice(0, 8)
let requestCounter = 0

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: Lifecycle
  }
}

/**
 * Start draining: /readyz answers 503 so load balancers stop sending traffic, while requests
 * are still served (with `Connection: close`). main.ts calls this on SIGTERM, waits, then closes.
 */
export function beginDrain (app: FastifyInstance): void {
  app.lifecycle.ready = false
}

/** Build the whole service, ready to `listen` or `inject`. Reads no environment, installs no signal handler. */
export async function buildApp (config: Config, deps: AppDeps = {}): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now
  const app = Fastify({
    ...(deps.logger === undefined ? { logger: false } : { loggerInstance: deps.logger }),
    requestIdHeader: 'x-request-id',
    // Fastify's own two lines per request are replaced by one of ours, and only when asked for.
    logController: new LogController({ disableRequestLogging: true }),
    // A random prefix per process and a counter: unique, and cheaper than a UUID per request.
    genReqId: () => `${REQUEST_ID_PREFIX}-${(++requestCounter).toString(36)}`,
    trustProxy: trustProxyOf(config.trustProxy),
    // Explicit server limits; never a library's default.
    connectionTimeout: config.requestTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    bodyLimit: 16 * 1024,
    http: { maxHeaderSize: config.maxHeaderBytes },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A handle is taken from the raw path: the router must not rewrite it (behaviour.md §2.5).
    routerOptions: {
      ignoreTrailingSlash: false,
      ignoreDuplicateSlashes: false,
      useSemicolonDelimiter: false,
      maxParamLength: 65_536
    } as FastifyServerOptions['routerOptions'],
    // The router refuses paths it cannot decode; a DOI path is ours to judge (behaviour.md §2.2).
    frameworkErrors: (err, request, reply) => {
      if (err.code === 'FST_ERR_BAD_URL' && ['GET', 'HEAD', 'POST'].includes(request.method)) {
        reply.headers(CORS_HEADERS)
        return routeBadUrl(request, reply)
      }
      return (reply as FastifyReply).send(err)
    },
    // A request line or headers too large for us, or a request Node cannot parse: our HTML page, not a JSON one.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket, config),
    // Our own server, as Fastify would make it, with the hot path in front of Fastify's routing.
    serverFactory: (handler) => createHttpServer(config, (req, res) => {
      if (hotPath?.(req, res) !== true) handler(req, res)
    })
  })
  // Set once the cache and resolver exist; until then (and when it is off) every request goes to Fastify.
  let hotPath: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined
  let routeBadUrl: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> =
    async (_request, reply) => reply.code(400).send()

  if (config.logRequests) {
    app.addHook('onResponse', async (request, reply) => {
      request.log.info({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10, ip: request.ip }, 'request')
    })
  }

  const lifecycle: Lifecycle = { ready: false }
  app.decorate('lifecycle', lifecycle)
  app.addHook('onReady', async () => { lifecycle.ready = true })
  app.addHook('preClose', async () => { lifecycle.ready = false })
  // While draining, answers close their connection so shutdown does not wait for keep-alive timeouts.
  // Callback style: no promise per request on the hot path.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!lifecycle.ready) reply.header('connection', 'close')
    done(null, payload)
  })

  const metrics = createMetrics()
  const rawUpstream = createUpstreamClient({
    baseUrl: config.upstreamUrl,
    userAgent: upstreamUserAgent(config),
    timeoutMs: config.upstreamTimeoutMs,
    connectTimeoutMs: config.upstreamConnectTimeoutMs,
    connections: config.upstreamConnections,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    retry: {
      retries: config.upstreamRetries,
      baseMs: config.upstreamRetryBaseMs,
      maxMs: config.upstreamRetryMaxMs,
      onRetry: (handle, attempt, reason) => {
        metrics.upstreamRetries.inc()
        app.log.info({ handle, attempt, reason }, 'retrying the upstream')
      }
    },
    ...(deps.upstreamDispatcher === undefined ? {} : { dispatcher: deps.upstreamDispatcher })
  })
  const BREAKER_LEVEL = { closed: 0, 'half-open': 1, open: 2 } as const
  const queue = createFairQueue({
    maxActive: config.upstreamMaxConcurrent,
    perClient: config.upstreamPerClient,
    perClientQueue: config.upstreamClientQueue,
    maxWaiting: config.upstreamQueueSize,
    waitTimeoutMs: config.upstreamQueueTimeoutMs,
    retryAfterMs: 5000,
    onChange: (waiting, active) => {
      metrics.upstreamWaiting.set(waiting)
      metrics.upstreamActive.set(active)
    },
    onRefuse: (reason) => metrics.refusals.inc({ reason })
  })
  const upstream = guardUpstream(rawUpstream, {
    maxPrefixBreakers: 1024,
    breaker: {
      errorThresholdPercent: config.breakerErrorThresholdPercent,
      volumeThreshold: config.breakerVolumeThreshold,
      resetMs: config.breakerResetMs,
      windowMs: config.breakerWindowMs
    },
    onBreaker: (state) => {
      metrics.breakerOpen.set(BREAKER_LEVEL[state])
      app.log.warn({ state }, 'upstream circuit breaker changed state')
    },
    onPrefixBreaker: (prefix, state) => {
      if (state === 'open') metrics.prefixBreakerOpenings.inc()
      app.log.warn({ prefix, state }, 'circuit breaker of one prefix changed state')
    }
  })
  app.addHook('onClose', async () => { await upstream.close() })
  const cache = createRecordCache({
    maxEntries: config.cacheMaxEntries,
    maxBytes: config.cacheMaxBytes,
    maxStaleMs: config.maxStaleSeconds * 1000,
    maxFreshMs: Math.max(config.cacheMaxTtlSeconds, config.negativeTtlSeconds) * 1000
  })
  // The snapshot file and the shared tier in Redis (behaviour.md §11).
  const tiers = await setUpCacheTiers(app, config, { cache, metrics, now })
  const local = config.localStoreDir === undefined
    ? undefined
    : await openLocalStore({
      dir: config.localStoreDir,
      authoritativePrefixes: config.localAuthoritativePrefixes,
      watch: config.localStoreWatch,
      ...(config.localStorePollMs > 0 ? { poll: true, pollIntervalMs: config.localStorePollMs } : {}),
      log: app.log
    })
  if (local !== undefined) {
    app.addHook('onClose', async () => { await local.close() })
    metrics.observeLocalStore(() => local.stats().records)
  }
  const throttleStale = createLogThrottle(1000)
  const resolver = createResolver({
    upstream: config.offline ? undefined : tiers.wrap(upstream),
    queue,
    local,
    cache,
    metrics,
    now,
    maxTtlSeconds: config.cacheMaxTtlSeconds,
    minTtlSeconds: config.cacheMinTtlSeconds,
    negativeTtlSeconds: config.negativeTtlSeconds,
    maxStaleMs: config.maxStaleSeconds * 1000,
    refreshAhead: config.refreshAhead,
    onStale: (handle, err) => {
      metrics.staleServed.inc()
      throttleStale(err.code, (suppressed) => app.log.warn({ handle, code: err.code, suppressed }, 'upstream failed; serving a stale record'))
    },
    onRefreshError: (handle, err) => app.log.warn({ handle, err }, 'background refresh failed')
  })
  metrics.observeCache(() => ({ entries: cache.size, bytes: cache.bytes }))
  const reportedProblems = new LRUCache<string, true>({ max: 10_000 })
  const service = createProxyService({
    resolver,
    allowedSchemes: config.allowedSchemes,
    now,
    random: deps.random ?? Math.random,
    onLocationProblems: (handle, problems) => {
      // Once per record and set of problems, not once per request (issue 3: "log it once per record").
      const key = `${cacheKey(handle)}\u0000${problems.join('\u0000')}`
      if (reportedProblems.has(key)) return
      reportedProblems.set(key, true)
      app.log.warn({ handle, problems }, 'skipped broken 10320/loc data')
    }
  })

  const admission = await registerAdmission(app, config, metrics, tiers.redis)

  // CORS (behaviour.md §7): a simple request's two headers are the same on every answer, so one plain
  // hook sets them (a route may remove them, as /status does); @fastify/cors, registered in a context
  // of its own so its per-request hook sees only its OPTIONS route, answers preflight requests.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(CORS_HEADERS)
    done()
  })
  await app.register(async (preflight) => {
    await preflight.register(cors, { origin: '*', methods: ['GET', 'HEAD', 'POST'], exposedHeaders: EXPOSED_HEADERS, maxAge: 86_400 })
  })

  registerOpsRoutes(app, metrics, lifecycle)
  registerStatusRoutes(app, { metrics, config, now })
  registerStaticRoutes(app)
  // Self-links use this host when a request's Host header is unusable.
  const fallbackHost = `${config.host}:${config.port}`
  const proxyOptions = {
    service,
    resolver,
    admission,
    metrics,
    maxHandleLength: config.maxHandleLength,
    publicBaseUrl: config.publicBaseUrl,
    fallbackHost,
    countryHeader: config.countryHeader,
    countryLookup: config.geoipDatabase === undefined ? undefined : await openCountryLookup(config.geoipDatabase),
    // behaviour.md §10: only when a service is configured does a redirect ask about one.
    localServices: config.localServices.length === 0 ? undefined : createLocalServices({ services: config.localServices, metrics, now }),
    // docs/metadata.md: negotiated requests answered with stored or fetched metadata.
    metadata: createMetadataAnswers({ config, admission, stored: local === undefined ? undefined : (h: string) => local.metadata(h), userAgent: upstreamUserAgent(config), now }),
    // The hot path: off when each answer must be logged or may depend on who asks (a local service).
    prepareAnswers: !config.logRequests && config.localServices.length === 0
  }
  if (proxyOptions.prepareAnswers) {
    hotPath = createHotPath({
      resolver,
      metrics,
      maxHandleLength: config.maxHandleLength,
      publicBaseUrl: config.publicBaseUrl,
      hostFromHeader: config.trustProxy === false,
      fallbackHost,
      serving: () => lifecycle.ready,
      now
    })
  }
  app.addHook('onClose', async () => { await proxyOptions.metadata.close() })
  const apiOptions = { resolver, admission, maxHandleLength: config.maxHandleLength, prepareAnswers: proxyOptions.prepareAnswers }
  registerApiRoutes(app, apiOptions)
  registerRaRoutes(app, { resolver, admission, raNames: config.raNames, maxDois: config.raMaxDois, concurrency: config.raConcurrency })
  registerProxyRoutes(app, proxyOptions)
  registerOpenUrlRoutes(app, proxyOptions)
  registerSettingsRoutes(app, { services: config.localServices, publicBaseUrl: config.publicBaseUrl, fallbackHost })
  const proxyForBadUrl = proxyHandler(proxyOptions)
  const apiForBadUrl = apiHandler(apiOptions)
  routeBadUrl = async (request, reply) => (request.raw.url ?? '').startsWith('/api/handles/') ? apiForBadUrl(request, reply) : proxyForBadUrl(request, reply)

  app.setNotFoundHandler(async (request, reply) => {
    // Every GET, HEAD and POST path is a handle; only other methods end up here.
    reply.header('allow', 'GET, HEAD, POST, OPTIONS')
    const message = `The method ${request.method} is not supported here; use GET or HEAD.`
    if (isApiPath(request)) return sendApiError(reply, 405, message)
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    return reply.code(405).type('text/html; charset=utf-8').send(renderErrorPage(ctx, { status: 405, message }))
  })
  app.setErrorHandler(async (err, request, reply) => {
    logError(request, err)
    if (isApiPath(request)) {
      const { status, message } = describeError(err)
      setRetryAfter(reply, err)
      return sendApiError(reply, status, message)
    }
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    return sendHtmlError(reply, ctx, err)
  })

  return app
}

/**
 * TRUST_PROXY for Fastify. A hop count becomes "trust the first N hops" (proxy-addr's meaning), as a
 * function: Fastify 5 takes a plain number as trust nothing, failing closed, because a hop count
 * cannot check who the nearest peer is. That is why it is only for a server reachable through the proxy.
 */
function trustProxyOf (trust: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust
}

/** The HTTP server Fastify would make (lib/server.js), given our request listener; the same explicit limits. */
function createHttpServer (config: Config, listener: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer({ maxHeaderSize: config.maxHeaderBytes }, listener)
  server.keepAliveTimeout = config.keepAliveTimeoutMs
  server.requestTimeout = config.requestTimeoutMs
  server.setTimeout(config.requestTimeoutMs)
  return server
}

function isApiPath (request: FastifyRequest): boolean {
  return /^(?:[a-z][a-z0-9+.-]*:\/\/[^/]*)?\/api\//i.test(request.raw.url ?? '')
}

/**
 * Node could not read the request (a request line or headers over MAX_HEADER_BYTES, broken HTTP):
 * our own HTML page on the raw socket, then close, as Fastify's default does with JSON.
 */
function answerClientError (err: NodeJS.ErrnoException, socket: Socket, config: Config): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  const message = status === 431
    ? `The address or headers of this request are too long (the limit is ${config.maxHeaderBytes} bytes). A DOI name is at most ${config.maxHandleLength} characters; check that the link was copied whole and nothing else.`
    : status === 408 ? 'The request took too long to arrive.' : 'The request could not be read as HTTP.'
  const body = renderErrorPage({ baseUrl: config.publicBaseUrl === undefined ? '/' : `${config.publicBaseUrl}/` }, { status, message })
  // An answer to HEAD has no body, even when the rest of the request could not be read.
  const head = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD '
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\naccess-control-allow-origin: *\r\nconnection: close\r\n\r\n${head ? '' : body}`)
}
