/**
 * Items cut from a stream of bytes, chunk by chunk, so an agency's file is never held whole (plan-43 §1.11:
 * parsing Crossref's 132 MB inner file at once cost twice the time per work, and all of it in memory). The
 * array splitter follows JSON's structure (depth and strings) only as far as needed to find the items of the
 * array at a path; each item is then JSON.parse'd alone by the caller, which names the ones that fail. An
 * item larger than `maxBytes` is never held: its bytes are dropped as they come and it is named.
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

/** The items of the JSON array at `path` (object keys from the root; [] for a root array). */
export function createItemSplitter(opts: SplitterOptions & { path: readonly string[] }): Splitter {
  const { path, maxBytes, onItem, onProblem } = opts
  const stack: Frame[] = []
  let offset = 0
  let done = 0
  let stopped = false
  let rootClosed = false
  let seenTarget = false
  // Outside items.
  let inString = false
  let escape = false
  let keyBytes: number[] | undefined
  // Inside an item.
  let inItem = false
  let itemDepth = 0
  let itemString = false
  let itemEscape = false
  let itemScalar = false
  let itemOffset = 0
  let itemParts: Buffer[] = []
  let itemSize = 0
  let itemOver = false

  function stop(at: number, message: string): void {
    stopped = true
    onProblem({ offset: at, message, fatal: true, ...(inItem ? { item: done + 1 } : {}) })
  }

  function isTargetPath(): boolean {
    if (stack.length !== path.length) return false
    return stack.every((f, i) => f.object && f.key === path[i])
  }

  function startItem(at: number): void {
    inItem = true
    itemDepth = 0
    itemString = false
    itemEscape = false
    itemScalar = false
    itemOffset = at
    itemParts = []
    itemSize = 0
    itemOver = false
  }

  function keep(part: Buffer): void {
    if (itemOver) return
    itemSize += part.length
    if (itemSize > maxBytes) {
      itemOver = true
      itemParts = []
      return
    }
    itemParts.push(part)
  }

  function endItem(): void {
    inItem = false
    done++
    if (itemOver) {
      onProblem({
        item: done,
        offset: itemOffset,
        message: `the item is larger than ${maxBytes} bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped`,
        fatal: false
      })
    } else {
      const bytes = itemParts.length === 1 ? itemParts[0]! : Buffer.concat(itemParts)
      onItem({ bytes, index: done, offset: itemOffset })
    }
    itemParts = []
  }

  /** One byte outside any item; false when it broke the structure. */
  function structural(c: number, at: number): boolean {
    const top = stack[stack.length - 1]
    if (inString) {
      if (escape) escape = false
      else if (c === BACKSLASH) escape = true
      else if (c === QUOTE) {
        inString = false
        if (keyBytes !== undefined && top !== undefined) top.key = Buffer.from(keyBytes).toString('utf8')
        keyBytes = undefined
        return true
      }
      if (keyBytes !== undefined) {
        if (keyBytes.length < LONGEST_KEY) keyBytes.push(c)
        else keyBytes = undefined
      }
      return true
    }
    if (isSpace(c)) return true
    if (rootClosed) {
      stop(at, `JSON error at byte ${at}: more after the end of the JSON value`)
      return false
    }
    if (top === undefined && c !== OPEN_OBJECT && c !== OPEN_ARRAY) {
      stop(at, `JSON error at byte ${at}: the file does not start with { or [`)
      return false
    }
    switch (c) {
      case QUOTE:
        inString = true
        escape = false
        if (top?.object === true && top.expectKey) {
          keyBytes = []
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
        const target = c === OPEN_ARRAY && !seenTarget && isTargetPath()
        if (target) seenTarget = true
        stack.push({ object: c === OPEN_OBJECT, key: undefined, expectKey: c === OPEN_OBJECT, target })
        return true
      }
      case CLOSE_OBJECT:
      case CLOSE_ARRAY: {
        if (top === undefined || top.object !== (c === CLOSE_OBJECT)) {
          stop(at, `JSON error at byte ${at}: an unexpected ${String.fromCharCode(c)}; the rest of the file is skipped`)
          return false
        }
        stack.pop()
        if (stack.length === 0) rootClosed = true
        return true
      }
      default:
        return true
    }
  }

  return {
    get done() {
      return done
    },
    get stopped() {
      return stopped
    },
    write(chunk) {
      if (stopped) return
      let start = inItem ? 0 : -1
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk[i]!
        if (inItem) {
          if (itemString) {
            if (itemEscape) itemEscape = false
            else if (c === BACKSLASH) itemEscape = true
            else if (c === QUOTE) {
              itemString = false
              if (itemScalar && itemDepth === 0) {
                keep(chunk.subarray(start, i + 1))
                endItem()
                start = -1
              }
            }
            continue
          }
          if (c === QUOTE) {
            itemString = true
            continue
          }
          if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
            itemDepth++
            continue
          }
          if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
            if (itemDepth === 0) {
              // A number, true, false or null ended by the array's ]: the ] is the array's.
              keep(chunk.subarray(start, i))
              endItem()
              start = -1
              if (!structural(c, offset + i)) return
              continue
            }
            itemDepth--
            if (itemDepth === 0) {
              keep(chunk.subarray(start, i + 1))
              endItem()
              start = -1
            }
            continue
          }
          if (c === COMMA && itemDepth === 0) {
            keep(chunk.subarray(start, i))
            endItem()
            start = -1
          }
          continue
        }
        // Between items: an item starts at the first byte of a value in the target array.
        const top = stack[stack.length - 1]
        if (!inString && top?.target === true && !isSpace(c) && c !== COMMA && c !== CLOSE_ARRAY) {
          if (!startsValue(c)) {
            stop(offset + i, `JSON error at byte ${offset + i}: an unexpected ${String.fromCharCode(c)}; the rest of the file is skipped`)
            return
          }
          startItem(offset + i)
          start = i
          if (c === OPEN_OBJECT || c === OPEN_ARRAY) itemDepth = 1
          else {
            itemScalar = true
            if (c === QUOTE) itemString = true
          }
          continue
        }
        if (!structural(c, offset + i)) return
      }
      if (inItem && start >= 0) keep(chunk.subarray(start))
      offset += chunk.length
    },
    end() {
      if (stopped) return
      if (inItem) {
        stopped = true
        onProblem({ item: done + 1, offset: itemOffset, message: 'the file ends inside this item: it was cut off', fatal: true })
        return
      }
      if (!rootClosed && stack.length > 0) {
        stopped = true
        onProblem({ offset, message: 'the file ends before its JSON does: it was cut off', fatal: true })
        return
      }
      if (!seenTarget) {
        onProblem({
          offset,
          message: path.length === 0 ? 'no array of items' : `no array of items at ${path.map((k) => JSON.stringify(k)).join(' › ')}`,
          fatal: true
        })
      }
    }
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
