import { pipeline, Transform } from 'node:stream'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'
import type { HandleRecord, HandleValue } from '../handle/types.js'
import { encodeHandlePath } from '../handle/name.js'
import { upstreamErrors, UpstreamError } from './errors.js'
import { unreachableReason } from './reachability.js'
import type { Reachability } from './reachability.js'

/** What the upstream said about a handle. Errors are thrown as UpstreamError. */
export type UpstreamAnswer =
  | { kind: 'found', record: HandleRecord, textLength?: number }
  | { kind: 'not-found' }

export interface RetryPolicy {
  /** Retries after a 429/502/503/504 or a dropped connection. */
  retries: number
  baseMs: number
  maxMs: number
  onRetry?: (handle: string, attempt: number, reason: string) => void
}

export interface UpstreamOptions {
  baseUrl: string
  userAgent: string
  /** A whole lookup (every attempt and retry wait) gives up after this long. */
  timeoutMs: number
  connectTimeoutMs: number
  connections: number
  maxBodyBytes: number
  /** Default: no retries (the mirror command keeps its own). */
  retry?: RetryPolicy
  /** Tests and embedders may pass their own undici dispatcher; by default a bounded Pool is made. */
  dispatcher?: Dispatcher
  /** Told of every answer and every failure to get one, so whether the upstream answers is known. */
  reachability?: Reachability
}

export interface FetchOptions {
  auth?: boolean
  cert?: boolean
  /** The request's deadline on the performance.now() clock; the lookup never runs past it. */
  deadline?: number
}

export interface UpstreamClient {
  fetchRecord (handle: string, opts?: FetchOptions): Promise<UpstreamAnswer>
  close (): Promise<void>
}

// Handle REST API response codes (behaviour.md R7): 1 ok, 2 error, 100 not found, 200 values not found.
// 301 ("That prefix doesn't live here") is what a handle server answers for a prefix it does not hold: not found.
const RC_OK = 1
const RC_ERROR = 2
const RC_NOT_FOUND = 100
const RC_VALUES_NOT_FOUND = 200
const RC_SERVER_NOT_RESP = 301

// Statuses worth asking again: rate limited or a gateway in trouble; and connections that dropped. A
// host name that does not resolve, a refused connection or no route is not brief: never retried.
const RETRY_STATUSES = new Set([429, 502, 503, 504])
const RETRY_ERROR_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

export function createUpstreamClient (opts: UpstreamOptions): UpstreamClient {
  const base = new URL(opts.baseUrl)
  const basePath = base.pathname.replace(/\/+$/, '')
  const pool: Dispatcher = opts.dispatcher ?? new Pool(base.origin, connectionLimits(opts.connections, opts.connectTimeoutMs, opts.timeoutMs))
  // We ask for the codings we read (RFC 9110 §12.5.3: no Accept-Encoding would accept any).
  const headers = { 'user-agent': opts.userAgent, accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING }

  async function fetchRecord (handle: string, flags: FetchOptions = {}): Promise<UpstreamAnswer> {
    const started = performance.now()
    const deadline = Math.min(started + opts.timeoutMs, flags.deadline ?? Infinity)
    const budgetMs = Math.max(0, Math.floor(deadline - started))
    if (budgetMs <= 0) throw upstreamErrors.timeout(opts.timeoutMs)
    const query = [flags.auth === true ? 'auth=true' : '', flags.cert === true ? 'cert=true' : ''].filter(Boolean).join('&')
    const path = `${basePath}/${encodeHandlePath(handle)}${query === '' ? '' : `?${query}`}`
    // One timer for the whole lookup, cleared when it ends (AbortSignal.timeout's weak-referenced timer
    // cost a miss more than this, and stayed armed until it fired).
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(new DOMException(`upstream lookup over ${budgetMs} ms`, 'TimeoutError')), budgetMs)
    try {
      let res: Dispatcher.ResponseData
      try {
        res = await requestWithRetries(pool, { origin: base.origin, path, method: 'GET', headers, signal: abort.signal }, handle, deadline, opts.retry ?? NO_RETRIES)
      } catch (err) {
        throw failed(classify(err, budgetMs))
      }
      opts.reachability?.answered()
      let text: string
      try {
        text = (await readDecoded(res, opts.maxBodyBytes, {
          tooLarge: () => upstreamErrors.badResponse(`answer larger than ${opts.maxBodyBytes} bytes`),
          unreadable: upstreamErrors.badResponse
        })).toString('utf8')
      } catch (err) {
        throw err instanceof UpstreamError ? err : failed(classify(err, budgetMs))
      }
      return interpret(res.statusCode, text, handle, retryAfterMs(res.headers['retry-after']))
    } finally {
      clearTimeout(timer)
    }
  }

  /** A failure to get an answer, told to the reachability tracker on its way out. */
  function failed (err: UpstreamError): UpstreamError {
    if (err.reason !== undefined) opts.reachability?.failed(err.reason, String((err.cause as { message?: unknown } | undefined)?.message ?? err.cause ?? err.code))
    return err
  }

  return {
    fetchRecord,
    async close () {
      if (opts.dispatcher === undefined) await pool.close()
    }
  }
}

const NO_RETRIES: RetryPolicy = { retries: 0, baseMs: 0, maxMs: 0 }

/** The explicit limits of our connections to a server (never undici's defaults), for one origin or per host. */
export function connectionLimits (connections: number, connectTimeoutMs: number, timeoutMs: number) {
  return {
    connections,
    connect: { timeout: connectTimeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
    pipelining: 1
  }
}

/**
 * A GET, asked again after a retryable status (429, 502, 503, 504) or a dropped connection, with
 * exponential backoff (a Retry-After wins), but never waiting past the deadline: then the last answer
 * stands (its status and body are read as usual; a stale record may stand in for it), or the last failure
 * is thrown. `name` is what onRetry reports (the handle, or a host). A loop of our own rather than
 * undici's retry interceptor, whose handler wrapped every request, the many that are never retried too.
 */
export async function requestWithRetries (dispatcher: Dispatcher, request: Dispatcher.RequestOptions & { signal: AbortSignal }, name: string, deadline: number, policy: RetryPolicy): Promise<Dispatcher.ResponseData> {
  for (let attempt = 1; ; attempt++) {
    let res: Dispatcher.ResponseData | undefined
    let failure: unknown
    try {
      res = await dispatcher.request(request)
    } catch (err) {
      failure = err
    }
    const code = (failure as { code?: unknown } | undefined)?.code
    const reason = res !== undefined
      ? (RETRY_STATUSES.has(res.statusCode) ? `HTTP ${res.statusCode}` : undefined)
      : (typeof code === 'string' && RETRY_ERROR_CODES.has(code) ? code : undefined)
    const delay = reason === undefined || attempt > policy.retries
      ? undefined
      : retryAfterMs(res?.headers['retry-after']) ?? Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1))
    if (reason === undefined || delay === undefined || performance.now() + delay >= deadline) {
      if (res !== undefined) return res
      throw failure
    }
    policy.onRetry?.(name, attempt, reason)
    res?.body.dump().catch(() => {}) // read off (a little) so the connection is kept
    await sleep(delay, undefined, { signal: request.signal })
  }
}

/**
 * Read a whole body, refusing more than maxBytes with `tooLarge()` (a runaway server must not fill our
 * memory). With the stream's own events, not `for await`: its async iterator cost a miss about 10 µs.
 * A stream that closes before its end is an error, as the iterator would make it.
 */
export async function readBounded (body: Readable, maxBytes: number, tooLarge: () => Error): Promise<Buffer> {
  return await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    // Listeners stay until the stream is gone: a late 'error' then finds one and is ignored.
    let settled = false
    const fail = (err: unknown): void => {
      if (settled) return
      settled = true
      reject(err)
    }
    body.on('data', (chunk: Buffer) => {
      if (settled) return
      size += chunk.length
      if (size > maxBytes) {
        fail(tooLarge())
        body.destroy()
        return
      }
      chunks.push(chunk)
    })
    body.once('end', () => {
      if (settled) return
      settled = true
      resolve(Buffer.concat(chunks, size))
    })
    body.on('error', fail)
    // After 'end' too, on every answer: the error (and its stack) only when it is one.
    body.once('close', () => { if (!settled) fail(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })) })
  })
}

/** The Content-Encodings we ask for and read (each decodes through node:zlib); send it as Accept-Encoding. */
export const ACCEPT_ENCODING = 'gzip, deflate, br'
const DECODERS: Record<string, () => Transform> = { gzip: createGunzip, 'x-gzip': createGunzip, deflate: createInflate, br: createBrotliDecompress }

/**
 * The body as the server meant it, decoded when its Content-Encoding is one we asked for. The size
 * bound holds for the bytes received and for the decoded bytes alike: a decompression bomb is cut at
 * maxBytes of output, streaming, never held whole. A coding we did not ask for, or a body that does not
 * decode, is `unreadable`; a connection failing meanwhile is thrown as it came.
 */
export async function readDecoded (res: Dispatcher.ResponseData, maxBytes: number, errors: { tooLarge: () => Error, unreadable: (detail: string) => Error }): Promise<Buffer> {
  const header = res.headers['content-encoding']
  const coding = (Array.isArray(header) ? header.join(',') : header ?? '').trim().toLowerCase()
  if (coding === '' || coding === 'identity') return await readBounded(res.body, maxBytes, errors.tooLarge)
  const decoder = DECODERS[coding]
  if (decoder === undefined) {
    res.body.on('error', () => {}).destroy() // its abort is ours, not a fault to report
    throw errors.unreadable(`Content-Encoding ${JSON.stringify(coding)}, which we did not ask for`)
  }
  let received = 0
  let sourceError: unknown
  res.body.once('error', (err) => { sourceError = err })
  const counted = new Transform({
    transform (chunk: Buffer, _encoding, done) {
      received += chunk.length
      done(received > maxBytes ? errors.tooLarge() : null, chunk)
    }
  })
  const decoded = pipeline(res.body, counted, decoder(), () => {})
  let cut: Error | undefined
  try {
    return await readBounded(decoded, maxBytes, () => (cut = errors.tooLarge()))
  } catch (err) {
    if (err === cut || received > maxBytes || sourceError !== undefined) throw err
    throw errors.unreadable(`a ${coding} body that does not decode`)
  }
}

function classify (err: unknown, timeoutMs: number): UpstreamError {
  const e = err as { name?: string, code?: string, message?: string, cause?: { code?: string } }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
      e?.code === 'UND_ERR_BODY_TIMEOUT' || e?.code === 'UND_ERR_CONNECT_TIMEOUT' || e?.code === 'UND_ERR_ABORTED') {
    return upstreamErrors.timeout(timeoutMs, err, e?.code === 'UND_ERR_CONNECT_TIMEOUT')
  }
  const code = e?.code ?? e?.cause?.code
  return upstreamErrors.unreachable(unreachableReason(code), code ?? e?.message ?? 'unknown error', err)
}

/**
 * Turn an upstream HTTP answer into found / not-found, or throw (behaviour.md §9): 5xx and 429 are
 * upstream faults; any other 4xx (a CDN's HTML 400/414/431 for a handle it will not pass on) is the
 * upstream refusing that request, never a fault.
 */
export function interpret (status: number, text: string, handle: string, retryAfter?: number): UpstreamAnswer {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    if (status >= 500 || status === 429) throw upstreamErrors.status(status, retryAfter)
    if (status >= 400) throw upstreamErrors.rejected(status)
    throw upstreamErrors.badResponse(`HTTP ${status} with a body that is not JSON`)
  }
  // A JSON 5xx is the Handle API itself answering about this handle: its prefix's handle server failed.
  if (status >= 500) throw upstreamErrors.status(status, retryAfter, hasResponseCode(body) ? 'prefix' : 'upstream')
  if (status === 429) throw upstreamErrors.status(status, retryAfter)
  const rc = (body as { responseCode?: unknown } | null)?.responseCode
  if (rc === RC_NOT_FOUND || rc === RC_SERVER_NOT_RESP) return { kind: 'not-found' }
  if ((rc === RC_OK || rc === RC_VALUES_NOT_FOUND) && status === 200) {
    const values = (body as { values?: unknown }).values ?? []
    if (!Array.isArray(values) || !values.every(isHandleValue)) throw upstreamErrors.badResponse('malformed values')
    return { kind: 'found', record: { handle, values }, textLength: text.length }
  }
  if (status >= 400) throw upstreamErrors.rejected(status)
  if (rc === RC_ERROR) throw upstreamErrors.badResponse(`HTTP ${status} with responseCode 2`)
  throw upstreamErrors.badResponse(`HTTP ${status}, responseCode ${JSON.stringify(rc)}`)
}

function hasResponseCode (body: unknown): boolean {
  return body !== null && typeof body === 'object' && typeof (body as { responseCode?: unknown }).responseCode === 'number'
}

/** Retry-After as delay-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs (header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

function isHandleValue (v: unknown): v is HandleValue {
  if (v === null || typeof v !== 'object') return false
  const o = v as Record<string, unknown>
  const data = o.data as Record<string, unknown> | null | undefined
  return Number.isInteger(o.index) && typeof o.type === 'string' &&
    data !== null && typeof data === 'object' && typeof data.format === 'string' &&
    (typeof o.ttl === 'number' || typeof o.ttl === 'string' || o.ttl === undefined)
}
