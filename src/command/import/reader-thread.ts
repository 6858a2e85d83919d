import { parentPort } from 'node:worker_threads'
import { packBatch } from './reader-messages.js'
import type { FromReader, ReadFault, ToReader } from './reader-messages.js'
import { readUnit } from './worker.js'
import type { UnitBatch } from './worker.js'

/**
 * A reading thread of `doi-proxy import --jobs N` (readers.ts): the units the main thread hands it, one after
 * the other, each gunzipped, split, parsed, mapped and encoded by readUnit (worker.ts) as in one thread; its
 * batches go back packed, at most MAX_UNACKED of them not yet committed (the thread waits: back-pressure).
 * The chunks wait here until readUnit takes them; the main thread sends no more than its credit allows.
 */

// Batches sent and not yet committed: one being committed, one ready behind it.
const MAX_UNACKED = 2

const port = parentPort
if (port === null) throw new Error('reader-thread.ts runs in a worker thread')

/** The chunks of one unit, as the main thread sends them, read by readUnit as a stream. */
interface Feed {
  readonly id: number
  chunks: Buffer[]
  ended: boolean
  fault: ReadFault | undefined
  wake: (() => void) | undefined
}

const feeds = new Map<number, Feed>()
const queue: number[] = []
let reading = false
let unacked = 0
let acked: (() => void) | undefined

function post(message: FromReader, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(message, transfer)
}

function feedOf(id: number): Feed {
  let feed = feeds.get(id)
  if (feed === undefined) {
    feed = { id, chunks: [], ended: false, fault: undefined, wake: undefined }
    feeds.set(id, feed)
  }
  return feed
}

function poke(feed: Feed): void {
  const wake = feed.wake
  feed.wake = undefined
  wake?.()
}

async function* chunksOf(feed: Feed): AsyncGenerator<Buffer> {
  for (;;) {
    const chunk = feed.chunks.shift()
    if (chunk !== undefined) {
      post({ type: 'took', id: feed.id, bytes: chunk.length })
      yield chunk
      continue
    }
    if (feed.ended) {
      if (feed.fault !== undefined) throw Object.assign(new Error(feed.fault.message), { code: feed.fault.code })
      return
    }
    await new Promise<void>((resolve) => {
      feed.wake = resolve
    })
  }
}

async function sendBatch(id: number, batch: UnitBatch): Promise<void> {
  const { packed, transfer } = packBatch(batch)
  post({ type: 'batch', id, batch: packed }, transfer)
  unacked++
  for (;;) {
    if (unacked < MAX_UNACKED) return
    await new Promise<void>((resolve) => {
      acked = resolve
    })
  }
}

async function readNext(): Promise<void> {
  if (reading) return
  reading = true
  try {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      const feed = feedOf(id)
      const opts = units.get(id)!
      units.delete(id)
      try {
        const end = await readUnit(chunksOf(feed), opts, (batch) => sendBatch(id, batch))
        post({ type: 'done', id, end })
      } catch (err) {
        post({ type: 'failed', id, message: err instanceof Error ? (err.stack ?? err.message) : String(err) })
      } finally {
        feeds.delete(id)
      }
    }
  } finally {
    reading = false
  }
}

const units = new Map<number, Extract<ToReader, { type: 'unit' }>['opts']>()

port.on('message', (m: ToReader) => {
  switch (m.type) {
    case 'unit':
      units.set(m.id, m.opts)
      feedOf(m.id)
      queue.push(m.id)
      // Its failures are posted unit by unit; anything else ends the thread, which the main thread sees.
      readNext().catch((err: unknown) => {
        setImmediate(() => {
          throw err
        })
      })
      return
    case 'chunk': {
      const feed = feedOf(m.id)
      feed.chunks.push(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength))
      poke(feed)
      return
    }
    case 'end': {
      const feed = feedOf(m.id)
      feed.ended = true
      feed.fault = m.fault
      poke(feed)
      return
    }
    case 'ack': {
      unacked--
      const wake = acked
      acked = undefined
      wake?.()
    }
  }
})
