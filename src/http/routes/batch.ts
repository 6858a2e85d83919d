import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { parseBatchEntry, textEntries } from '../../handle/batch.js'
import type { BatchEntry } from '../../handle/batch.js'
import { parseVerifyLevels } from '../../handle/verify/levels.js'
import type { VerifyLevel } from '../../handle/verify/types.js'
import { onlyIfCached } from '../admission.js'
import type { Admission } from '../admission.js'
import type { ClientTicket } from '../../resolve/upstream/fair-queue.js'
import type { BatchAnswers, BatchResult } from '../batch.js'
import { LimitError, RefusedError, describeError, logError } from '../errors.js'
import { UpstreamError } from '../../resolve/upstream/errors.js'
import type { Metrics } from '../../observe/metrics.js'
import type { Resolver } from '../../resolve/lookup/resolver.js'
import type { RouteContext, RouteServices } from '../route-context.js'
import { lazyPageContext } from './proxy.js'

export interface BatchRouteOptions {
  batch: BatchAnswers
  resolver: Resolver
  admission: Admission
  metrics: Metrics
  maxLines: number
  maxBytes: number
  maxHandleLength: number
  publicBaseUrl: string | undefined
  fallbackHost: string
}

/** The batch route's settings, and its services: the routes' and the batch's answers (built in src/services.ts). */
type BatchRouteContext = RouteContext<'batchMaxLines' | 'batchMaxBytes' | 'maxHandleLength' | 'publicBaseUrl'> & {
  services: RouteServices & { batch: BatchAnswers }
}

/**
 * POST /api/batch: a body of DOIs (text/plain, one a line, or a JSON array of strings), answered as
 * NDJSON, streamed, one object per line in input order (docs/checking-dois.md). `?verify=metadata,retraction,landing`
 * (issue 41, the levels VERIFY_LEVELS allows) adds those objects to each line; a JSON item may then be
 * `{doi, title, year, author}`, the work its reference cites. Its own plugin context:
 * its body parsers apply to this route only, and its limit is the route's bodyLimit (BATCH_MAX_BYTES):
 * without it the app's 16 KiB would.
 */
export default async function batchRoutes(app: FastifyInstance, { config, services }: BatchRouteContext): Promise<void> {
  const { batch, resolver, admission, metrics, fallbackHost } = services
  const opts: BatchRouteOptions = {
    batch,
    resolver,
    admission,
    metrics,
    maxLines: config.batchMaxLines,
    maxBytes: config.batchMaxBytes,
    maxHandleLength: config.maxHandleLength,
    publicBaseUrl: config.publicBaseUrl,
    fallbackHost
  }
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(['application/json'], { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, jsonEntries(body as string))
    } catch (err) {
      done(err as Error)
    }
  })
  // Anything else is lines of text: `curl --data-binary @dois.txt` sends a form type it does not encode.
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    done(null, textEntries(body as string))
  })
  const bodyTooLarge = {
    message: `The body is larger than ${opts.maxBytes} bytes, the limit of one batch (BATCH_MAX_BYTES). Send the DOIs in smaller batches.`,
    limit: 'BATCH_MAX_BYTES'
  }
  app.post(
    '/api/batch',
    {
      bodyLimit: opts.maxBytes,
      // Errors are rendered by the one error handler (src/plugins/error-pages.ts), as {"message"} JSON.
      config: { errorFormat: 'message', bodyTooLarge },
      // Counted here (a refusal is counted where it happens): a 413 over either limit, a body we cannot read,
      // or a fault of ours before the answer started.
      onError: async (_request, _reply, err) => {
        if (err instanceof RefusedError || err instanceof UpstreamError) return
        const status = describeError(err).status
        opts.metrics.batchRequests.inc({ outcome: status === 413 ? 'too_large' : status < 500 ? 'bad_request' : 'error' })
      }
    },
    async (request, reply) => await answerBatch(request, reply, opts)
  )
}

/** The levels `?verify=` asks (none without it); a 400 naming a word that is not a level, or a level this server does not run. */
function askedLevels(request: FastifyRequest, batch: BatchAnswers): VerifyLevel[] {
  const raw = (request.query as Record<string, unknown> | undefined)?.verify
  if (raw === undefined) return []
  if (typeof raw !== 'string') throw new LimitError(400, 'Give ?verify= once: a comma list of metadata, retraction, landing.')
  const levels = parseVerifyLevels(raw)
  if (typeof levels === 'string') throw new LimitError(400, `?verify=: ${levels}.`)
  const refused = batch.refusedLevel(levels)
  if (refused !== undefined) {
    throw new LimitError(400, `?verify=: this server does not verify ${refused} (VERIFY_LEVELS).`, 'VERIFY_LEVELS')
  }
  return levels
}

async function answerBatch(request: FastifyRequest, reply: FastifyReply, opts: BatchRouteOptions): Promise<FastifyReply> {
  const levels = askedLevels(request, opts.batch)
  // No body at all (no content type): nothing to check.
  const entries = Array.isArray(request.body) ? (request.body as BatchEntry[]) : []
  if (entries.length > opts.maxLines) {
    throw new LimitError(
      413,
      `At most ${opts.maxLines} lines in one batch (BATCH_MAX_LINES); this one has ${entries.length}. Send the DOIs in smaller batches.`,
      'BATCH_MAX_LINES'
    )
  }
  const lines = entries.map((entry) => parseBatchEntry(entry, opts.maxHandleLength))
  // Each lookup a batch causes passes the admission gate (rate limit, load shedding) as a request of its
  // own would: the rate limit counts a batch by its lookups. The first passes before the answer starts,
  // when any line must be looked up beyond the cache and the local records (offline, none is): a refusal
  // is then the whole answer's status, with Retry-After; a later one is that line's answer, with its
  // retryAfter. Under only-if-cached nothing is looked up: each line not held is answered as such (a 504
  // of its own), and the held lines still answer.
  const each = opts.admission.gateEach(request, reply)
  let first: Promise<{ client: ClientTicket }> | undefined
  if (
    !onlyIfCached(request.headers['cache-control']) &&
    lines.some((line) => line.kind === 'doi' && opts.resolver.needsUpstream(line.handle))
  ) {
    try {
      first = Promise.resolve(await each())
    } catch (err) {
      opts.metrics.batchRequests.inc({ outcome: 'refused' })
      throw err
    }
  }
  // The first line that needs the upstream takes the pass made above; every other one passes its own.
  const gate = async (): Promise<{ client: ClientTicket }> => {
    const passed = first ?? each()
    first = undefined
    return await passed
  }
  // A reader who goes away mid-stream stops the lookups not started yet.
  const left = new AbortController()
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) left.abort(new Error('the reader left'))
  })
  const results = opts.batch.answer(lines, {
    ctx: lazyPageContext(request, opts),
    gate,
    levels,
    signal: left.signal,
    onError: (err) => {
      logError(request, err)
    }
  })
  const heartbeatMs = levels.length > 0 ? opts.batch.heartbeatMs : undefined
  const body = Readable.from(ndjson(results, left.signal, opts.metrics, heartbeatMs), { objectMode: false })
  return reply
    .type('application/x-ndjson; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(body)
}

/**
 * The results as NDJSON text, a chunk per group of lines ready; it ends quietly when the reader left. With
 * `heartbeatMs`, a newline whenever the next line keeps it silent that long (readers skip blank lines).
 */
async function* ndjson(
  results: AsyncGenerator<BatchResult[]>,
  left: AbortSignal,
  metrics: Metrics,
  heartbeatMs?: number
): AsyncGenerator<string> {
  try {
    for (;;) {
      const next = results.next()
      let step: IteratorResult<BatchResult[]> | undefined
      while (step === undefined) {
        if (heartbeatMs === undefined) step = await next
        else {
          let timer: NodeJS.Timeout | undefined
          const beat = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, heartbeatMs, undefined)))
          try {
            step = await Promise.race([next, beat])
          } finally {
            clearTimeout(timer)
          }
          if (step === undefined) yield '\n'
        }
      }
      if (step.done === true) break
      let text = ''
      for (const result of step.value) text += JSON.stringify(result) + '\n'
      yield text
    }
    metrics.batchRequests.inc({ outcome: 'answered' })
  } catch (err) {
    if (!left.aborted) throw err
    metrics.batchRequests.inc({ outcome: 'left' })
  }
}

/** A JSON array of strings and `{doi, title, year, author}` objects, as the batch's lines (each item one line, nothing skipped). */
function jsonEntries(body: string): BatchEntry[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    throw new LimitError(400, 'The body is not valid JSON; send a JSON array of strings, or text/plain with one DOI a line.')
  }
  if (!Array.isArray(parsed)) throw new LimitError(400, 'The JSON body must be an array of strings (DOIs).')
  const bad = parsed.findIndex((item) => typeof item !== 'string' && !isCitedItem(item))
  if (bad >= 0) {
    const item: unknown = parsed[bad]
    const what =
      item === null
        ? 'null'
        : Array.isArray(item)
          ? 'an array'
          : typeof item === 'object'
            ? 'an object without a "doi" string'
            : typeof item
    throw new LimitError(
      400,
      `The JSON body must be an array of strings (DOIs) or {"doi", "title", "year", "author"} objects; item ${bad} is ${what}.`
    )
  }
  return parsed as BatchEntry[]
}

function isCitedItem(item: unknown): item is Exclude<BatchEntry, string> {
  return typeof item === 'object' && item !== null && !Array.isArray(item) && typeof (item as { doi?: unknown }).doi === 'string'
}
