/**
 * The HTTP server itself, before Fastify sees a request: its explicit limits and timers, and the answers
 * written on the raw socket for what never becomes a request Fastify can route (headers that arrive too
 * slowly or too large, bytes that are not HTTP, a CONNECT, a method Node's parser does not know).
 */
import { STATUS_CODES, createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Socket } from 'node:net'
import type { Config } from '../config/schema.js'
import { configuredBaseUrl } from './base-url.js'
import { renderErrorPage } from './views/pages.js'

/** The methods we answer, as every 405 says in `Allow`. */
export const ALLOWED_METHODS = 'GET, HEAD, POST, OPTIONS'

/** A 405's message; `method` is shown only when it is a plain token (it is the reader's own input). */
export function methodNotAllowedMessage(method: string): string {
  const shown = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/.test(method) ? `The method ${method}` : 'This method'
  return `${shown} is not supported here; use GET or HEAD.`
}

type EdgeConfig = Pick<Config, 'maxHeaderBytes' | 'maxHandleLength' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'publicBaseUrl'>

/**
 * How often Node looks for requests past their time: a tenth of REQUEST_TIMEOUT_MS, at most a second.
 * Node's default is 30 s, so a client dripping its headers a byte at a time was cut up to 30 s late.
 */
export function connectionsCheckingIntervalOf(requestTimeoutMs: number): number {
  return Math.min(1_000, Math.max(50, Math.ceil(requestTimeoutMs / 10)))
}

/** Answers a request before routing: true when it did, false to let the router answer. */
export type FrontDoor = (req: IncomingMessage, res: ServerResponse) => boolean

const frontDoors = new WeakMap<Server, { serve: FrontDoor | undefined }>()

/** Put a door in front of a server made by createHttpServer (the prepared answers' plugin does, once). */
export function setFrontDoor(server: Server, serve: FrontDoor): void {
  const front = frontDoors.get(server)
  if (front === undefined) throw new Error('setFrontDoor: the server was not made by createHttpServer')
  front.serve = serve
}

/**
 * The HTTP server Fastify would make (lib/server.js), given our request listener, with every limit set
 * explicitly: the request line and headers, and the whole request, must arrive within REQUEST_TIMEOUT_MS
 * (checked every connectionsCheckingIntervalOf it, by Node); a client that stops reading our answer is
 * cut as long after the last byte it took (cutStalledReaders); a kept-alive connection idle for
 * KEEP_ALIVE_TIMEOUT_MS is closed (by Node).
 */
export function createHttpServer(config: EdgeConfig, listener: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const front: { serve: FrontDoor | undefined } = { serve: undefined }
  const server = createServer(
    {
      maxHeaderSize: config.maxHeaderBytes,
      headersTimeout: config.requestTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingIntervalOf(config.requestTimeoutMs)
    },
    (req, res) => {
      if (front.serve?.(req, res) !== true) listener(req, res)
    }
  )
  frontDoors.set(server, front)
  server.keepAliveTimeout = config.keepAliveTimeoutMs
  cutStalledReaders(server, config.requestTimeoutMs, connectionsCheckingIntervalOf(config.requestTimeoutMs))
  // A CONNECT never reaches the request listener: Node hands it here, and without a listener it closes
  // the socket with no answer at all. We are not a forward proxy: 405, as for any method we do not serve.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    writeRawAnswer(socket, config, 405, methodNotAllowedMessage('CONNECT'), { allow: ALLOWED_METHODS }, false)
  })
  return server
}

/**
 * Close a connection whose client has stopped reading our answer: bytes of it wait in our buffer and
 * none has gone out for `quietMs` (checked every `everyMs`). Node's other timers cover the rest (a request
 * that does not arrive, an idle kept-alive connection); this is what server.setTimeout did, without
 * re-arming a timer on every request (a tenth of a cached answer's CPU).
 */
export function cutStalledReaders(server: Server, quietMs: number, everyMs: number): void {
  // Every open connection, with what the sweep last saw of a stalled answer on it (undefined: nothing waits).
  const open = new Map<Socket, { sent: number; since: number } | undefined>()
  server.on('connection', (socket: Socket) => {
    open.set(socket, undefined)
    socket.once('close', () => open.delete(socket))
  })
  const sweep = setInterval(() => {
    const now = performance.now()
    for (const [socket, seen] of open) {
      if (socket.writableLength === 0) {
        if (seen !== undefined) open.set(socket, undefined)
        continue
      }
      // What the kernel has taken so far: bytesWritten counts what waits in our buffer too.
      const sent = socket.bytesWritten - socket.writableLength
      if (seen === undefined || seen.sent !== sent) open.set(socket, { sent, since: now })
      else if (now - seen.since >= quietMs) socket.destroy()
    }
  }, everyMs)
  sweep.unref()
  server.once('close', () => clearInterval(sweep))
}

/**
 * Node could not read the request (a request line or headers over MAX_HEADER_BYTES, too slow, a method
 * its parser does not know, broken HTTP): our own HTML page on the raw socket, then close, as Fastify's
 * default does with JSON.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, config: EdgeConfig): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const raw = (err as { rawPacket?: Buffer }).rawPacket
  // An answer to HEAD has no body, even when the rest of the request could not be read.
  const head = raw?.subarray(0, 5).toString('latin1') === 'HEAD '
  if (err.code === 'HPE_INVALID_METHOD') {
    // A method token Node's parser does not know (FOO, lower-case get): the same 405 as for any other
    // method we do not serve. Bytes that are no method at all (TLS to an http port) stay a 400.
    const method = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) /.exec(raw?.subarray(0, 64).toString('latin1') ?? '')?.[1]
    if (method !== undefined) {
      writeRawAnswer(socket, config, 405, methodNotAllowedMessage(method), { allow: ALLOWED_METHODS }, false)
      return
    }
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  const message =
    status === 431
      ? `The address or headers of this request are too long (the limit is ${config.maxHeaderBytes} bytes). A DOI name is at most ${config.maxHandleLength} characters; check that the link was copied whole and nothing else.`
      : status === 408
        ? 'The request took too long to arrive.'
        : 'The request could not be read as HTTP.'
  writeRawAnswer(socket, config, status, message, {}, head)
}

/** How long a client may keep its side open after our answer on the raw socket. */
const LINGER_MS = 2_000

/** A whole answer with our HTML error page, written on the raw socket, which is then closed. */
function writeRawAnswer(
  socket: Duplex,
  config: EdgeConfig,
  status: number,
  message: string,
  headers: Record<string, string>,
  head: boolean
): void {
  const body = renderErrorPage({ baseUrl: configuredBaseUrl(config.publicBaseUrl) ?? '/' }, { status, message })
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\naccess-control-allow-origin: *\r\n${extra}connection: close\r\n\r\n${head ? '' : body}`
  )
  // end() waits for the client to close its side; one that never does (a CONNECT tunnel has no
  // timers of Node's left) is cut after a moment.
  const linger = setTimeout(() => socket.destroy(), LINGER_MS)
  linger.unref()
  socket.once('close', () => clearTimeout(linger))
}
