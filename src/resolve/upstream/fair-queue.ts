import { upstreamErrors } from './errors.js'

/** Who is asking: the key upstream work is shared by (behaviour.md §9), and whether it is a trusted network. */
export interface ClientTicket {
  key: string
  /** A trusted network (a link resolver, a campus gateway): no per-client bound, still served in turn. */
  trusted: boolean
}

export interface FairQueueOptions {
  /** Most upstream requests in flight at once, over all clients. */
  maxActive: number
  /** Most in flight for one client. */
  perClient: number
  /** Most waiting for one client; one more is refused at once (429). */
  perClientQueue: number
  /** Most waiting over all clients; one more is refused at once (503). */
  maxWaiting: number
  /** A waiting lookup gives up after this long (503), or sooner at its deadline (504). */
  waitTimeoutMs: number
  /** The wait a refused client is told to leave (Retry-After). */
  retryAfterMs: number
  onChange?: (waiting: number, active: number) => void
  /** A lookup refused at once: its client's queue ('client_share') or the whole queue ('queue_full') was full. */
  onRefuse?: (reason: 'client_share' | 'queue_full') => void
}

interface Waiter {
  client: ClientState
  grant: () => void
  timer: NodeJS.Timeout
}

interface ClientState {
  key: string
  trusted: boolean
  active: number
  waiting: Waiter[]
}

// Work that comes from no client (background refreshes) shares one slot holder.
const BACKGROUND: ClientTicket = { key: 'background', trusted: false }

/**
 * A fair queue for upstream-bound work: one FIFO per client, served round-robin, each client with a
 * bounded number in flight and a bounded queue, so one address flooding misses waits behind itself
 * and never in front of other readers. No library fits: p-queue and p-limit are single FIFOs
 * (p-queue's priorities cannot rotate between keys), and a per-key p-limit would not share a global bound.
 */
export function createFairQueue (opts: FairQueueOptions) {
  const clients = new Map<string, ClientState>()
  // Clients with someone waiting, in turn order; the head is served next.
  const turn: ClientState[] = []
  let active = 0
  let waiting = 0
  const report = (): void => opts.onChange?.(waiting, active)

  function stateOf (ticket: ClientTicket): ClientState {
    let state = clients.get(ticket.key)
    if (state === undefined) {
      state = { key: ticket.key, trusted: ticket.trusted, active: 0, waiting: [] }
      clients.set(ticket.key, state)
    }
    return state
  }

  function forget (state: ClientState): void {
    if (state.active === 0 && state.waiting.length === 0) clients.delete(state.key)
  }

  const mayRun = (state: ClientState): boolean => state.trusted || state.active < opts.perClient

  function start (state: ClientState): () => void {
    active++
    state.active++
    let released = false
    return () => {
      if (released) return
      released = true
      active--
      state.active--
      forget(state)
      dispatch()
      report()
    }
  }

  /** Give free slots to waiting clients, one each in turn. */
  function dispatch (): void {
    let skipped = 0
    while (active < opts.maxActive && turn.length > 0 && skipped < turn.length) {
      const state = turn.shift()!
      if (!mayRun(state)) {
        turn.push(state)
        skipped++
        continue
      }
      skipped = 0
      const next = state.waiting.shift()!
      waiting--
      if (state.waiting.length > 0) turn.push(state)
      clearTimeout(next.timer)
      next.grant()
    }
  }

  function remove (waiter: Waiter): void {
    const state = waiter.client
    state.waiting.splice(state.waiting.indexOf(waiter), 1)
    waiting--
    if (state.waiting.length === 0) turn.splice(turn.indexOf(state), 1)
    forget(state)
  }

  return {
    /**
     * A slot for one upstream request: resolves with its release function. Refuses at once when the
     * client's own queue or the whole queue is full; gives up at the wait timeout or the deadline.
     */
    async acquire (ticket: ClientTicket = BACKGROUND, deadline = Infinity): Promise<() => void> {
      const state = stateOf(ticket)
      if (active < opts.maxActive && mayRun(state) && state.waiting.length === 0) {
        const release = start(state)
        report()
        return release
      }
      if (!state.trusted && state.waiting.length >= opts.perClientQueue) {
        forget(state)
        opts.onRefuse?.('client_share')
        throw upstreamErrors.clientOverShare(opts.retryAfterMs)
      }
      if (waiting >= opts.maxWaiting) {
        forget(state)
        opts.onRefuse?.('queue_full')
        throw upstreamErrors.overloaded()
      }
      const untilDeadline = deadline - performance.now()
      const byDeadline = untilDeadline < opts.waitTimeoutMs
      return await new Promise((resolve, reject) => {
        const waiter: Waiter = {
          client: state,
          grant: () => resolve(start(state)),
          timer: setTimeout(() => {
            remove(waiter)
            report()
            reject(byDeadline ? upstreamErrors.deadline() : upstreamErrors.overloaded())
          }, Math.max(0, Math.min(opts.waitTimeoutMs, untilDeadline)))
        }
        state.waiting.push(waiter)
        waiting++
        if (state.waiting.length === 1) turn.push(state)
        report()
      })
    },
    /** Numbers for metrics and tests. */
    stats: () => ({ active, waiting, clients: clients.size })
  }
}

export type FairQueue = ReturnType<typeof createFairQueue>
