/** What the lookup flow asks of the records' source upstream: how a lookup is made, and who answers it. */
import type { LookupParams } from '../../handle/lookup-params.js'
import type { ClientTicket } from './fair-queue.js'
import type { UpstreamAnswer } from './client.js'

/**
 * One lookup as the resolver takes it: what the reader's query asked of it (src/handle/lookup-params.ts:
 * what is sent upstream, and whether a cache may answer; the parsed query itself, whose parameters extend
 * these), and beside it the request's admission gate. Passed whole, never copied field by field; past the
 * gate the params travel on beside who asks and until when (Passed), down to the upstream client.
 */
export interface LookupRequest {
  readonly params: LookupParams
  /**
   * The admission gate (src/http/admission.ts), passed before the first upstream-bound wait and only
   * then (behaviour.md §9: cached answers are never limited); it may refuse, and says who asks and until
   * when. It must answer the same promise however often it is called for one request.
   */
  readonly admit?: Admit | undefined
}

/** What a passed gate answers: who asks (upstream work is queued per client, behaviour.md §9) and the request's deadline. */
export interface Passed {
  client: ClientTicket
  /** On the performance.now() clock: no lookup waits past it. */
  deadline: number
}

/** An admission gate as the resolver takes it. */
export type Admit = () => Promise<Passed>

/** Where records come from when they are not at hand: the guarded upstream client. */
export interface RecordFetcher {
  /** `params` as the query asked (default: nothing beyond the handle); `deadline` on the performance.now() clock. */
  fetchRecord(handle: string, params?: LookupParams, deadline?: number): Promise<UpstreamAnswer>
  /** Throws when the upstream's breaker (or the handle's prefix's) is open, so no one queues in vain. */
  assertOpen?: (handle: string) => void
  /**
   * A record another replica shared (behaviour.md §11), when one is there at once: asked before the
   * fair queue, so a miss that Redis answers never waits for an upstream turn.
   */
  fromShared?: (handle: string) => Promise<UpstreamAnswer | undefined>
}
