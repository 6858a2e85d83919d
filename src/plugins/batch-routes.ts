/** The batch API, POST /api/batch (docs/checking-dois.md): its own context, for its body parsers and limits. */
import type { FastifyInstance } from 'fastify'
import { createBatchAnswers } from '../http/batch.js'
import { registerBatchRoutes } from '../http/routes/batch.js'
import type { AppContext } from '../services.js'

export default async function batchRoutes (app: FastifyInstance, { config, services }: AppContext): Promise<void> {
  const { proxyService, resolver, admission, metrics, fallbackHost } = services
  // More lookups at once than a client may have in flight and waiting would only earn 429s from its own queue.
  const concurrency = Math.min(config.batchConcurrency, config.upstreamPerClient + config.upstreamClientQueue)
  const batch = createBatchAnswers({ service: proxyService, resolver, metrics, concurrency, deadlineMs: config.requestDeadlineMs })
  registerBatchRoutes(app, {
    batch,
    resolver,
    admission,
    metrics,
    maxLines: config.batchMaxLines,
    maxBytes: config.batchMaxBytes,
    maxHandleLength: config.maxHandleLength,
    publicBaseUrl: config.publicBaseUrl,
    fallbackHost
  })
}
