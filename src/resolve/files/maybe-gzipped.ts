import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'

/**
 * A data file an operator downloads (a feed, a data set) read as it comes, gzipped or not: the first two
 * bytes say which (RFC 1952's magic), not the name. The stream's errors are the file's and gunzip's both;
 * destroying it closes the file.
 */
export async function openMaybeGzipped(path: string): Promise<Readable> {
  const gzip = await isGzip(path)
  const input = createReadStream(path)
  if (!gzip) return input
  const gunzip = createGunzip()
  input.on('error', (err) => gunzip.destroy(err))
  gunzip.on('close', () => input.destroy())
  return input.pipe(gunzip)
}

async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, 'r')
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(2), 0, 2, 0)
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b
  } finally {
    await handle.close()
  }
}
