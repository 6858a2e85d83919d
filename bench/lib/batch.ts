/**
 * The batch scenario (POST /api/batch, issue 28): one server of ours, a batch of N uncached DOIs (it
 * should run at the upstream cap), then the same batch again, cached (it should answer in well under a
 * second, its memory flat while it streams), each beside the same lookups as N single GETs in the same
 * run. Writes its own section of RESULTS.md.
 */
import { request } from 'undici'
import { runLoad } from './load.js'
import type { Context } from './scenario-context.js'
import { startOurs } from './processes.js'
import { machine } from './results.js'

interface Streamed {
  ms: number
  firstLineMs: number
  lines: number
  peakRssMb: number
  statuses: Record<string, number>
}

const UPSTREAM_CAP = 16 // UPSTREAM_MAX_CONCURRENT's default, which BATCH_CONCURRENCY's follows

export async function batchSection(ctx: Context): Promise<string> {
  const n = ctx.settings.quick ? 2_000 : 10_000
  const big = n * 10
  const run = Date.now().toString(36)
  const dois = Array.from({ length: n }, (_, i) => `10.${4000 + (i % 20)}/batch.${run}.${i}`)
  // No load shedding: on a machine this busy the event loop lags past its 1 s bound, and a refused batch measures nothing.
  const env = { ...ctx.serverEnv, BATCH_MAX_LINES: String(big), BATCH_MAX_BYTES: String(32 * 1024 * 1024), MAX_EVENT_LOOP_DELAY_MS: '0' }
  const t = await startOurs({ upstream: ctx.upstream, env })
  try {
    const rss = async (): Promise<number> => {
      const text = await (await fetch(`${t.baseUrl}/metrics`)).text()
      return Number(/^doi_proxy_process_resident_memory_bytes (\S+)$/m.exec(text)?.[1] ?? NaN) / 1024 / 1024
    }
    /** POST a batch and read it as it streams, sampling the server's RSS meanwhile. */
    const post = async (lines: readonly string[]): Promise<Streamed> => {
      let peak = await rss()
      const sampling = { on: true }
      const sampler = (async () => {
        while (sampling.on) {
          peak = Math.max(peak, await rss().catch(() => peak))
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
      })()
      try {
        const started = performance.now()
        const res = await request(`${t.baseUrl}/api/batch`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: lines.join('\n')
        })
        if (res.statusCode !== 200) throw new Error(`the batch answered ${res.statusCode}: ${await res.body.text()}`)
        let firstLineMs = NaN
        let count = 0
        const statuses: Record<string, number> = {}
        let rest = ''
        for await (const chunk of res.body) {
          if (Number.isNaN(firstLineMs)) firstLineMs = performance.now() - started
          const parts = (rest + (chunk as Buffer).toString('utf8')).split('\n')
          rest = parts.pop() ?? ''
          for (const line of parts) {
            const status = String((JSON.parse(line) as { status: number | null }).status)
            statuses[status] = (statuses[status] ?? 0) + 1
            count++
          }
        }
        const ms = performance.now() - started
        sampling.on = false
        await sampler
        return { ms, firstLineMs, lines: count, peakRssMb: peak, statuses }
      } finally {
        sampling.on = false
        await sampler
      }
    }
    const note = (s: Streamed): string =>
      Object.entries(s.statuses)
        .map(([k, v]) => `${k}×${v}`)
        .join(' ')

    // Warm-up, so neither way is measured on a cold JIT: a small uncached batch and as many single GETs.
    const warm = Math.min(500, n / 4)
    await post(Array.from({ length: warm }, (_, k) => `10.${4000 + (k % 20)}/warm.${run}.${k}`))
    let w = 0
    await runLoad({
      baseUrl: t.baseUrl,
      connections: UPSTREAM_CAP,
      amount: warm,
      nextPath: () => `/10.${4000 + (w % 20)}/warm-single.${run}.${w++}`
    })

    const upstreamBefore = await ctx.upstream.requests()
    const uncached = await post(dois)
    const upstreamAsked = (await ctx.upstream.requests()) - upstreamBefore
    const capRate = (UPSTREAM_CAP * 1000) / ctx.upstream.latencyMs
    ctx.log(
      `  uncached batch of ${n}: ${(uncached.ms / 1000).toFixed(2)} s, ${((n / uncached.ms) * 1000).toFixed(0)} lines/s (cap ${capRate.toFixed(0)}/s), ${upstreamAsked} upstream requests`
    )
    // The same lookups one by one, as GETs on UPSTREAM_CAP connections (other DOIs, uncached too).
    let i = 0
    const singles = await runLoad({
      baseUrl: t.baseUrl,
      connections: UPSTREAM_CAP,
      amount: n,
      nextPath: () => `/10.${4000 + (i % 20)}/single.${run}.${i++}`
    })
    ctx.log(`  the same as ${n} single GETs: ${singles.rps.toFixed(0)} req/s`)

    const restingRss = await rss()
    const cached: Streamed[] = []
    for (let r = 0; r < 5; r++) cached.push(await post(dois))
    const times = cached.map((c) => c.ms).sort((a, b) => a - b)
    const median = times[2]!
    ctx.log(`  cached batch of ${n}: median ${median.toFixed(0)} ms, worst ${times[4]!.toFixed(0)} ms`)
    let j = 0
    const cachedSingles = await runLoad({ baseUrl: t.baseUrl, connections: 64, amount: n, nextPath: () => `/${dois[j++ % n]!}` })
    const bigBatch = await post(Array.from({ length: big }, (_, k) => dois[k % n]!))
    ctx.log(
      `  cached batch of ${big}: ${bigBatch.ms.toFixed(0)} ms, peak RSS ${bigBatch.peakRssMb.toFixed(0)} MB (resting ${restingRss.toFixed(0)} MB)`
    )
    const cachedPeak = Math.max(...cached.map((c) => c.peakRssMb))

    return [
      '## Batch API',
      '',
      `${ctx.settings.quick ? 'Quick' : 'Full'} run (\`npm run bench -- --scenario batch\`) on ${machine()}. **The machine was busy** (2 cores shared with other jobs) while these were measured: read the ratios, not the absolute times. ` +
        `Fake upstream latency ${ctx.upstream.latencyMs} ms; our server on its defaults (UPSTREAM_MAX_CONCURRENT ${UPSTREAM_CAP}, BATCH_CONCURRENCY 16, TRUSTED_NETWORKS=127.0.0.0/8 as in every scenario), with BATCH_MAX_LINES ${big} for the last row and MAX_EVENT_LOOP_DELAY_MS=0 (the busy machine's event-loop lag would shed load). Each batch is read as it streams; a warm-up of ${warm} uncached lines in a batch and ${warm} single GETs comes first.`,
      '',
      '| What | Time | Lines/s | Compared with | Notes |',
      '|---|--:|--:|---|---|',
      `| ${n} uncached DOIs in one batch | ${(uncached.ms / 1000).toFixed(2)} s | ${((n / uncached.ms) * 1000).toFixed(0)} | upstream cap ${UPSTREAM_CAP} × 1000 / ${ctx.upstream.latencyMs} ms = ${capRate.toFixed(0)}/s: **${(((n / uncached.ms) * 1000) / capRate).toFixed(2)}×**; the same lookups as ${n} single GETs on ${UPSTREAM_CAP} connections: ${singles.rps.toFixed(0)} req/s, **${(((n / uncached.ms) * 1000) / singles.rps).toFixed(2)}×** | ${upstreamAsked} upstream requests (one per DOI); first line after ${uncached.firstLineMs.toFixed(0)} ms; ${note(uncached)} |`,
      `| ${n} cached DOIs in one batch (median of 5) | ${(median / 1000).toFixed(3)} s | ${((n / median) * 1000).toFixed(0)} | ${n} single cached GETs on 64 connections: ${(n / cachedSingles.rps).toFixed(3)} s (${cachedSingles.rps.toFixed(0)} req/s), **${((cachedSingles.durationS * 1000) / median).toFixed(2)}×** the batch's time | worst of 5 ${times[4]!.toFixed(0)} ms; first line after ${cached[2]!.firstLineMs.toFixed(0)} ms; server RSS ${restingRss.toFixed(0)} MB at rest, peak ${cachedPeak.toFixed(0)} MB while streaming; ${note(cached[2]!)} |`,
      `| ${big} cached lines (the ${n} DOIs ten times) | ${(bigBatch.ms / 1000).toFixed(3)} s | ${((big / bigBatch.ms) * 1000).toFixed(0)} | ten times the lines of the row above | peak RSS ${bigBatch.peakRssMb.toFixed(0)} MB (+${(bigBatch.peakRssMb - restingRss).toFixed(0)} MB over rest, against +${(cachedPeak - restingRss).toFixed(0)} MB for ${n} lines): the answer streams, only the body read (${((big * 24) / 1024 / 1024).toFixed(1)} MB of text) and its parsed lines grow with it |`,
      ''
    ].join('\n')
  } finally {
    await t.stop()
  }
}
