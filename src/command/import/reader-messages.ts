import type { EncodedRecord } from '../../handle/copy/types.js'
import type { UnitBatch, UnitEnd, UnitOptions } from './worker.js'

/**
 * What crosses between the import's main thread and a reading thread (readers.ts, reader-thread.ts), and a
 * batch's records packed for the crossing: ten thousand small Buffers cloned one by one would each clone the
 * whole memory they are a view of, so their bytes travel in one buffer that is moved, not copied.
 */

/** A batch as it crosses: its records' keys and values end to end in `bytes`, the rest as it is. */
export interface PackedBatch extends Omit<UnitBatch, 'entries'> {
  bytes: Uint8Array
  /** For each record, where its key ends and where its value ends in `bytes`. */
  ends: Uint32Array
}

/** An error of the unit's bytes as they were read (a gzip or tar cut off): its code says which words name it. */
export interface ReadFault {
  message: string
  code?: string
}

export type ToReader =
  | { type: 'unit'; id: number; opts: UnitOptions }
  | { type: 'chunk'; id: number; bytes: Uint8Array }
  | { type: 'end'; id: number; fault?: ReadFault }
  /** A batch was committed: the thread may send one more. */
  | { type: 'ack' }

export type FromReader =
  /** The thread took a chunk of the unit to read: that many bytes less in flight. */
  | { type: 'took'; id: number; bytes: number }
  | { type: 'batch'; id: number; batch: PackedBatch }
  | { type: 'done'; id: number; end: UnitEnd }
  /** The unit's reading failed in a way readUnit does not name as a problem (a bug): the import stops. */
  | { type: 'failed'; id: number; message: string }

/** The batch packed, and the buffers to move with it. */
export function packBatch(batch: UnitBatch): { packed: PackedBatch; transfer: ArrayBuffer[] } {
  const { entries, ...rest } = batch
  let size = 0
  for (const e of entries) size += e.key.length + e.value.length
  const bytes = new Uint8Array(size)
  const ends = new Uint32Array(entries.length * 2)
  let at = 0
  for (const [i, e] of entries.entries()) {
    bytes.set(e.key, at)
    at += e.key.length
    ends[2 * i] = at
    bytes.set(e.value, at)
    at += e.value.length
    ends[2 * i + 1] = at
  }
  return { packed: { ...rest, bytes, ends }, transfer: [bytes.buffer as ArrayBuffer, ends.buffer as ArrayBuffer] }
}

/** The batch again, its records views of the one buffer (the writer copies them into the store). */
export function unpackBatch(packed: PackedBatch): UnitBatch {
  const { bytes, ends, ...rest } = packed
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const entries: EncodedRecord[] = []
  let at = 0
  for (let i = 0; i < ends.length; i += 2) {
    const keyEnd = ends[i]!
    const valueEnd = ends[i + 1]!
    entries.push({ key: buf.subarray(at, keyEnd), value: buf.subarray(keyEnd, valueEnd) })
    at = valueEnd
  }
  return { ...rest, entries }
}

/** A copy of a chunk in memory of its own, to be moved: a chunk is often a view of a larger buffer others still use. */
export function ownCopy(chunk: Uint8Array): Uint8Array {
  const copy = new Uint8Array(chunk.length)
  copy.set(chunk)
  return copy
}
