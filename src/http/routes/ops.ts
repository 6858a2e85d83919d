import type { FastifyInstance } from 'fastify'
import type { RouteContext } from '../route-context.js'

export interface Lifecycle {
  /** True once every plugin is loaded and until shutdown begins. */
  ready: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness, decorated on the root by src/plugins/lifecycle.ts. */
    lifecycle: Lifecycle
  }
}

/**
 * Liveness, readiness and metrics. None of them depends on the upstream: a doi.org outage must not
 * mark the replicas unhealthy exactly when their stale cache is most useful.
 */
export default async function opsRoutes(app: FastifyInstance, { services }: RouteContext): Promise<void> {
  const { metrics } = services
  const { lifecycle } = app
  app.get('/healthz', async (_request, reply) => {
    return reply.header('cache-control', 'no-store').send({ status: 'ok' })
  })
  app.get('/readyz', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    if (!lifecycle.ready) return reply.code(503).send({ status: 'unavailable' })
    return reply.send({ status: 'ready' })
  })
  app.get('/metrics', async (_request, reply) => {
    return reply
      .header('cache-control', 'no-store')
      .type(metrics.registry.contentType)
      .send(await metrics.exposition())
  })
}
