import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { splitRequestTarget } from '../../handle/name.js'
import { baseUrlFor } from '../base-url.js'
import { RequestError } from '../errors.js'
import { acceptFormBodies } from '../form-body.js'
import { choiceCookie, COOKIE_NAME, NO_SERVICE, savedChoice } from '../local-service.js'
import { renderSettingsPage } from '../views/institutional.js'
import type { RouteContext } from '../route-context.js'

const HTML = 'text/html; charset=utf-8'
// The smallest transparent GIF: 1×1, one colour, 43 bytes.
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')

/**
 * The reader's choice of local service (behaviour.md §10): `/settings` (a page, and its form), and
 * `/settings/set?service=ID`, a 1×1 GIF a library's login page can embed (doi.org's "cookie pusher").
 */
export default async function settingsRoutes(
  app: FastifyInstance,
  { config, services }: RouteContext<'localServices' | 'publicBaseUrl'>
): Promise<void> {
  const { localServices: choices, publicBaseUrl } = config
  const byId = new Map(choices.map((s) => [s.id, s]))
  const baseOf = (request: FastifyRequest): string => baseUrlFor(request, publicBaseUrl, services.fallbackHost)
  // Rendered by the one error handler (src/plugins/error-pages.ts); like every answer here, kept by no cache.
  const refuse = (reply: FastifyReply, status: 400 | 403, message: string): never => {
    reply.header('cache-control', 'no-store')
    throw new RequestError(status, message)
  }

  app.get('/settings', async (request, reply) => {
    const { query } = splitRequestTarget(request.raw.url ?? '/')
    const view = {
      services: choices,
      current: savedChoice(request, byId),
      saved: new URLSearchParams(query).has('saved'),
      cookieName: COOKIE_NAME
    }
    // The page shows this reader's cookie: no cache may keep it.
    return reply
      .type(HTML)
      .header('cache-control', 'no-store')
      .send(renderSettingsPage({ baseUrl: baseOf(request) }, view))
  })

  // The form on the page posts here, encoded as the proxy's own form.
  acceptFormBodies(app)
  app.post('/settings', async (request, reply) => {
    const base = baseOf(request)
    if (isCrossSite(request, base)) return refuse(reply, 403, "Your choice can only be saved from this resolver's own settings page.")
    // Browser form encoding: '+' is a space (ids have neither).
    const service = new URLSearchParams(typeof request.body === 'string' ? request.body : '').get('service') ?? ''
    if (service !== '' && service !== NO_SERVICE && !byId.has(service)) {
      return refuse(reply, 400, 'There is no library service with that name here; choose one on the settings page.')
    }
    reply.header('set-cookie', choiceCookie(service === '' ? undefined : service, { secure: base.startsWith('https:') }))
    return reply.code(303).header('location', `${base}settings?saved`).header('cache-control', 'no-store').send()
  })

  app.get('/settings/set', async (request, reply) => {
    const base = baseOf(request)
    const { query } = splitRequestTarget(request.raw.url ?? '/')
    const service = new URLSearchParams(query).get('service') ?? ''
    if (service !== NO_SERVICE && !byId.has(service)) return refuse(reply, 400, 'There is no library service with that name here.')
    reply.header('set-cookie', choiceCookie(service, { secure: base.startsWith('https:'), crossSite: true }))
    return reply.type('image/gif').header('cache-control', 'no-store').send(PIXEL)
  })
}

/** A form post from another site (CSRF): an Origin that is not ours, or a browser saying cross-site. */
function isCrossSite(request: FastifyRequest, base: string): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true
  const origin = request.headers.origin
  return origin !== undefined && origin !== new URL(base).origin
}
