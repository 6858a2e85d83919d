import { subscribe, unsubscribe } from 'node:diagnostics_channel'

/**
 * Per host, the gaps between the requests this process writes (undici's `undici:client:sendHeaders`
 * channel, published as the headers go to the socket): our side of LANDING_HOST_DELAY_MS, free of the
 * jitter a fake host adds when it times a request's arrival on its own busy event loop.
 */
export interface WriteGaps {
  /** Requests written, gaps between two of one host, the shortest, and how many were under `delayMs`. */
  report: () => { writes: number; gaps: number; minGapMs: number | null; under: number }
  stop: () => void
}

const CHANNEL = 'undici:client:sendHeaders'

export function watchWriteGaps(delayMs: number, counts: (host: string) => boolean = () => true): WriteGaps {
  const last = new Map<string, number>()
  let writes = 0
  let gaps = 0
  let under = 0
  let minGapMs = Infinity
  const onMessage = (message: unknown): void => {
    const now = performance.now()
    const origin = (message as { request?: { origin?: unknown } }).request?.origin
    if (origin === undefined) return
    const host = new URL(String(origin)).host
    if (!counts(host)) return
    writes++
    const before = last.get(host)
    last.set(host, now)
    if (before === undefined) return
    gaps++
    const gap = now - before
    if (gap < delayMs) under++
    if (gap < minGapMs) minGapMs = gap
  }
  subscribe(CHANNEL, onMessage)
  return {
    report: () => ({ writes, gaps, minGapMs: gaps === 0 ? null : minGapMs, under }),
    stop: () => unsubscribe(CHANNEL, onMessage)
  }
}
