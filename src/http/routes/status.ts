import type { FastifyInstance } from 'fastify'
import { baseUrlFor } from '../base-url.js'
import { RequestError } from '../errors.js'
import { operatorOnly } from '../operator-only.js'
import type { RouteContext } from '../route-context.js'
import { REFRESH_SCRIPT_HASH, renderStatusPage } from '../views/status.js'

const HTML = 'text/html; charset=utf-8'

// Nothing from elsewhere, only our own inline style and the one refresh script (by its hash).
const STATUS_CSP =
  `default-src 'none'; style-src 'unsafe-inline'; script-src '${REFRESH_SCRIPT_HASH}'; connect-src 'self'; ` +
  "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

/**
 * `/status` and `/status.json` (issue 15): for operators only. Clients outside STATUS_ALLOW (default
 * loopback) get 403; `request.ip` honours TRUST_PROXY. Neither answer carries CORS headers: another
 * site open in an operator's browser must not read them. The figures come from a collector that reads
 * our counters once a second, never from work per request.
 */
export default async function statusRoutes(
  app: FastifyInstance,
  { config, services }: RouteContext<'statusAllow' | 'publicBaseUrl'>
): Promise<void> {
  const { status: collector, fallbackHost } = services
  const guard = operatorOnly(config.statusAllow)
  const forbidden = 'The status page is only for the people who run this resolver, from the networks they allowed (STATUS_ALLOW).'

  // A refusal is rendered by the one error handler (src/plugins/error-pages.ts): a page, or {"message"} JSON.
  app.get('/status', async (request, reply) => {
    if (!guard(request, reply)) throw new RequestError(403, forbidden)
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    const snapshot = await collector.snapshot()
    return reply.type(HTML).header('content-security-policy', STATUS_CSP).send(renderStatusPage(ctx, snapshot))
  })
  app.get('/status.json', { config: { errorFormat: 'message' } }, async (request, reply) => {
    if (!guard(request, reply)) throw new RequestError(403, forbidden)
    return reply.send(await collector.snapshot())
  })
}
