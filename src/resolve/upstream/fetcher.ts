/** What the lookup flow asks of the records' source upstream: how a lookup is made, and who answers it. */
import type { ClientTicket } from './fair-queue.js'
import type { UpstreamAnswer } from './client.js'

export interface LookupOptions {
  /** Ask the upstream authoritatively (`auth=true` upstream, behaviour.md §3). */
  auth?: boolean
  /** Passed through upstream (`cert=true`). */
  cert?: boolean
  /**
   * Not answered from any cache, nor joined with another lookup: the upstream is asked and the cache
   * refreshed with its answer. Set by the query parsers (src/handle/query.ts bypassesCache: auth or cert).
   */
  bypassCache?: boolean
  /** Who asks: upstream work is queued per client (behaviour.md §9). */
  client?: ClientTicket | undefined
  /** The request's deadline on the performance.now() clock: no lookup waits past it. */
  deadline?: number | undefined
  /**
   * The admission gate (src/http/admission.ts), passed before the first upstream-bound wait and only
   * then (behaviour.md §9: cached answers are never limited); it may refuse, and says who asks and until
   * when. It must answer the same promise however often it is called for one request.
   */
  admit?: Admit | undefined
}

/** An admission gate as the resolver takes it: who asks (the fair queue) and the request's deadline. */
export type Admit = () => Promise<{ client: ClientTicket, deadline: number }>

/** Where records come from when they are not at hand: the guarded upstream client. */
export interface RecordFetcher {
  fetchRecord (handle: string, opts?: LookupOptions): Promise<UpstreamAnswer>
  /** Throws when the upstream's breaker (or the handle's prefix's) is open, so no one queues in vain. */
  assertOpen?: (handle: string) => void
  /**
   * A record another replica shared (behaviour.md §11), when one is there at once: asked before the
   * fair queue, so a miss that Redis answers never waits for an upstream turn.
   */
  fromShared?: (handle: string) => Promise<UpstreamAnswer | undefined>
}
