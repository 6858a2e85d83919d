import { constants, openSync, writeSync } from 'node:fs'
import { pino } from 'pino'
import type { Config } from '../config/schema.js'

/** What waits for a slow log reader at most; beyond it lines are dropped, and counted. */
export const MAX_BUFFERED_LOG_BYTES = 1024 * 1024
/** How long the exit may spend writing what is still waiting: a stalled reader must not hold it up. */
const EXIT_FLUSH_MS = 500

/**
 * LOG_FORMAT: JSON lines on stdout, or pino-pretty's readable lines for a person at a terminal
 * (loaded only then). Either way the lines stop, and never throw, once stdout is gone.
 *
 * Written asynchronously, through a buffer of MAX_BUFFERED_LOG_BYTES, on a descriptor of our own that
 * never blocks: a stalled reader (docker's blocking log mode, a hung `| tee`, a paused pipe) must not
 * stop the server answering or hearing SIGTERM, as a synchronous write did. Lines beyond the buffer
 * are dropped, and a line says how many once the reader has caught up. At exit what waits is written for at most
 * EXIT_FLUSH_MS, and not at all once stdout is gone: pino's own flush at exit (sonic-boom's flushSync)
 * retries a failed write forever (EIO from a terminal gone, EPIPE from a reader gone).
 */
export async function logDestination(format: Config['logFormat']): Promise<pino.DestinationStream> {
  if (format === 'json' || (format === 'auto' && process.stdout.isTTY !== true)) return boundedOutput(nonBlockingStdout())
  const { prettyFactory } = await import('pino-pretty')
  const pretty = prettyFactory({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
  // prettyFactory, not pino-pretty's stream: that one is a pipeline that a failed write tears down,
  // after which every log call fails again.
  return boundedOutput(nonBlockingStdout(), pretty)
}

/**
 * stdout opened again, non-blocking: a write to a full pipe or terminal then fails with EAGAIN (and is
 * tried again later) instead of waiting, in a thread that the exit would wait for in turn. A new open,
 * not fd 1 made non-blocking: that one is shared with the parent (the shell, npm, a `| tee`'s other
 * writers). Where stdout cannot be opened again (a socket, as systemd's journal gives), fd 1 as it is.
 */
function nonBlockingStdout(): number {
  try {
    return openSync('/proc/self/fd/1', constants.O_WRONLY | constants.O_APPEND | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch {
    return 1
  }
}

type Output = ReturnType<typeof pino.destination>

/**
 * Lines to `fd` through a bounded buffer; `format` turns pino's JSON line into what is written.
 * A failed write to stdout (EIO: the terminal hung up; EPIPE: the reader left) is said once on stderr,
 * then every later line is dropped: pino would emit it as an 'error' nobody handles, thrown from
 * whatever logged (a request's log line, the shutdown).
 */
function boundedOutput(fd: number, format: (line: string) => string = (line) => line): pino.DestinationStream {
  const out = pino.destination({ dest: fd, sync: false, maxLength: MAX_BUFFERED_LOG_BYTES })
  let lost = false
  // Counted while the reader stalls; said once it has taken everything that waited (sonic-boom's
  // 'drain'), so the line saying it always fits.
  let dropped = 0
  out.on('drop', () => {
    dropped++
  })
  out.on('drain', () => {
    if (dropped === 0 || lost) return
    out.write(format(droppedLine(dropped)))
    dropped = 0
  })
  out.on('error', (err: NodeJS.ErrnoException) => {
    // Once: pino's own listener hands an error other than EPIPE on again, so it comes here twice.
    if (lost) return
    lost = true
    out.write = () => true
    out.flush = () => {}
    out.end = () => {}
    try {
      writeSync(2, `doi-proxy: writing the log failed (${err.code ?? err.message}); no more log lines\n`)
    } catch {
      /* stderr is often the same lost terminal */
    }
  })
  // pino calls this at exit (its on-exit hook): bounded, and nothing once stdout is gone.
  out.flushSync = () => {
    if (!lost) flushWithin(out, fd, EXIT_FLUSH_MS)
  }
  return { write: (line: string) => out.write(format(line)) }
}

/** pino's shape, so a log shipper reads it like the others. */
function droppedLine(count: number): string {
  return `${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, msg: `${count} log lines were dropped: the log reader was not taking them (more than ${MAX_BUFFERED_LOG_BYTES} bytes waited)` })}\n`
}

/**
 * What sonic-boom still holds, written for at most `ms`; given up on at the first error other than
 * EAGAIN (a full pipe or terminal), never retried forever. A write in flight is left to finish on its own,
 * as sonic-boom's flushSync leaves it.
 */
function flushWithin(out: Output, fd: number, ms: number): void {
  const held = out as unknown as { _bufs?: unknown; _writingBuf?: unknown; _writing?: unknown }
  if (!Array.isArray(held._bufs)) return
  const parts = [...(held._writing !== true ? [held._writingBuf] : []), ...held._bufs]
  let pending = Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(typeof p === 'string' ? p : ''))))
  held._bufs = []
  if (held._writing !== true) held._writingBuf = ''
  const deadline = performance.now() + ms
  const wait = new Int32Array(new SharedArrayBuffer(4))
  while (pending.length > 0) {
    try {
      pending = pending.subarray(writeSync(fd, pending))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || performance.now() > deadline) return
      Atomics.wait(wait, 0, 0, 10)
    }
  }
}
