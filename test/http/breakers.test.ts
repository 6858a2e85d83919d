import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'

// The circuit breakers (src/resolve/upstream/breakers.ts) judge the upstream by counts in a rolling window. With
// opossum's defaults they also kept every call's latency in a list, and joined and sorted the whole
// window's lists on every failure: after many lookups, each failing one cost milliseconds of CPU, just
// when the upstream is in trouble and failures come fast.

describe('the circuit breakers', () => {
  it('after 20,000 lookups in the window, a failing lookup costs about what a successful one does', async () => {
    // The breaker must not open during the test (it would refuse at once): it judges no window here.
    const { app, upstream } = await setup({
      overrides: { breakerVolumeThreshold: 1_000_000, upstreamRetries: 0, trustedNetworks: ['127.0.0.0/8'] }
    })
    let n = 0
    // Not-found answers are answers, not failures: they fill the window as any lookup does.
    const lookups = async (count: number): Promise<number> => {
      const started = performance.now()
      for (let i = 0; i < count; i += 16) {
        await Promise.all(Array.from({ length: 16 }, async () => await app.inject({ url: `/10.5555/none-${n++}` })))
      }
      return performance.now() - started
    }
    await lookups(20_000)
    const answered = await lookups(320)
    upstream.mode = { kind: 'status', status: 503 }
    const failed = await lookups(320)
    // They did fail: the upstream's 503 is our 502 (and the breaker is still closed: not our 503).
    expect((await app.inject({ url: `/10.5555/none-${n++}` })).statusCode).toBe(502)
    // With opossum's defaults 25× here (each failure sorted some 20,000 latencies, about 4 ms); now under
    // 2×. The bound leaves room for a busy machine.
    expect(failed).toBeLessThan(5 * answered)
  }, 60_000)
})
