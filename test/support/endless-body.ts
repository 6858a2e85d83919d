import type { ServerResponse } from 'node:http'

/**
 * An answer that never ends: `head`, then spaces as fast as the reader takes them, until it leaves. For
 * the fakes' "huge" modes, whose clients must stop at their byte limit rather than read on.
 */
export function sendEndless(res: ServerResponse, contentType: string, head: string): void {
  res.writeHead(200, { 'content-type': contentType })
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  const pump = (): void => {
    while (!res.destroyed && res.write(chunk)) {
      /* fill the socket */
    }
    if (!res.destroyed) res.once('drain', pump)
  }
  res.write(head)
  pump()
}
