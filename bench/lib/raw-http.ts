/**
 * HTTP/1.1 over a raw TCP socket, for the fuzzer (bench/fuzz.ts): requests go out byte for byte as
 * written (invalid request targets, absolute form, odd methods and headers included), over a
 * keep-alive connection, and answers are parsed strictly enough to notice a broken one: the status
 * line, every header line as sent (so a bare CR or LF in the header block shows), and the body by
 * Content-Length, chunked encoding or connection close.
 */
import { connect } from 'node:net'
import type { Socket } from 'node:net'

export interface RawAnswer {
  status: number
  /** The header block as sent, latin1-decoded, without the final blank line. */
  head: string
  /** name (lower case) → values, in order. */
  headers: Map<string, string[]>
  body: Buffer
  /** The server closed the connection after this answer (or said it would). */
  closes: boolean
}

export class RawError extends Error {
  constructor(
    readonly kind: 'no answer' | 'timeout' | 'malformed answer' | 'connect failed',
    detail: string,
    readonly received = 0
  ) {
    super(`${kind}: ${detail}`)
  }
}

type Parsed = { answer: RawAnswer; used: number } | undefined

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: [^\r\n]*)?$/

/** Parse one answer from the start of `buf`; undefined when more bytes are needed. Throws RawError on nonsense. */
export function parseAnswer(buf: Buffer, method: string, ended: boolean): Parsed {
  let offset = 0
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', offset)
    if (headEnd < 0) {
      if (ended) {
        throw new RawError(
          buf.length === 0 ? 'no answer' : 'malformed answer',
          buf.length === 0
            ? 'connection closed'
            : `connection closed inside the header block after ${JSON.stringify(buf.subarray(0, 120).toString('latin1'))}`,
          buf.length
        )
      }
      if (buf.length - offset > 1024 * 1024) throw new RawError('malformed answer', 'header block over 1 MiB', buf.length)
      return undefined
    }
    const head = buf.subarray(offset, headEnd).toString('latin1')
    const [statusLine = '', ...lines] = head.split('\r\n')
    const m = STATUS_LINE.exec(statusLine)
    if (m === null) throw new RawError('malformed answer', `status line ${JSON.stringify(statusLine.slice(0, 80))}`, buf.length)
    const status = Number(m[1])
    const headers = new Map<string, string[]>()
    for (const line of lines) {
      const colon = line.indexOf(':')
      const name = (colon < 0 ? line : line.slice(0, colon)).toLowerCase()
      const list = headers.get(name)
      const value = colon < 0 ? '' : line.slice(colon + 1).trim()
      if (list === undefined) headers.set(name, [value])
      else list.push(value)
    }
    const bodyStart = headEnd + 4
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    if (status >= 100 && status < 200 && status !== 101) {
      offset = bodyStart
      continue
    }
    const connection = (headers.get('connection') ?? []).join(',').toLowerCase()
    const closes = connection.includes('close')
    const done = (body: Buffer, used: number, closesToo = closes): Parsed => ({
      answer: { status, head, headers, body, closes: closesToo },
      used
    })
    if (method === 'HEAD' || status === 204 || status === 304) return done(Buffer.alloc(0), bodyStart)
    const te = (headers.get('transfer-encoding') ?? []).join(',').toLowerCase()
    if (te.includes('chunked')) {
      const chunks: Buffer[] = []
      let at = bodyStart
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', at)
        if (lineEnd < 0) return needMore(ended, buf.length)
        const size = parseInt(buf.subarray(at, lineEnd).toString('latin1').split(';')[0] ?? '', 16)
        if (!Number.isFinite(size) || size < 0) throw new RawError('malformed answer', 'bad chunk size', buf.length)
        if (size === 0) {
          const end = buf.indexOf('\r\n\r\n', lineEnd)
          if (end < 0) return needMore(ended, buf.length)
          return done(Buffer.concat(chunks), end + 4)
        }
        if (buf.length < lineEnd + 2 + size + 2) return needMore(ended, buf.length)
        chunks.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size))
        at = lineEnd + 2 + size + 2
      }
    }
    const cl = headers.get('content-length')
    if (cl !== undefined) {
      if (cl.length > 1 && new Set(cl).size > 1) {
        throw new RawError('malformed answer', `several Content-Length values ${cl.join(', ')}`, buf.length)
      }
      const length = Number(cl[0])
      if (!Number.isSafeInteger(length) || length < 0) throw new RawError('malformed answer', `Content-Length ${cl[0]}`, buf.length)
      if (buf.length < bodyStart + length) return needMore(ended, buf.length)
      return done(Buffer.from(buf.subarray(bodyStart, bodyStart + length)), bodyStart + length)
    }
    // Neither: the body runs to the end of the connection.
    if (!ended) return undefined
    return done(Buffer.from(buf.subarray(bodyStart)), buf.length, true)
  }
}

function needMore(ended: boolean, received: number): undefined {
  if (ended) throw new RawError('malformed answer', 'connection closed inside the body', received)
  return undefined
}

/** One keep-alive connection; `send` waits for the whole answer. Reconnects when the server closed. */
export class RawConnection {
  private socket: Socket | undefined
  private buf: Buffer = Buffer.alloc(0)
  private ended = false
  private waiter: (() => void) | undefined
  private error: Error | undefined
  /** Answers received on the current socket. */
  private answers = 0
  /** Answers followed at once by bytes nobody asked for (the connection was dropped). */
  extraAnswers = 0

  constructor(
    private readonly port: number,
    private readonly host: string,
    private readonly localAddress: string
  ) {}

  private async open(timeoutMs: number): Promise<void> {
    this.close()
    this.buf = Buffer.alloc(0)
    this.ended = false
    this.error = undefined
    this.answers = 0
    const socket = connect({ port: this.port, host: this.host, localAddress: this.localAddress, noDelay: true })
    this.socket = socket
    // Events of a socket we have already replaced must not touch the new one's state.
    const mine = (): boolean => this.socket === socket
    socket.on('data', (chunk: Buffer) => {
      if (!mine()) return
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
      this.waiter?.()
    })
    socket.on('end', () => {
      if (mine()) {
        this.ended = true
        this.waiter?.()
      }
    })
    socket.on('close', () => {
      if (mine()) {
        this.ended = true
        this.waiter?.()
      }
    })
    socket.on('error', (err) => {
      if (mine()) {
        this.error = err
        this.ended = true
        this.waiter?.()
      }
    })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new RawError('connect failed', 'timeout')), timeoutMs)
      socket.once('connect', () => {
        clearTimeout(timer)
        resolve()
      })
      socket.once('error', (err) => {
        clearTimeout(timer)
        reject(new RawError('connect failed', (err as NodeJS.ErrnoException).code ?? err.message))
      })
    })
  }

  close(): void {
    this.socket?.destroy()
    this.socket = undefined
  }

  /** Send `request` and wait for one answer. A reused connection closed before any byte came back is retried once on a new one. */
  async send(request: Buffer, method: string, timeoutMs: number): Promise<RawAnswer> {
    const reused = this.socket !== undefined && !this.ended && this.answers > 0
    try {
      return await this.sendOnce(request, method, timeoutMs, reused)
    } catch (err) {
      if (reused && err instanceof RawError && err.kind === 'no answer' && err.received === 0) {
        return await this.sendOnce(request, method, timeoutMs, false)
      }
      throw err
    }
  }

  private async sendOnce(request: Buffer, method: string, timeoutMs: number, reuse: boolean): Promise<RawAnswer> {
    if (!reuse || this.socket === undefined || this.ended) await this.open(timeoutMs)
    const socket = this.socket
    if (socket === undefined) throw new RawError('connect failed', 'no socket')
    socket.write(request)
    const deadline = Date.now() + timeoutMs
    try {
      for (;;) {
        const parsed = parseAnswer(this.buf, method, this.ended)
        if (parsed !== undefined) {
          this.buf = this.buf.subarray(parsed.used)
          this.answers++
          // We never pipeline: bytes after an answer mean the server sent more than it announced.
          if (this.buf.length > 0) this.extraAnswers++
          // A HEAD answer may still be followed by a body the server should not have sent (a server's
          // answer to a request its HTTP parser refused may): never reuse such a connection.
          if (parsed.answer.closes || this.ended || method === 'HEAD' || this.buf.length > 0) this.close()
          return parsed.answer
        }
        const left = deadline - Date.now()
        if (left <= 0) throw new RawError('timeout', `no complete answer within ${timeoutMs} ms`, this.buf.length)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          this.waiter = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        this.waiter = undefined
      }
    } catch (err) {
      this.close()
      if (err instanceof RawError && err.kind === 'no answer' && this.error !== undefined) {
        throw new RawError('no answer', (this.error as NodeJS.ErrnoException).code ?? this.error.message, err.received)
      }
      throw err
    }
  }
}
