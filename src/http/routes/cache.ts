import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { cacheKey, handleFromPath, splitRequestTarget } from '../../handle/name.js'
import type { RouteContext } from '../route-context.js'

const PATH = '/api/cache'

/**
 * DELETE /api/cache/{doi}: drop a DOI's cached answer from every tier of every process (memory with the
 * answers kept for the door, the snapshot file, Redis, open access, fetched metadata; the other replicas through Redis, the
 * other workers through the primary). For a DOI registered minutes ago whose "not found" is still cached
 * (NEGATIVE_TTL_SECONDS; datacite/datacite#2281). Off without ADMIN_TOKEN; asked with
 * `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time. Answers JSON, never cached.
 */
export default async function cacheRoutes(
  app: FastifyInstance,
  { config, services }: RouteContext<'adminToken' | 'maxHandleLength'>
): Promise<void> {
  // Both sides hashed first: equal lengths for timingSafeEqual, and the token's length not told by the time taken.
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest()
  const expected = config.adminToken === undefined ? undefined : digest(config.adminToken)

  app.delete(`${PATH}/*`, { config: { errorFormat: 'message' } }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    if (expected === undefined) {
      return await reply.code(404).send({ message: 'Purging the cache is off on this resolver: its operator has not set ADMIN_TOKEN.' })
    }
    const given = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1]
    if (given === undefined || !timingSafeEqual(digest(given), expected)) {
      return await reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="doi-proxy"')
        .send({ message: "Purging the cache needs this resolver's admin token, as Authorization: Bearer <ADMIN_TOKEN>." })
    }
    const { path } = splitRequestTarget(request.raw.url ?? '')
    const parsed = handleFromPath(path.slice(PATH.length), { maxLength: config.maxHandleLength })
    if (!parsed.ok) return await reply.code(parsed.status).send({ message: parsed.message })
    if (parsed.handle === '') return await reply.code(400).send({ message: 'Name the DOI to purge: DELETE /api/cache/{doi}.' })
    const result = await services.purge(cacheKey(parsed.handle))
    // Every copy we know of is gone only when Redis (if any) took the delete and the message.
    const whole = result.redis !== 'failed' && result.told !== 'failed'
    request.log.info({ handle: parsed.handle, ...result }, 'purged a DOI from the cache')
    return await reply.code(whole ? 200 : 503).send({
      doi: parsed.handle,
      held: result.held,
      redis: result.redis,
      told: result.told,
      message: whole
        ? `Dropped from every cache tier${result.told === 'redis' ? ' of every replica' : ''}; the next request asks the registry.`
        : 'Dropped here, but Redis did not answer: other replicas may keep their copy until it expires (a not-found: NEGATIVE_TTL_SECONDS). Try again.'
    })
  })
}
