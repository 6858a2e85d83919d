/** For operators and crawlers: /healthz, /readyz, /metrics, /status and /status.json, /robots.txt and /favicon.ico. */
import type { FastifyInstance } from 'fastify'
import { registerOpsRoutes } from '../http/routes/ops.js'
import { registerStaticRoutes } from '../http/routes/static.js'
import { registerStatusRoutes } from '../http/routes/status.js'
import type { AppContext } from '../services.js'

export default async function opsRoutes (app: FastifyInstance, { config, services }: AppContext): Promise<void> {
  const { metrics, now, upstreamState } = services
  registerOpsRoutes(app, metrics, app.lifecycle)
  registerStatusRoutes(app, { metrics, config, now, upstreamState })
  registerStaticRoutes(app)
}
