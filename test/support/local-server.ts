/**
 * The start and stop of a fake's HTTP server: on 127.0.0.1 at a free port, every request handed to the
 * fake, and a close that drops the connections still open first (a fake stalling a body must not keep
 * the test waiting).
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface LocalServer {
  /** http://127.0.0.1:PORT */
  readonly url: string
  close(): Promise<void>
}

export async function startLocalServer(onRequest: (req: IncomingMessage, res: ServerResponse) => void): Promise<LocalServer> {
  const server = createServer(onRequest)
  const sockets = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
