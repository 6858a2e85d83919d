/**
 * Politeness per host for landing checks (issue 41), whoever asks (`check --verify`, issue 42's health
 * checks): at most `perHost` requests to a host at once, and at least `delayMs` between two starts (a
 * robots.txt `Crawl-delay` wins when longer, capped at MAX_CRAWL_DELAY_MS). Waiters are served in turn; one
 * that leaves (its signal aborts) gives up its place. Local to this process: a slow host holds only its
 * own waiters. Hosts idle past their delay are forgotten, and at most `maxHosts` are held.
 */
export interface HostSlotsOptions {
  perHost: number
  delayMs: number
  maxHosts?: number
}

export type Release = () => void

export interface HostSlots {
  acquire: (host: string, opts?: { signal?: AbortSignal | undefined; crawlDelayMs?: number | undefined }) => Promise<Release>
}

export const MAX_CRAWL_DELAY_MS = 60_000

interface Waiter {
  gapMs: number
  resolve: (release: Release) => void
  reject: (reason: unknown) => void
  signal: AbortSignal | undefined
  onAbort: () => void
}

interface HostState {
  active: number
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

  const pump = (host: string, state: HostState): void => {
    while (state.active < opts.perHost && state.queue.length > 0) {
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
      state.active++
      state.nextStart = now + waiter.gapMs
      let released = false
      waiter.resolve(() => {
        if (released) return
        released = true
        state.active--
        pump(host, state)
      })
    }
    if (state.active === 0 && state.queue.length === 0 && state.timer === undefined && hosts.size > maxHosts) forgetIdle()
  }

  return {
    async acquire(host, { signal, crawlDelayMs } = {}) {
      signal?.throwIfAborted()
      let state = hosts.get(host)
      if (state === undefined) {
        state = { active: 0, nextStart: 0, queue: [], timer: undefined }
        hosts.set(host, state)
        if (hosts.size > maxHosts) forgetIdle()
      }
      const gapMs = Math.max(opts.delayMs, Math.min(crawlDelayMs ?? 0, MAX_CRAWL_DELAY_MS))
      const held = state
      return await new Promise<Release>((resolve, reject) => {
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
