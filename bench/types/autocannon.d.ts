// The part of autocannon's programmatic API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface RawRequest {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
  }

  export interface RequestSpec extends RawRequest {
    setupRequest?: (req: RawRequest, context: Record<string, unknown>) => RawRequest | undefined
    onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string | string[]>) => void
  }

  export interface Options {
    url: string
    connections?: number
    pipelining?: number
    duration?: number
    amount?: number
    timeout?: number
    headers?: Record<string, string>
    requests?: RequestSpec[]
    excludeErrorStats?: boolean
  }

  interface Histogram {
    average: number
    mean: number
    p50: number
    p99: number
    max: number
    total: number
  }

  export interface Result {
    duration: number
    requests: Histogram
    latency: Histogram
    errors: number
    timeouts: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
  }

  export interface Instance extends EventEmitter {
    stop(): void
  }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance

  export default autocannon
}
