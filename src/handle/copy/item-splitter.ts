/**
 * Items cut from a stream of bytes, chunk by chunk, so an agency's file is never held whole (plan-43 §1.11:
 * parsing Crossref's 132 MB inner file at once cost twice the time per work, and all of it in memory). The
 * array splitter follows JSON's structure (depth and strings) only as far as needed to find the items of the
 * array at a path; each item is then JSON.parse'd alone by the caller, which names the ones that fail. An
 * item larger than `maxBytes` is never held: its bytes are dropped as they come and it is named. Inside a
 * string it jumps to the next quote (indexOf), and the values of the items' `dropKeys` (a Crossref work's
 * `reference` list: half its bytes, read by no mapper) are never held: they come out as `null`, so the
 * caller parses half the bytes.
 */

export interface SplitItem {
  /** The item's bytes (one JSON value, or one line). */
  bytes: Buffer
  /** Its number, from 1: the nth item of the array, or the line number. */
  index: number
  /** Byte offset of its start in the stream. */
  offset: number
}

export interface SplitProblem {
  /** The item it concerns, when it concerns one. */
  item?: number
  offset: number
  message: string
  /** Nothing more of the stream can be read (its structure is broken): later writes are ignored. */
  fatal: boolean
}

export interface Splitter {
  write(chunk: Buffer): void
  end(): void
  /** Items (or lines) ended so far, whether handed on, too large or empty. */
  readonly done: number
  /** Whether a fatal problem stopped it. */
  readonly stopped: boolean
}

export interface SplitterOptions {
  /** An item (or line) larger than this, in the input's bytes, is named and skipped. */
  maxBytes: number
  onItem: (item: SplitItem) => void
  onProblem: (problem: SplitProblem) => void
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const COMMA = 0x2c
const COLON = 0x3a
const NEWLINE = 0x0a
const RETURN = 0x0d
const NULL = Buffer.from('null')
// A key longer than this is none of the dropKeys: not gathered across chunks.
const LONGEST_DROP_KEY = 64
// Keys longer than this are no key of a path we look for: not kept.
const LONGEST_KEY = 256

// What a JSON value starts with: { [ " - 0–9 t f n.
const startsValue = (c: number): boolean =>
  c === OPEN_OBJECT || c === OPEN_ARRAY || c === QUOTE || c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

interface Frame {
  object: boolean
  /** The key whose value comes next (objects). */
  key: string | undefined
  expectKey: boolean
  /** This array holds the items. */
  target: boolean
}

/** Where an array splitter is in its stream: the path outside items, the item being cut inside one. */
interface SplitState {
  readonly path: readonly string[]
  readonly maxBytes: number
  readonly onItem: (item: SplitItem) => void
  readonly onProblem: (problem: SplitProblem) => void
  stack: Frame[]
  /** Byte offset of the chunk being written. */
  offset: number
  done: number
  stopped: boolean
  rootClosed: boolean
  seenTarget: boolean
  // Outside items.
  inString: boolean
  escape: boolean
  keyBytes: number[] | undefined
  // Inside an item.
  inItem: boolean
  itemDepth: number
  itemString: boolean
  itemEscape: boolean
  itemScalar: boolean
  itemOffset: number
  itemParts: Buffer[]
  itemSize: number
  itemOver: boolean
  /** Where the item's bytes start in the chunk being written; -1: none in it. */
  start: number
  // Dropping a key's value (dropKeys), at the item's top level (depth 1 of an object item).
  readonly dropKeys: ReadonlySet<string> | undefined
  /** The item is an object (its keys are read for dropKeys). */
  itemObject: boolean
  /** At depth 1, the next string is a key. */
  expectKey: boolean
  /** Inside a key at depth 1: where its bytes start in this chunk, and those of earlier chunks. */
  keyStart: number
  keyCarry: Buffer | undefined
  /** The key just read is one of dropKeys: its value, if an object or array, is dropped. */
  dropNext: boolean
  dropping: boolean
  /** Where the dropped bytes start in the chunk being written. */
  dropFrom: number
}

/**
 * The items of the JSON array at `path` (object keys from the root; [] for a root array). `dropKeys`: keys of
 * an object item whose object or array value is replaced by `null` (their bytes still count for maxBytes).
 */
export function createItemSplitter(opts: SplitterOptions & { path: readonly string[]; dropKeys?: readonly string[] }): Splitter {
  const s: SplitState = {
    path: opts.path,
    maxBytes: opts.maxBytes,
    onItem: opts.onItem,
    onProblem: opts.onProblem,
    stack: [],
    offset: 0,
    done: 0,
    stopped: false,
    rootClosed: false,
    seenTarget: false,
    inString: false,
    escape: false,
    keyBytes: undefined,
    inItem: false,
    itemDepth: 0,
    itemString: false,
    itemEscape: false,
    itemScalar: false,
    itemOffset: 0,
    itemParts: [],
    itemSize: 0,
    itemOver: false,
    start: -1,
    dropKeys: opts.dropKeys === undefined || opts.dropKeys.length === 0 ? undefined : new Set(opts.dropKeys),
    itemObject: false,
    expectKey: false,
    keyStart: -1,
    keyCarry: undefined,
    dropNext: false,
    dropping: false,
    dropFrom: 0
  }
  return {
    get done() {
      return s.done
    },
    get stopped() {
      return s.stopped
    },
    write: (chunk) => writeChunk(s, chunk),
    end: () => endStream(s)
  }
}

function stop(s: SplitState, at: number, message: string): void {
  s.stopped = true
  s.onProblem({ offset: at, message, fatal: true, ...(s.inItem ? { item: s.done + 1 } : {}) })
}

function isTargetPath(s: SplitState): boolean {
  if (s.stack.length !== s.path.length) return false
  return s.stack.every((f, i) => f.object && f.key === s.path[i])
}

function startItem(s: SplitState, at: number): void {
  s.inItem = true
  s.itemDepth = 0
  s.itemString = false
  s.itemEscape = false
  s.itemScalar = false
  s.itemOffset = at
  s.itemParts = []
  s.itemSize = 0
  s.itemOver = false
  s.itemObject = false
  s.expectKey = false
  s.keyStart = -1
  s.keyCarry = undefined
  s.dropNext = false
  s.dropping = false
}

function keep(s: SplitState, part: Buffer): void {
  if (s.itemOver) return
  s.itemSize += part.length
  if (s.itemSize > s.maxBytes) {
    s.itemOver = true
    s.itemParts = []
    return
  }
  s.itemParts.push(part)
}

/** Bytes of the item not held (a dropped value): they count for maxBytes all the same. */
function passOver(s: SplitState, bytes: number): void {
  if (s.itemOver) return
  s.itemSize += bytes
  if (s.itemSize > s.maxBytes) {
    s.itemOver = true
    s.itemParts = []
  }
}

/** The item ends with the bytes of `chunk` before `end`: handed on, or named when too large. */
function endItem(s: SplitState, chunk: Buffer, end: number): void {
  keep(s, chunk.subarray(s.start, end))
  s.start = -1
  s.inItem = false
  s.done++
  if (s.itemOver) {
    s.onProblem({
      item: s.done,
      offset: s.itemOffset,
      message: `the item is larger than ${s.maxBytes} bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped`,
      fatal: false
    })
  } else {
    const bytes = s.itemParts.length === 1 ? s.itemParts[0]! : Buffer.concat(s.itemParts)
    s.onItem({ bytes, index: s.done, offset: s.itemOffset })
  }
  s.itemParts = []
}

function writeChunk(s: SplitState, chunk: Buffer): void {
  if (s.stopped) return
  s.start = s.inItem && !s.dropping ? 0 : -1
  s.dropFrom = 0
  if (s.keyStart >= 0) s.keyStart = 0
  const length = chunk.length
  for (let i = 0; i < length; i++) {
    if (s.inItem && s.itemString && !s.itemEscape) {
      // Inside a string: straight to its closing quote, which itemByte then reads.
      const q = closingQuote(chunk, i)
      if (q < 0) {
        s.itemEscape = trailingEscape(chunk, i)
        break
      }
      i = q
    }
    const c = chunk[i]!
    const ok = s.inItem ? itemByte(s, chunk, i, c) : betweenItems(s, i, c)
    if (!ok) return
  }
  if (s.inItem) {
    if (s.dropping) passOver(s, length - s.dropFrom)
    else if (s.start >= 0) keep(s, chunk.subarray(s.start))
    if (s.keyStart >= 0) carryKey(s, chunk)
  }
  s.offset += length
}

/** The first quote at or after `from` that no backslash escapes (the string is open at `from`, no escape pending); -1 none. */
function closingQuote(chunk: Buffer, from: number): number {
  let at = from
  for (;;) {
    const q = chunk.indexOf(QUOTE, at)
    if (q < 0) return -1
    let b = q - 1
    while (b >= from && chunk[b] === BACKSLASH) b--
    if ((q - 1 - b) % 2 === 0) return q
    at = q + 1
  }
}

/** Whether the chunk ends with an odd run of backslashes (after `from`): the next chunk's first byte is escaped. */
function trailingEscape(chunk: Buffer, from: number): boolean {
  let b = chunk.length - 1
  while (b >= from && chunk[b] === BACKSLASH) b--
  return (chunk.length - 1 - b) % 2 === 1
}

/** A key at depth 1 goes on into the next chunk: its bytes so far kept, unless it is longer than any key dropped. */
function carryKey(s: SplitState, chunk: Buffer): void {
  const part = chunk.subarray(s.keyStart)
  const carried = s.keyCarry === undefined ? Buffer.from(part) : Buffer.concat([s.keyCarry, part])
  s.keyCarry = carried.length > LONGEST_DROP_KEY ? undefined : carried
  if (s.keyCarry === undefined) s.keyStart = -1
}

/** A key at depth 1 ended before `end`: whether its value is to be dropped. */
function endKey(s: SplitState, chunk: Buffer, end: number): void {
  const tail = chunk.subarray(s.keyStart, end)
  const key = s.keyCarry === undefined ? tail : Buffer.concat([s.keyCarry, tail])
  s.dropNext = key.length <= LONGEST_DROP_KEY && s.dropKeys!.has(key.toString('latin1'))
  s.keyStart = -1
  s.keyCarry = undefined
}

/** The value of a dropped key begins at `i` ({ or [): the item's bytes before it kept, `null` in its place. */
function startDrop(s: SplitState, chunk: Buffer, i: number): void {
  if (s.start >= 0) keep(s, chunk.subarray(s.start, i))
  if (!s.itemOver) s.itemParts.push(NULL)
  s.start = -1
  s.dropping = true
  s.dropFrom = i
}

/** The dropped value ends before `end`: the item's bytes are kept again from there. */
function endDrop(s: SplitState, end: number): void {
  passOver(s, end - s.dropFrom)
  s.dropping = false
  s.start = end
}

/** One byte inside an item; false when it broke the structure. */
function itemByte(s: SplitState, chunk: Buffer, i: number, c: number): boolean {
  if (s.itemString) {
    if (s.itemEscape) s.itemEscape = false
    else if (c === BACKSLASH) s.itemEscape = true
    else if (c === QUOTE) {
      s.itemString = false
      if (s.keyStart >= 0) endKey(s, chunk, i)
      if (s.itemScalar && s.itemDepth === 0) endItem(s, chunk, i + 1)
    }
    return true
  }
  if (s.dropNext && s.itemDepth === 1 && !s.expectKey && !isSpace(c) && c !== COLON) {
    // The first byte of a dropped key's value: an object or array is dropped, anything else kept.
    s.dropNext = false
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) startDrop(s, chunk, i)
  }
  if (c === QUOTE) {
    s.itemString = true
    if (s.expectKey && s.itemDepth === 1) s.keyStart = i + 1
    return true
  }
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    s.itemDepth++
    return true
  }
  if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
    if (s.itemDepth === 0) {
      // A number, true, false or null ended by the array's ]: the ] is the array's.
      endItem(s, chunk, i)
      return structural(s, c, s.offset + i)
    }
    s.itemDepth--
    if (s.itemDepth === 0) endItem(s, chunk, i + 1)
    else if (s.itemDepth === 1 && s.dropping) endDrop(s, i + 1)
    return true
  }
  if (s.itemDepth === 1 && s.itemObject) {
    if (c === COLON) s.expectKey = false
    else if (c === COMMA) s.expectKey = true
  }
  if (c === COMMA && s.itemDepth === 0) endItem(s, chunk, i)
  return true
}

/** One byte between items: an item starts at the first byte of a value in the target array. */
function betweenItems(s: SplitState, i: number, c: number): boolean {
  const top = s.stack[s.stack.length - 1]
  if (s.inString || top?.target !== true || isSpace(c) || c === COMMA || c === CLOSE_ARRAY) return structural(s, c, s.offset + i)
  const at = s.offset + i
  if (!startsValue(c)) {
    stop(s, at, `JSON error at byte ${at}: an unexpected ${String.fromCharCode(c)}; the rest of the file is skipped`)
    return false
  }
  startItem(s, at)
  s.start = i
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    s.itemDepth = 1
    // An object item's keys are read when some are to be dropped.
    s.itemObject = c === OPEN_OBJECT && s.dropKeys !== undefined
    s.expectKey = s.itemObject
  } else {
    s.itemScalar = true
    if (c === QUOTE) s.itemString = true
  }
  return true
}

/** One byte inside a string outside any item: a key of an object is kept, to follow the path. */
function stringByte(s: SplitState, c: number, top: Frame | undefined): void {
  if (s.escape) s.escape = false
  else if (c === BACKSLASH) s.escape = true
  else if (c === QUOTE) {
    s.inString = false
    if (s.keyBytes !== undefined && top !== undefined) top.key = Buffer.from(s.keyBytes).toString('utf8')
    s.keyBytes = undefined
    return
  }
  if (s.keyBytes !== undefined) {
    if (s.keyBytes.length < LONGEST_KEY) s.keyBytes.push(c)
    else s.keyBytes = undefined
  }
}

/** One byte outside any item; false when it broke the structure. */
function structural(s: SplitState, c: number, at: number): boolean {
  const top = s.stack[s.stack.length - 1]
  if (s.inString) {
    stringByte(s, c, top)
    return true
  }
  if (isSpace(c)) return true
  if (s.rootClosed) {
    stop(s, at, `JSON error at byte ${at}: more after the end of the JSON value`)
    return false
  }
  if (top === undefined && c !== OPEN_OBJECT && c !== OPEN_ARRAY) {
    stop(s, at, `JSON error at byte ${at}: the file does not start with { or [`)
    return false
  }
  switch (c) {
    case QUOTE:
      s.inString = true
      s.escape = false
      if (top?.object === true && top.expectKey) {
        s.keyBytes = []
        top.key = undefined
      }
      return true
    case COLON:
      if (top?.object === true) top.expectKey = false
      return true
    case COMMA:
      if (top?.object === true) top.expectKey = true
      return true
    case OPEN_OBJECT:
    case OPEN_ARRAY: {
      const target = c === OPEN_ARRAY && !s.seenTarget && isTargetPath(s)
      if (target) s.seenTarget = true
      s.stack.push({ object: c === OPEN_OBJECT, key: undefined, expectKey: c === OPEN_OBJECT, target })
      return true
    }
    case CLOSE_OBJECT:
    case CLOSE_ARRAY:
      return close(s, c, at, top)
    default:
      return true
  }
}

function close(s: SplitState, c: number, at: number, top: Frame | undefined): boolean {
  if (top === undefined || top.object !== (c === CLOSE_OBJECT)) {
    stop(s, at, `JSON error at byte ${at}: an unexpected ${String.fromCharCode(c)}; the rest of the file is skipped`)
    return false
  }
  s.stack.pop()
  if (s.stack.length === 0) s.rootClosed = true
  return true
}

function endStream(s: SplitState): void {
  if (s.stopped) return
  if (s.inItem) {
    s.stopped = true
    s.onProblem({ item: s.done + 1, offset: s.itemOffset, message: 'the file ends inside this item: it was cut off', fatal: true })
    return
  }
  if (!s.rootClosed && s.stack.length > 0) {
    s.stopped = true
    s.onProblem({ offset: s.offset, message: 'the file ends before its JSON does: it was cut off', fatal: true })
    return
  }
  if (!s.seenTarget) {
    const message = s.path.length === 0 ? 'no array of items' : `no array of items at ${s.path.map((k) => JSON.stringify(k)).join(' › ')}`
    s.onProblem({ offset: s.offset, message, fatal: true })
  }
}

/** One item a line (JSON lines, CSV rows): blank lines are skipped, a line over `maxBytes` is named and dropped as it comes. */
export function createLineSplitter(opts: SplitterOptions): Splitter {
  const { maxBytes, onItem, onProblem } = opts
  let offset = 0
  let line = 0
  let parts: Buffer[] = []
  let size = 0
  let over = false
  let lineOffset = 0

  function endLine(): void {
    line++
    if (over) {
      onProblem({
        item: line,
        offset: lineOffset,
        message: `the line is longer than ${maxBytes} bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped`,
        fatal: false
      })
    } else {
      let bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
      if (bytes[bytes.length - 1] === RETURN) bytes = bytes.subarray(0, bytes.length - 1)
      if (bytes.some((c) => !isSpace(c))) onItem({ bytes, index: line, offset: lineOffset })
    }
    parts = []
    size = 0
    over = false
  }

  function keep(part: Buffer): void {
    if (over) return
    size += part.length
    if (size > maxBytes + 1) {
      over = true
      parts = []
      return
    }
    parts.push(part)
  }

  return {
    get done() {
      return line
    },
    stopped: false,
    write(chunk) {
      let start = 0
      for (;;) {
        const nl = chunk.indexOf(NEWLINE, start)
        if (nl < 0) break
        keep(chunk.subarray(start, nl))
        endLine()
        start = nl + 1
        lineOffset = offset + start
      }
      if (start < chunk.length) keep(chunk.subarray(start))
      offset += chunk.length
    },
    end() {
      if (size > 0 || over) endLine()
    }
  }
}
