import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createStatusCollector } from '../../status/collector.js'
import { baseUrlFor } from '../base-url.js'
import { networkMatcher } from '../client.js'
import type { RouteContext } from '../route-context.js'
import { renderErrorPage } from '../views/pages.js'
import { REFRESH_SCRIPT_HASH, renderStatusPage } from '../views/status.js'

const HTML = 'text/html; charset=utf-8'

// Nothing from elsewhere, only our own inline style and the one refresh script (by its hash).
const STATUS_CSP = `default-src 'none'; style-src 'unsafe-inline'; script-src '${REFRESH_SCRIPT_HASH}'; connect-src 'self'; ` +
  "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

/**
 * `/status` and `/status.json` (issue 15): for operators only. Clients outside STATUS_ALLOW (default
 * loopback) get 403; `request.ip` honours TRUST_PROXY. Neither answer carries CORS headers: another
 * site open in an operator's browser must not read them. The figures come from a collector that reads
 * our counters once a second, never from work per request.
 */
export default async function statusRoutes (app: FastifyInstance, { config, services }: RouteContext): Promise<void> {
  const { metrics, now, upstreamState, fallbackHost } = services
  // The bounds beside the figures they bound, for /metrics too (dashboards and alerts divide by them).
  metrics.showBounds(config)
  const collector = createStatusCollector({ metrics, config, now, upstreamState })
  const allowed = networkMatcher(config.statusAllow)
  app.addHook('onReady', async () => { collector.start() })
  app.addHook('onClose', async () => { collector.stop() })

  const guard = (request: FastifyRequest, reply: FastifyReply): boolean => {
    reply.removeHeader('access-control-allow-origin').removeHeader('access-control-expose-headers')
    reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff')
    // Through a proxy we could not see past (TRUST_PROXY off), request.ip is the proxy's own address,
    // often loopback: never a pass.
    const forwarded = request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined
    if (forwarded && request.ip === request.socket.remoteAddress) return false
    return allowed(request.ip)
  }
  const forbidden = 'The status page is only for the people who run this resolver, from the networks they allowed (STATUS_ALLOW).'

  app.get('/status', async (request, reply) => {
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    if (!guard(request, reply)) return reply.code(403).type(HTML).send(renderErrorPage(ctx, { status: 403, message: forbidden }))
    const snapshot = await collector.snapshot()
    return reply.type(HTML).header('content-security-policy', STATUS_CSP).send(renderStatusPage(ctx, snapshot))
  })
  app.get('/status.json', async (request, reply) => {
    if (!guard(request, reply)) return reply.code(403).send({ error: 'forbidden', message: forbidden })
    return reply.send(await collector.snapshot())
  })
}
