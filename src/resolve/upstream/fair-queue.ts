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

/** The queue: its bounds, every client with work in flight or waiting, whose turn is next, the totals. */
interface Queue {
  readonly opts: FairQueueOptions
  readonly clients: Map<string, ClientState>
  /** Clients with someone waiting, in turn order; the head is served next. */
  readonly turn: ClientState[]
  active: number
  waiting: number
}

// Work that comes from no client (background refreshes) shares one slot holder.
const BACKGROUND: ClientTicket = { key: 'background', trusted: false }

/**
 * A fair queue for upstream-bound work: one FIFO per client, served round-robin, each client with a
 * bounded number in flight and a bounded queue, so one address flooding misses waits behind itself
 * and never in front of other readers. No library fits: p-queue and p-limit are single FIFOs
 * (p-queue's priorities cannot rotate between keys), and a per-key p-limit would not share a global bound.
 */
export function createFairQueue(opts: FairQueueOptions) {
  const q: Queue = { opts, clients: new Map(), turn: [], active: 0, waiting: 0 }
  return {
    /**
     * A slot for one upstream request: resolves with its release function. Refuses at once when the
     * client's own queue or the whole queue is full; gives up at the wait timeout or the deadline.
     */
    async acquire(ticket: ClientTicket = BACKGROUND, deadline = Infinity): Promise<() => void> {
      const state = stateOf(q, ticket)
      if (q.active < opts.maxActive && mayRun(q, state) && state.waiting.length === 0) {
        const release = start(q, state)
        report(q)
        return release
      }
      refuseWhenFull(q, state)
      return await wait(q, state, deadline)
    },
    /** Numbers for metrics and tests. */
    stats: () => ({ active: q.active, waiting: q.waiting, clients: q.clients.size })
  }
}

const report = (q: Queue): void => q.opts.onChange?.(q.waiting, q.active)

function stateOf(q: Queue, ticket: ClientTicket): ClientState {
  let state = q.clients.get(ticket.key)
  if (state === undefined) {
    state = { key: ticket.key, trusted: ticket.trusted, active: 0, waiting: [] }
    q.clients.set(ticket.key, state)
  }
  return state
}

function forget(q: Queue, state: ClientState): void {
  if (state.active === 0 && state.waiting.length === 0) q.clients.delete(state.key)
}

const mayRun = (q: Queue, state: ClientState): boolean => state.trusted || state.active < q.opts.perClient

/** One slot taken by the client: its release function, which gives the slot to the next in turn (once). */
function start(q: Queue, state: ClientState): () => void {
  q.active++
  state.active++
  let released = false
  return () => {
    if (released) return
    released = true
    q.active--
    state.active--
    forget(q, state)
    dispatch(q)
    report(q)
  }
}

/** Give free slots to waiting clients, one each in turn. */
function dispatch(q: Queue): void {
  const { turn } = q
  let skipped = 0
  while (q.active < q.opts.maxActive && turn.length > 0 && skipped < turn.length) {
    const state = turn.shift()!
    if (!mayRun(q, state)) {
      turn.push(state)
      skipped++
      continue
    }
    skipped = 0
    const next = state.waiting.shift()!
    q.waiting--
    if (state.waiting.length > 0) turn.push(state)
    clearTimeout(next.timer)
    next.grant()
  }
}

/** Throws when the client's own queue (429) or the whole queue (503) has no room for one more. */
function refuseWhenFull(q: Queue, state: ClientState): void {
  if (!state.trusted && state.waiting.length >= q.opts.perClientQueue) {
    forget(q, state)
    q.opts.onRefuse?.('client_share')
    throw upstreamErrors.clientOverShare(q.opts.retryAfterMs)
  }
  if (q.waiting >= q.opts.maxWaiting) {
    forget(q, state)
    q.opts.onRefuse?.('queue_full')
    throw upstreamErrors.overloaded()
  }
}

/**
 * Wait in the client's queue for its turn; give up at the wait timeout (503) or, sooner, the deadline (504).
 * Not async: the promise itself, awaited once by acquire.
 */
function wait(q: Queue, state: ClientState, deadline: number): Promise<() => void> {
  const untilDeadline = deadline - performance.now()
  const byDeadline = untilDeadline < q.opts.waitTimeoutMs
  return new Promise((resolve, reject) => {
    const waiter: Waiter = {
      client: state,
      grant: () => resolve(start(q, state)),
      timer: setTimeout(
        () => {
          remove(q, waiter)
          report(q)
          reject(byDeadline ? upstreamErrors.deadline() : upstreamErrors.overloaded())
        },
        Math.max(0, Math.min(q.opts.waitTimeoutMs, untilDeadline))
      )
    }
    state.waiting.push(waiter)
    q.waiting++
    if (state.waiting.length === 1) q.turn.push(state)
    report(q)
  })
}

function remove(q: Queue, waiter: Waiter): void {
  const state = waiter.client
  state.waiting.splice(state.waiting.indexOf(waiter), 1)
  q.waiting--
  if (state.waiting.length === 0) q.turn.splice(q.turn.indexOf(state), 1)
  forget(q, state)
}

export type FairQueue = ReturnType<typeof createFairQueue>
