/**
 * Reading one file that a checked repository (or a command line) names, under limits: a checked
 * repository may be hostile, and no file of it may hang or exhaust the run (files.ts, allow.ts).
 */
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'

/** A file with a NUL byte this early is binary, as git decides. */
const BINARY_SNIFF_BYTES = 8000

/**
 * A file's bytes, under the limits every file check reads is held to: a regular file (a FIFO or a device
 * such as /dev/zero could block or stream forever), at most maxBytes (counted while reading: a file may
 * grow after its size was asked), and no NUL early on (binary). Undefined when there is no such file;
 * otherwise the reason it is not read.
 */
export async function readBounded(
  path: string,
  maxBytes: number,
  followLink: boolean
): Promise<{ bytes: Buffer } | { reason: string } | undefined> {
  let file
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it changes nothing for a regular file.
    file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | (followLink ? 0 : constants.O_NOFOLLOW))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    return { reason: code === 'ELOOP' && !followLink ? 'a symbolic link' : 'cannot be read' }
  }
  try {
    const info = await file.stat()
    if (!info.isFile()) return { reason: 'not a regular file' }
    if (info.size > maxBytes) return { reason: `larger than ${maxBytes} bytes` }
    // Room for the size stat gave and one byte more, grown (up to maxBytes + 1) if the file grew meanwhile.
    let buffer = Buffer.allocUnsafe(info.size + 1)
    let length = 0
    for (;;) {
      if (length === buffer.length) buffer = Buffer.concat([buffer, Buffer.allocUnsafe(Math.min(buffer.length, maxBytes + 1 - length))])
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
      if (length > maxBytes) return { reason: `larger than ${maxBytes} bytes` }
    }
    const bytes = buffer.subarray(0, length)
    return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0) ? { reason: 'binary' } : { bytes }
  } catch {
    return { reason: 'cannot be read' }
  } finally {
    await file.close()
  }
}
