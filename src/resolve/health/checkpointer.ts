import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/**
 * Checkpoints of the health history off the event loop (issue 42, plan D3). With SQLite's own autocheckpoint
 * the checkpoint runs inside the commit that crosses 1000 pages: measured on 10 M rows, a 500-row prune batch then
 * took up to 456 ms on the loop instead of under 100. So the writer turns it off (`wal_autocheckpoint = 0`) and a
 * worker thread, with a connection of its own, copies the log into the file every few seconds (PASSIVE: never
 * waits for readers or the writer) and, when the `-wal` file has grown past `truncateBytes`, once more with
 * TRUNCATE so the file shrinks back (a long reader had held it).
 */

export interface CheckpointerOptions {
  everyMs: number
  truncateBytes: number
  log?: { warn(obj: object, msg: string): void }
}

export interface Checkpointer {
  /** Stops the thread (its connection closed); resolves when it has ended. */
  stop(): Promise<void>
}

// CommonJS, run by the thread: better-sqlite3 is required by the path the parent resolved.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads')
const { statSync } = require('node:fs')
const Database = require(workerData.module)
const db = new Database(workerData.file, { fileMustExist: true })
db.pragma('busy_timeout = 5000')
const walSize = () => { try { return statSync(workerData.file + '-wal').size } catch { return 0 } }
const once = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)')
    if (walSize() > workerData.truncateBytes) db.pragma('wal_checkpoint(TRUNCATE)')
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) })
  }
}
const timer = setInterval(once, workerData.everyMs)
parentPort.on('message', (message) => {
  if (message !== 'stop') return
  clearInterval(timer)
  db.close()
  parentPort.close()
})
`

/** Start checkpointing `file` (a WAL database another connection writes). */
export function startCheckpointer(file: string, opts: CheckpointerOptions): Checkpointer {
  const module = createRequire(import.meta.url).resolve('better-sqlite3')
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: { module, file, everyMs: opts.everyMs, truncateBytes: opts.truncateBytes }
  })
  // Never what keeps the process alive.
  worker.unref()
  let warned = false
  worker.on('message', (message: { error?: string }) => {
    if (message.error === undefined || warned) return
    // Once: a busy file retries at the next turn; the writer's own commits are unaffected.
    warned = true
    opts.log?.warn({ file, err: message.error }, 'a checkpoint of the health history failed; retried every turn')
  })
  const ended = new Promise<void>((resolve) => {
    worker.once('exit', () => resolve())
    worker.once('error', (err) => {
      opts.log?.warn({ file, err: err.message }, 'the health history checkpointer stopped')
    })
  })
  return {
    async stop() {
      // Held while it ends: an unreferenced thread would let the process leave before the caller's next step.
      worker.ref()
      worker.postMessage('stop')
      await ended
    }
  }
}
