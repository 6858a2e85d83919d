/** The admission gate's plugins (src/http/admission.ts): @fastify/under-pressure measures the event loop, @fastify/rate-limit counts per client. */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { AppContext } from '../services.js'

async function admission(app: FastifyInstance, { services }: AppContext): Promise<void> {
  await services.admission.register(app)
}

// Not encapsulated: both plugins go on the root, where rate-limit's onRoute hook sees every route.
export default fp(admission, { name: 'admission', fastify: '5.x' })
