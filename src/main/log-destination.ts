import { writeSync } from 'node:fs'
import { pino } from 'pino'
import type { Config } from '../config/schema.js'

/**
 * LOG_FORMAT: JSON lines on stdout, or pino-pretty's readable lines for a person at a terminal
 * (loaded only then). Either way the lines stop, and never throw, once stdout is gone.
 *
 * Written synchronously, each line as it is logged: an asynchronous destination keeps the lines a
 * stalled reader has not taken (without bound), and pino flushes them at exit with sonic-boom's
 * flushSync, which retries a failed write forever (EIO from a terminal gone, EPIPE from a reader gone):
 * the process then never exits and, inside its exit, no longer hears SIGTERM. Written at once, a lost
 * stdout is found at the line that meets it, and the exit has nothing left to flush.
 */
export async function logDestination (format: Config['logFormat']): Promise<pino.DestinationStream> {
  if (format === 'json' || (format === 'auto' && process.stdout.isTTY !== true)) return dropLinesOnceLost(pino.destination({ dest: 1, sync: true }))
  const { prettyFactory } = await import('pino-pretty')
  const pretty = prettyFactory({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
  // prettyFactory, not pino-pretty's stream: that one is a pipeline that a failed write tears down,
  // after which every log call fails again.
  const out = dropLinesOnceLost(pino.destination({ dest: 1, sync: true }))
  return { write: (line: string) => out.write(pretty(line)) }
}

type Output = ReturnType<typeof pino.destination>

/**
 * A failed write to stdout (EIO: the terminal hung up; EPIPE: the reader left) is said once on stderr,
 * then every later line is dropped: pino would emit it as an 'error' nobody handles, thrown from
 * whatever logged (a request's log line, the shutdown), and a flush at exit would throw again.
 */
function dropLinesOnceLost (out: Output): Output {
  let lost = false
  out.on('error', (err: NodeJS.ErrnoException) => {
    // Once: pino's own listener hands an error other than EPIPE on again, so it comes here twice.
    if (lost) return
    lost = true
    out.write = () => true
    out.flush = () => {}
    out.flushSync = () => {}
    out.end = () => {}
    try {
      writeSync(2, `doi-proxy: writing the log failed (${err.code ?? err.message}); no more log lines\n`)
    } catch { /* stderr is often the same lost terminal */ }
  })
  return out
}
