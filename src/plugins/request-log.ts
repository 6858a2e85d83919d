/** LOG_REQUESTS: one log line per answer (method, URL, status, time, client), for every route. */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

async function requestLog(app: FastifyInstance): Promise<void> {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10, ip: request.ip },
      'request'
    )
  })
}

// Not encapsulated: the hook must see every route's answers.
export default fp(requestLog, { name: 'request-log', fastify: '5.x' })
