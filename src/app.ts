import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import Fastify, { LogController } from 'fastify'
import type { FastifyBaseLogger, FastifyHttpOptions, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import type { Config } from './config/schema.js'
import { CORS_HEADERS, isApiRecordPath } from './http/prepared-answers.js'
import type { RouteContext } from './http/route-context.js'
import apiRoutes, { apiHandler, apiOptions } from './http/routes/api.js'
import type { ApiSettings } from './http/routes/api.js'
import cacheRoutes from './http/routes/cache.js'
import batchRoutes from './http/routes/batch.js'
import openUrlRoutes from './http/routes/openurl.js'
import opsRoutes from './http/routes/ops.js'
import proxyRoutes, { proxyHandler, proxyOptions } from './http/routes/proxy.js'
import type { ProxySettings } from './http/routes/proxy.js'
import raRoutes from './http/routes/ra.js'
import settingsRoutes from './http/routes/settings.js'
import staticRoutes from './http/routes/static.js'
import statusRoutes from './http/routes/status.js'
import healthRoutes from './http/routes/health.js'
import { answerClientError, createHttpServer } from './http/server-edge.js'
import admission from './plugins/admission.js'
import cors from './plugins/cors.js'
import errorPages from './plugins/error-pages.js'
import preparedAnswers from './plugins/prepared-answers.js'
import lifecycle from './plugins/lifecycle.js'
import requestLog from './plugins/request-log.js'
import { createServices } from './services.js'
import type { ServiceDeps, Services } from './services.js'

/** What buildApp may be given instead of building it itself (the services' own, and the logger); tests pass real objects here, never mocks. */
export interface AppDeps extends ServiceDeps {
  /** A pino logger (main.ts makes one); default: no logging. */
  logger?: FastifyBaseLogger
  /** Told the object graph once built (tests drive `services.health` with it); nothing is replaced. */
  onServices?: (services: Services) => void
}

/**
 * Start draining: /readyz answers 503 so load balancers stop sending traffic, while requests
 * are still served (with `Connection: close`). main.ts calls this on SIGTERM, waits, then closes.
 */
export function beginDrain(app: FastifyInstance): void {
  app.lifecycle.ready = false
}

/** Build the whole service, ready to `listen` or `inject`. Reads no environment, installs no signal handler. */
export async function buildApp(config: Config, deps: AppDeps = {}): Promise<FastifyInstance> {
  const late: LateRoutes = { badUrl: async (_request, reply) => reply.code(400).send() }
  const app = Fastify(serverOptions(config, deps, late))

  // Every plugin and hook of the app, in this order. The root's hooks come first, so that they run before
  // any plugin's own (a hook added later reaches a plugin, but last); the error handler comes before the
  // routes, which take the one in place when they are registered.
  if (config.logRequests) await app.register(requestLog) // LOG_REQUESTS: one log line per answer, of every route
  await app.register(lifecycle) // app.lifecycle: ready once loaded, not once closing; answers close their connection while draining
  // The object graph (upstream client, fair queue, breakers, cache and tiers, local store, resolver, proxy
  // service, admission gate); it registers nothing itself.
  const { services, hooks } = await createServices(config, deps, { log: app.log, lifecycle: app.lifecycle })
  const context = { config, services }
  deps.onServices?.(services)
  app.addHook('onReady', hooks.onReady) // the status page's collector starts reading the counters (once a second; stopped by onClose)
  app.addHook('onListen', hooks.onListen) // one request says whether the upstream answers (not offline; not without listen)
  app.addHook('preClose', hooks.preClose) // the cache snapshot written as closing begins, not after requests drain
  app.addHook('onClose', hooks.onClose) // upstream, Redis, local store, recorder, open access, metadata, status collector: the last opened closed first
  await app.register(admission, context) // under-pressure and rate-limit on the root, which the gate asks; before the routes
  await app.register(preparedAnswers, context) // a cached DOI's kept answer, written by our server before routing
  await app.register(cors) // CORS headers on every answer (one onRequest hook); preflight requests answered by @fastify/cors
  await app.register(errorPages, context) // the one error handler, and 405 for other methods: the root's, for every route

  // The routes, each file its own encapsulated plugin; the router picks one by its path, not by this order.
  await app.register(opsRoutes, context) // /healthz, /readyz, /metrics
  await app.register(statusRoutes, context) // /status, /status.json (operators' networks only)
  await app.register(healthRoutes, context) // /health, /health.json, /health.csv (the same networks; 404 with health off)
  await app.register(staticRoutes) // /robots.txt, /favicon.ico
  await app.register(apiRoutes, context) // /api/handles/{doi}, /api/openapi.json, other /api/ paths
  await app.register(cacheRoutes, context) // DELETE /api/cache/{doi}, with ADMIN_TOKEN
  await app.register(raRoutes, context) // /doiRA/{dois}, /ra/{dois}
  await app.register(batchRoutes, context) // POST /api/batch, with its own body parsers and limits
  await app.register(proxyRoutes, context) // /{doi}, and / with the query form posted to it (a form parser)
  await app.register(openUrlRoutes, context) // /openurl, answered as /{doi} (the same form parser)
  await app.register(settingsRoutes, context) // /settings, /settings/set (the same form parser)

  // Paths the router refuses to decode go to the proxy's or the REST API's handler (frameworkErrors).
  late.badUrl = badUrlRoute(app, context)
  return app
}

/** What the server answers outside Fastify's routing; set once the services exist. */
interface LateRoutes {
  /** A GET, HEAD or POST path the router refused to decode. */
  badUrl: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>
}

const REQUEST_ID_PREFIX = randomUUID().slice(0, 8)
let requestCounter = 0

/** Fastify's options: logging, request ids, proxies, explicit limits, the router, and our own server with the hot path. */
function serverOptions(config: Config, deps: AppDeps, late: LateRoutes): FastifyHttpOptions<Server> {
  return {
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
        return late.badUrl(request, reply)
      }
      return (reply as FastifyReply).send(err)
    },
    // A request line or headers too large or too slow, or a request Node cannot parse: our HTML page, not a JSON one.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket, config),
    // Our own server, as Fastify would make it, with room for a door in front of Fastify's routing.
    serverFactory: (handler) => createHttpServer(config, handler)
  }
}

/** A path the router refused to decode (a lone '%', invalid UTF-8), answered by the route that owns it. */
function badUrlRoute(app: FastifyInstance, context: RouteContext<ProxySettings | ApiSettings>): LateRoutes['badUrl'] {
  const proxy = proxyHandler(proxyOptions(context))
  const api = apiHandler(apiOptions(context))
  return async (request, reply) => {
    const isApi = isApiRecordPath(request.raw.url ?? '')
    try {
      return await (isApi ? api(request, reply) : proxy(request, reply))
    } catch (err) {
      // No route took it, so Fastify would not give its errors to ours: handed to the one error handler here.
      await app.errorHandler(err as Error, request, reply)
      return reply
    }
  }
}

/**
 * TRUST_PROXY for Fastify. A hop count becomes "trust the first N hops" (proxy-addr's meaning), as a
 * function: Fastify 5 takes a plain number as trust nothing, failing closed, because a hop count
 * cannot check who the nearest peer is. That is why it is only for a server reachable through the proxy.
 */
function trustProxyOf(trust: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust
}
