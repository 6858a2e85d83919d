/** Readiness and draining: `app.lifecycle` is ready once every plugin is loaded; while draining, answers close their connection. */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
// Its type, and `app.lifecycle`'s declaration, are with /readyz, which reads it.
import type { Lifecycle } from '../http/routes/ops.js'

async function lifecycle(app: FastifyInstance): Promise<void> {
  const lifecycle: Lifecycle = { ready: false }
  app.decorate('lifecycle', lifecycle)
  app.addHook('onReady', async () => {
    lifecycle.ready = true
  })
  app.addHook('preClose', async () => {
    lifecycle.ready = false
  })
  // While draining, answers close their connection so shutdown does not wait for keep-alive timeouts.
  // Callback style: no promise per request on the hot path.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!lifecycle.ready) reply.header('connection', 'close')
    done(null, payload)
  })
}

// Not encapsulated: `app.lifecycle` belongs to the root, and the drain hook must see every answer.
export default fp(lifecycle, { name: 'lifecycle', fastify: '5.x' })
