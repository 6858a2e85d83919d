/** CORS (behaviour.md §7): the two headers of a simple request on every answer, and the answers to preflight requests. */
import type { FastifyInstance } from 'fastify'
import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import { CORS_HEADERS, EXPOSED_HEADERS } from '../http/prepared-answers.js'

async function corsHeaders(app: FastifyInstance): Promise<void> {
  // A simple request's two headers are the same on every answer, so one plain hook sets them (a route
  // may remove them, as /status does). Registered before the routes, it runs before any hook of theirs.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(CORS_HEADERS)
    done()
  })
  // @fastify/cors answers preflight requests, registered in a context of its own so its per-request
  // hook sees only its OPTIONS route.
  await app.register(async (preflight) => {
    await preflight.register(cors, { origin: '*', methods: ['GET', 'HEAD', 'POST'], exposedHeaders: EXPOSED_HEADERS, maxAge: 86_400 })
  })
}

// Not encapsulated: the onRequest hook must reach every route.
export default fp(corsHeaders, { name: 'cors-headers', fastify: '5.x' })
