/**
 * Politeness per host for landing checks (issue 41), whoever asks (`check --verify`, issue 42's health
 * checks): at most `perHost` requests to a host at once, and at least `delayMs` between two starts (a
 * robots.txt `Crawl-delay` wins when longer, capped at MAX_CRAWL_DELAY_MS). A start is when the request is
 * written, not when its slot is granted: a name lookup, a connection or a stall of our event loop comes
 * between the two, so the gap is counted from `sent()`, and no other slot of that host is granted until
 * then (granted ones 1 s apart reached a host 190 ms apart when the loop stalled: bench/RESULTS.md).
 * Waiters are served in turn; one that leaves (its signal aborts) gives up its place. Local to this
 * process: a slow host holds only its own waiters. Hosts idle past their delay are forgotten, and at most
 * `maxHosts` are held.
 */
export interface HostSlotsOptions {
  perHost: number
  delayMs: number
  maxHosts?: number
}

/** A granted slot. */
export interface HostSlot {
  /** The request is written now: the host's next start waits the gap from here. Once; later calls do nothing. */
  sent: () => void
  /** The request is over (answered or failed); a slot released unsent counts as sent now. Twice is once. */
  release: () => void
}

export interface HostSlots {
  acquire: (host: string, opts?: { signal?: AbortSignal | undefined; crawlDelayMs?: number | undefined }) => Promise<HostSlot>
}

export const MAX_CRAWL_DELAY_MS = 60_000

/** The gap after a start at a host: `delayMs`, or its robots.txt's Crawl-delay when longer (at most MAX_CRAWL_DELAY_MS). */
export function gapOf(delayMs: number, crawlDelayMs: number | undefined): number {
  return Math.max(delayMs, Math.min(crawlDelayMs ?? 0, MAX_CRAWL_DELAY_MS))
}

interface Waiter {
  gapMs: number
  resolve: (slot: HostSlot) => void
  reject: (reason: unknown) => void
  signal: AbortSignal | undefined
  onAbort: () => void
}

interface HostState {
  active: number
  /** A slot granted with a gap and not yet sent (so still active): nothing else starts before its gap can be counted. */
  unsent: boolean
  nextStart: number
  queue: Waiter[]
  timer: NodeJS.Timeout | undefined
}

export function createHostSlots(opts: HostSlotsOptions): HostSlots {
  const hosts = new Map<string, HostState>()
  const maxHosts = opts.maxHosts ?? 10_000

  const forgetIdle = (): void => {
    const now = performance.now()
    for (const [host, state] of hosts) {
      if (hosts.size <= maxHosts) return
      if (state.active === 0 && state.queue.length === 0 && state.nextStart <= now) hosts.delete(host)
    }
  }

  const grant = (host: string, state: HostState, gapMs: number): HostSlot => {
    state.active++
    let sent = gapMs <= 0
    state.unsent = !sent
    let released = false
    const markSent = (): void => {
      if (sent) return
      sent = true
      state.unsent = false
      state.nextStart = Math.max(state.nextStart, performance.now() + gapMs)
      pump(host, state)
    }
    return {
      sent: markSent,
      release: () => {
        if (released) return
        released = true
        state.active--
        if (!sent) markSent()
        else pump(host, state)
      }
    }
  }

  const pump = (host: string, state: HostState): void => {
    while (state.active < opts.perHost && !state.unsent && state.queue.length > 0) {
      const now = performance.now()
      if (now < state.nextStart) {
        state.timer ??= setTimeout(() => {
          state.timer = undefined
          pump(host, state)
        }, state.nextStart - now)
        return
      }
      const waiter = state.queue.shift() as Waiter
      waiter.signal?.removeEventListener('abort', waiter.onAbort)
      state.nextStart = now + waiter.gapMs
      waiter.resolve(grant(host, state, waiter.gapMs))
    }
    if (state.active === 0 && state.queue.length === 0 && state.timer === undefined && hosts.size > maxHosts) forgetIdle()
  }

  return {
    async acquire(host, { signal, crawlDelayMs } = {}) {
      signal?.throwIfAborted()
      let state = hosts.get(host)
      if (state === undefined) {
        state = { active: 0, unsent: false, nextStart: 0, queue: [], timer: undefined }
        hosts.set(host, state)
        if (hosts.size > maxHosts) forgetIdle()
      }
      const gapMs = gapOf(opts.delayMs, crawlDelayMs)
      const held = state
      return await new Promise<HostSlot>((resolve, reject) => {
        const waiter: Waiter = {
          gapMs,
          resolve,
          reject,
          signal,
          onAbort: () => {
            const at = held.queue.indexOf(waiter)
            if (at !== -1) held.queue.splice(at, 1)
            reject(signal?.reason)
          }
        }
        signal?.addEventListener('abort', waiter.onAbort, { once: true })
        held.queue.push(waiter)
        pump(host, held)
      })
    }
  }
}
