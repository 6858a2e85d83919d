/** The resolver's pages: /{doi} and the form posted to /, /openurl, and the reader's choice of local service at /settings. */
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config/schema.js'
import { registerOpenUrlRoutes } from '../http/routes/openurl.js'
import { registerProxyRoutes } from '../http/routes/proxy.js'
import type { ProxyRouteOptions } from '../http/routes/proxy.js'
import { registerSettingsRoutes } from '../http/routes/settings.js'
import type { AppContext, Services } from '../services.js'

export default async function proxyRoutes (app: FastifyInstance, { config, services }: AppContext): Promise<void> {
  const options = proxyRouteOptions(config, services)
  // The proxy's routes add the form parser (application/x-www-form-urlencoded) that /openurl and /settings read too.
  registerProxyRoutes(app, options)
  registerOpenUrlRoutes(app, options)
  registerSettingsRoutes(app, { services: config.localServices, publicBaseUrl: config.publicBaseUrl, fallbackHost: services.fallbackHost })
}

/** The proxy's options; app.ts gives them to the handler of paths the router cannot decode, too. */
export function proxyRouteOptions (config: Config, services: Services): ProxyRouteOptions {
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
