import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string[]>
  body: string
}

/**
 * Send one request exactly as written (request target included) over a real socket: for what HTTP
 * libraries would clean up first, such as a raw '#' in the path or bytes that are not UTF-8.
 */
export async function rawRequest(app: FastifyInstance, target: string | Buffer, method = 'GET'): Promise<RawResponse> {
  if (app.server.listening === false) await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const head = Buffer.concat([
    Buffer.from(`${method} `),
    Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'),
    Buffer.from(` HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
  ])
  const raw = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head))
    const chunks: Buffer[] = []
    socket.on('data', (c) => chunks.push(c))
    socket.on('end', () => resolve(Buffer.concat(chunks)))
    socket.on('error', reject)
  })
  const text = raw.toString('latin1')
  const split = text.indexOf('\r\n\r\n')
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n')
  const headers: Record<string, string[]> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).toLowerCase()
    ;(headers[name] ??= []).push(line.slice(colon + 1).trim())
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4) }
}

/** What a client that sends its request slowly got: the status line's code (0: none), and when the socket closed. */
export interface DripResult {
  status: number
  closedAfterMs: number
  bytesSent: number
}

/**
 * Over a real socket, send `head` at once, then `drip` one byte every `intervalMs` (a slow client, or a
 * slowloris), repeating it until the server answers or closes, and at most `giveUpMs`.
 */
export async function dripRequest(
  port: number,
  opts: { head?: string; drip: string; intervalMs: number; giveUpMs: number }
): Promise<DripResult> {
  const started = Date.now()
  const bytes = opts.drip
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      if (opts.head !== undefined) socket.write(opts.head)
    })
    let answer = ''
    let sent = 0
    const timer = setInterval(() => {
      if (socket.writable) socket.write(bytes[sent++ % bytes.length] ?? '')
    }, opts.intervalMs)
    const giveUp = setTimeout(() => socket.destroy(), opts.giveUpMs)
    socket.on('data', (c: Buffer) => {
      answer += c.toString('latin1')
    })
    socket.on('error', () => {
      /* a reset ends it as a close does */
    })
    socket.on('close', () => {
      clearInterval(timer)
      clearTimeout(giveUp)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0), closedAfterMs: Date.now() - started, bytesSent: sent })
    })
  })
}
