/** The JSON APIs: the Handle REST API (/api/handles/{doi}, /api/openapi.json) and Which RA? (/doiRA/{dois}, /ra/{dois}). */
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config/schema.js'
import { registerApiRoutes } from '../http/routes/api.js'
import type { ApiRouteOptions } from '../http/routes/api.js'
import { registerRaRoutes } from '../http/routes/ra.js'
import type { AppContext, Services } from '../services.js'

export default async function apiRoutes (app: FastifyInstance, { config, services }: AppContext): Promise<void> {
  registerApiRoutes(app, apiRouteOptions(config, services))
  registerRaRoutes(app, { resolver: services.resolver, admission: services.admission, raNames: config.raNames, maxDois: config.raMaxDois, concurrency: config.raConcurrency })
}

/** The REST API's options; app.ts gives them to the handler of paths the router cannot decode, too. */
export function apiRouteOptions (config: Config, services: Services): ApiRouteOptions {
  const { resolver, admission, prepared } = services
  return { resolver, admission, maxHandleLength: config.maxHandleLength, prepared, offline: config.offline }
}
