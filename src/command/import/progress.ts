import type { ImportProgress } from './pipeline.js'

/**
 * The import's progress (plan-43 §4): on a terminal one line redrawn in place at most four times a second,
 *   importing  41%  2,345,678 records  9,812/s  63 MB/s  ETA 0:41  crossref-2025.tar › 0042.json.gz
 * and elsewhere (a log, a pipe) the same words as a line of its own every `logSeconds`. No dependency: this is it.
 */

export interface ProgressState extends ImportProgress {
  /** Records a second and bytes a second, over the last seconds. */
  recordsPerS: number
  bytesPerS: number
}

const NUMBER = new Intl.NumberFormat('en-US')

/** The line for a state, cut to `columns` (the file's name gives way first, from its left). */
export function progressLine(state: ProgressState, columns: number): string {
  const percent = state.bytesTotal > 0 ? Math.min(100, Math.floor((state.bytesDone / state.bytesTotal) * 100)) : 0
  const left = state.bytesTotal - state.bytesDone
  const eta = state.bytesPerS > 0 && left > 0 ? duration(left / state.bytesPerS) : left <= 0 ? '0:00' : '?'
  const head =
    `importing ${String(percent).padStart(3)}%  ${NUMBER.format(state.records)} records  ` +
    `${NUMBER.format(Math.round(state.recordsPerS))}/s  ${megabytes(state.bytesPerS)} MB/s  ETA ${eta}`
  if (state.current === '') return head.slice(0, columns)
  const room = columns - head.length - 2
  if (room < 8) return head.slice(0, columns)
  const current = state.current.length <= room ? state.current : '…' + state.current.slice(state.current.length - room + 1)
  return `${head}  ${current}`
}

/** h:mm:ss, or m:ss under an hour. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const sec = String(s % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`
}

function megabytes(bytesPerS: number): string {
  const mb = bytesPerS / 1e6
  return mb >= 10 ? String(Math.round(mb)) : mb.toFixed(1)
}

export interface ProgressWriter {
  update(p: ImportProgress): void
  /** Clears the terminal's line before the summary. */
  end(): void
}

export interface ProgressWriterOptions {
  /** A terminal: redrawn in place; else lines every logSeconds. */
  tty: boolean
  columns: () => number
  write: (text: string) => void
  logSeconds: number
  nowMs?: () => number
}

const REDRAW_MS = 250
// Rates over about this long: the last seconds, not the run's average (a slow start would hide for an hour).
const RATE_WINDOW_MS = 5000

export function createProgressWriter(opts: ProgressWriterOptions): ProgressWriter {
  const now = opts.nowMs ?? Date.now
  const started = now()
  let lastDraw = 0
  let lastLog = started
  let drawn = false
  const samples: Array<{ at: number; records: number; bytes: number }> = [{ at: started, records: 0, bytes: 0 }]
  return {
    update(p) {
      const at = now()
      samples.push({ at, records: p.records, bytes: p.bytesDone })
      while (samples.length > 2 && at - samples[1]!.at > RATE_WINDOW_MS) samples.shift()
      const first = samples[0]!
      const span = (at - first.at) / 1000
      const state: ProgressState = {
        ...p,
        recordsPerS: span > 0 ? (p.records - first.records) / span : 0,
        bytesPerS: span > 0 ? (p.bytesDone - first.bytes) / span : 0
      }
      if (opts.tty) {
        if (at - lastDraw < REDRAW_MS) return
        lastDraw = at
        drawn = true
        opts.write(`\r\x1b[K${progressLine(state, Math.max(20, opts.columns() - 1))}`)
        return
      }
      if (at - lastLog < opts.logSeconds * 1000) return
      lastLog = at
      opts.write(progressLine(state, 400) + '\n')
    },
    end() {
      if (drawn) opts.write('\r\x1b[K')
    }
  }
}
