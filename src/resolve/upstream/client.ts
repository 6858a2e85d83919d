import { promisify } from 'node:util'
import { brotliDecompress, gunzip, inflate } from 'node:zlib'
import type { InputType, ZlibOptions } from 'node:zlib'
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'
import type { IncomingHttpHeaders } from 'undici/types/header.js'
import { isHandleValue } from '../../handle/types.js'
import type { HandleRecord } from '../../handle/types.js'
import { encodeHandlePath } from '../../handle/name.js'
import { PLAIN_LOOKUP } from '../../handle/lookup-params.js'
import type { LookupParams } from '../../handle/lookup-params.js'
import { upstreamErrors, UpstreamError } from './errors.js'
import { unreachableReason } from './reachability.js'
import type { Reachability } from './reachability.js'

/** What the upstream said about a handle. Errors are thrown as UpstreamError. */
export type UpstreamAnswer = { kind: 'found'; record: HandleRecord; textLength?: number } | { kind: 'not-found' }

export interface RetryPolicy {
  /** Retries after a 429, any 5xx or a dropped connection. */
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
  /**
   * Tests and embedders may pass their own undici dispatcher (a Pool, Agent, Client or MockAgent: see
   * getWhole); by default a bounded Pool is made.
   */
  dispatcher?: Dispatcher
  /** Told of every answer and every failure to get one, so whether the upstream answers is known. */
  reachability?: Reachability
}

export interface UpstreamClient {
  /** `params` as the reader's query asked (upstreamQuery); `deadline` on the performance.now() clock: never run past. */
  fetchRecord(handle: string, params?: LookupParams, deadline?: number): Promise<UpstreamAnswer>
  close(): Promise<void>
}

// Handle REST API response codes (behaviour.md R7): 1 ok, 2 error, 100 not found, 200 values not found.
// 301 ("That prefix doesn't live here") is what a handle server answers for a prefix it does not hold: not found.
const RC_OK = 1
const RC_ERROR = 2
const RC_NOT_FOUND = 100
const RC_VALUES_NOT_FOUND = 200
const RC_SERVER_NOT_RESP = 301

// One rule for what is asked again (docs/operations.md "Retries"): a 429 (rate limited) and every 5xx (the
// server, or a gateway in front of it, in trouble: a 500 as a 503), and connections that dropped. A host
// name that does not resolve, a refused connection or no route is not brief: never retried.
const retryStatus = (status: number): boolean => status === 429 || (status >= 500 && status <= 599)
const RETRY_ERROR_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

export function createUpstreamClient(opts: UpstreamOptions): UpstreamClient {
  const base = new URL(opts.baseUrl)
  const basePath = base.pathname.replace(/\/+$/, '')
  const pool: Dispatcher =
    opts.dispatcher ?? new Pool(base.origin, connectionLimits(opts.connections, opts.connectTimeoutMs, opts.timeoutMs))
  // We ask for the codings we read (RFC 9110 §12.5.3: no Accept-Encoding would accept any).
  const headers = { 'user-agent': opts.userAgent, accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING }

  async function fetchRecord(handle: string, params = PLAIN_LOOKUP, requestDeadline?: number): Promise<UpstreamAnswer> {
    const started = performance.now()
    const deadline = Math.min(started + opts.timeoutMs, requestDeadline ?? Infinity)
    const budgetMs = Math.max(0, Math.floor(deadline - started))
    if (budgetMs <= 0) throw upstreamErrors.timeout(opts.timeoutMs)
    const path = `${basePath}/${encodeHandlePath(handle)}${upstreamQuery(params)}`
    // One timer for the whole lookup, cleared when it ends: it stops the request under way, or the wait
    // before a retry.
    const cancel = Cancel.after(budgetMs, `upstream lookup over ${budgetMs} ms`)
    const tooLarge = (): UpstreamError => upstreamErrors.badResponse(`answer larger than ${opts.maxBodyBytes} bytes`)
    try {
      let res: WholeAnswer
      try {
        res = await getWithRetries(
          pool,
          { origin: base.origin, path, method: 'GET', headers },
          { maxBytes: opts.maxBodyBytes, tooLarge, cancel },
          handle,
          deadline,
          opts.retry ?? NO_RETRIES
        )
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw failed(classify(err, budgetMs))
        // Ours: an answer too large to read. The upstream did answer.
        opts.reachability?.answered()
        throw err
      }
      opts.reachability?.answered()
      const text = (await decodeWhole(res, opts.maxBodyBytes, { tooLarge, unreadable: upstreamErrors.badResponse })).toString('utf8')
      return interpret(res.statusCode, text, handle, retryAfterMs(res.headers['retry-after']))
    } finally {
      cancel.clear()
    }
  }

  /** A failure to get an answer, told to the reachability tracker on its way out. */
  function failed(err: UpstreamError): UpstreamError {
    if (err.reason !== undefined) {
      opts.reachability?.failed(err.reason, String((err.cause as { message?: unknown } | undefined)?.message ?? err.cause ?? err.code))
    }
    return err
  }

  return {
    fetchRecord,
    async close() {
      if (opts.dispatcher === undefined) await pool.close()
    }
  }
}

const NO_RETRIES: RetryPolicy = { retries: 0, baseMs: 0, maxMs: 0 }

/** The query string sent upstream with the handle ('' or '?…'): what the reader's query asked of the lookup. */
function upstreamQuery(params: LookupParams): string {
  const asked: string[] = []
  if (params.auth) asked.push('auth=true')
  if (params.cert) asked.push('cert=true')
  return asked.length === 0 ? '' : `?${asked.join('&')}`
}

/** The explicit limits of our connections to a server (never undici's defaults), for one origin or per host. */
export function connectionLimits(connections: number, connectTimeoutMs: number, timeoutMs: number) {
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
 * Ends a lookup's current step when its time is up: the request under way, or the wait before a retry.
 * A step says how it stops in `stop` while it runs; one that starts after the end fails at once.
 */
export class Cancel {
  reason: Error | undefined
  stop: ((reason: Error) => void) | undefined
  #timer: NodeJS.Timeout | undefined

  /** A cancel that ends by itself after `ms`, with a TimeoutError saying `message`; `clear()` it when done. */
  static after(ms: number, message: string): Cancel {
    const cancel = new Cancel()
    cancel.#timer = setTimeout(() => cancel.end(new DOMException(message, 'TimeoutError')), ms)
    return cancel
  }

  clear(): void {
    clearTimeout(this.#timer)
  }

  end(reason: Error): void {
    this.reason = reason
    this.stop?.(reason)
  }
}

/** One GET's answer read whole: its status, headers, and the body's bytes as they came (still encoded). */
export interface WholeAnswer {
  statusCode: number
  headers: IncomingHttpHeaders
  body: Buffer
}

export interface WholeLimits {
  /** Most bytes received; beyond (or a Content-Length saying so), `tooLarge()` and the connection is cut. */
  maxBytes: number
  tooLarge: () => Error
  cancel: Cancel
}

/**
 * One GET through undici's dispatch API, its body gathered in memory as it comes: no stream, no abort
 * signal and no async resource per request (what undici's request API makes), which every miss paid for.
 * Rejects with undici's own errors, `tooLarge()`, or the cancel's reason. The dispatcher must be one of
 * undici's Pool, Agent, Client or MockAgent, whose dispatch takes this handler API (a bare MockPool's does
 * not: it only calls the older onConnect/onHeaders callbacks, and the answer would wait for the timer).
 */
export async function getWhole(dispatcher: Dispatcher, request: Dispatcher.DispatchOptions, limits: WholeLimits): Promise<WholeAnswer> {
  return await new Promise<WholeAnswer>((resolve, reject) => {
    const { cancel, maxBytes } = limits
    if (cancel.reason !== undefined) {
      reject(cancel.reason)
      return
    }
    let controller: Dispatcher.DispatchController | undefined
    let stopped: Error | undefined
    let statusCode = 0
    let headers: IncomingHttpHeaders = {}
    const chunks: Buffer[] = []
    let size = 0
    const stop = (reason: Error): void => {
      stopped ??= reason
      cancel.stop = undefined
      reject(reason)
      controller?.abort(reason)
    }
    cancel.stop = stop
    dispatcher.dispatch(request, {
      onRequestStart(c) {
        controller = c
        if (stopped !== undefined) c.abort(stopped)
      },
      onResponseStart(_c, status, answered) {
        statusCode = status
        headers = answered
        if (Number(answered['content-length']) > maxBytes) stop(limits.tooLarge())
      },
      onResponseData(_c, chunk) {
        if (stopped !== undefined) return
        size += chunk.length
        if (size > maxBytes) stop(limits.tooLarge())
        else chunks.push(chunk)
      },
      onResponseEnd() {
        cancel.stop = undefined
        resolve({ statusCode, headers, body: Buffer.concat(chunks, size) })
      },
      onResponseError(_c, err) {
        cancel.stop = undefined
        reject(err)
      }
    })
  })
}

/**
 * getWhole, asked again after a retryable status (429, any 5xx) or a dropped connection, with
 * exponential backoff (a Retry-After wins), but never waiting past the deadline: then the last answer
 * stands (its status and body are read as usual; a stale record may stand in for it), or the last failure
 * is thrown. `name` is what onRetry reports (the handle, or a host). A loop of our own rather than
 * undici's retry interceptor, whose handler wrapped every request, the many that are never retried too.
 */
export async function getWithRetries(
  dispatcher: Dispatcher,
  request: Dispatcher.DispatchOptions,
  limits: WholeLimits,
  name: string,
  deadline: number,
  policy: RetryPolicy
): Promise<WholeAnswer> {
  for (let attempt = 1; ; attempt++) {
    let res: WholeAnswer | undefined
    let failure: unknown
    try {
      res = await getWhole(dispatcher, request, limits)
    } catch (err) {
      failure = err
    }
    const code = (failure as { code?: unknown } | undefined)?.code
    const reason =
      res !== undefined
        ? retryStatus(res.statusCode)
          ? `HTTP ${res.statusCode}`
          : undefined
        : typeof code === 'string' && RETRY_ERROR_CODES.has(code)
          ? code
          : undefined
    const delay =
      reason === undefined || attempt > policy.retries
        ? undefined
        : (retryAfterMs(res?.headers['retry-after']) ?? Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1)))
    if (reason === undefined || delay === undefined || performance.now() + delay >= deadline) {
      if (res !== undefined) return res
      throw failure
    }
    policy.onRetry?.(name, attempt, reason)
    await pause(delay, limits.cancel)
  }
}

/** Wait `ms`, or until the cancel ends it (rejecting with its reason). */
async function pause(ms: number, cancel: Cancel): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    if (cancel.reason !== undefined) {
      reject(cancel.reason)
      return
    }
    const timer = setTimeout(() => {
      cancel.stop = undefined
      resolve()
    }, ms)
    cancel.stop = (reason) => {
      clearTimeout(timer)
      cancel.stop = undefined
      reject(reason)
    }
  })
}

type OneShot = (buffer: InputType, options: ZlibOptions) => Promise<Buffer>
const ONE_SHOT: Record<string, OneShot> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress) as OneShot
}

/**
 * A whole body as the server meant it, decoded when its Content-Encoding is one we asked for. The size
 * bound holds for the decoded bytes too: zlib stops at maxBytes of output (a decompression bomb is never
 * held whole). A coding we did not ask for, or a body that does not decode, is `unreadable`.
 */
export async function decodeWhole(
  res: WholeAnswer,
  maxBytes: number,
  errors: { tooLarge: () => Error; unreadable: (detail: string) => Error }
): Promise<Buffer> {
  const header = res.headers['content-encoding']
  const coding = (Array.isArray(header) ? header.join(',') : (header ?? '')).trim().toLowerCase()
  if (coding === '' || coding === 'identity') return res.body
  const decode = ONE_SHOT[coding]
  if (decode === undefined) throw errors.unreadable(`Content-Encoding ${JSON.stringify(coding)}, which we did not ask for`)
  try {
    return await decode(res.body, { maxOutputLength: maxBytes })
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw errors.tooLarge()
    throw errors.unreadable(`a ${coding} body that does not decode`)
  }
}

/** The Content-Encodings we ask for and read (each decodes through node:zlib); send it as Accept-Encoding. */
export const ACCEPT_ENCODING = 'gzip, deflate, br'

/** Whether undici or an abort gave up waiting (a timeout, our own deadline's abort), rather than failing otherwise. */
export function isTimeoutError(err: unknown): boolean {
  const e = err as { name?: string; code?: string } | null | undefined
  return (
    e?.name === 'TimeoutError' ||
    e?.name === 'AbortError' ||
    e?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e?.code === 'UND_ERR_BODY_TIMEOUT' ||
    e?.code === 'UND_ERR_CONNECT_TIMEOUT' ||
    e?.code === 'UND_ERR_ABORTED'
  )
}

function classify(err: unknown, timeoutMs: number): UpstreamError {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string } }
  if (isTimeoutError(err)) {
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
export function interpret(status: number, text: string, handle: string, retryAfter?: number): UpstreamAnswer {
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

function hasResponseCode(body: unknown): boolean {
  return body !== null && typeof body === 'object' && typeof (body as { responseCode?: unknown }).responseCode === 'number'
}

/** Retry-After as delay-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}
