import { describe, expect, it } from 'vitest'
import { renderStatusPage } from '../../src/http/views/status.js'
import { createMetrics } from '../../src/observe/metrics.js'
import { createStatusCollector } from '../../src/status/collector.js'
import type { StatusSettings } from '../../src/status/settings.js'

/** Every setting /status shows, and nothing else of the configuration. */
const SETTINGS: StatusSettings = {
  cacheMaxEntries: 1000,
  cacheMaxBytes: 2 ** 20,
  workers: 1,
  offline: false,
  localServices: [],
  oaProvider: undefined,
  oaDailyLimit: 0,
  registryCopy: undefined,
  registryCopyMaxAgeSeconds: 604_800,
  maxEventLoopDelayMs: 0,
  rateLimitMax: 100,
  rateLimitWindowMs: 60_000,
  authRateLimitMax: 0,
  upstreamPerClient: 8,
  upstreamClientQueue: 32,
  upstreamMaxConcurrent: 16,
  upstreamQueueSize: 1000,
  upstreamQueueTimeoutMs: 2500
}

describe('the settings /status shows (src/status/settings.ts)', () => {
  it('are all the collector takes of the configuration', async () => {
    const collector = createStatusCollector({ metrics: createMetrics(), settings: SETTINGS, now: () => Date.UTC(2026, 10, 23, 12) })
    const s = await collector.snapshot()
    expect(s.cache).toMatchObject({ maxEntries: 1000, maxBytes: 2 ** 20 })
    expect(s.limits.map((l) => l.setting)).toEqual([
      'off (MAX_EVENT_LOOP_DELAY_MS=0)',
      '100 per 60 s (RATE_LIMIT_MAX, RATE_LIMIT_WINDOW_MS)',
      'off (AUTH_RATE_LIMIT_MAX=0)',
      '8 in flight, 32 waiting (UPSTREAM_PER_CLIENT, UPSTREAM_CLIENT_QUEUE)',
      '16 in flight, 1000 waiting, at most 2500 ms (UPSTREAM_MAX_CONCURRENT, UPSTREAM_QUEUE_SIZE, UPSTREAM_QUEUE_TIMEOUT_MS)'
    ])
  })

  it.each([
    [{ offline: false, registryCopyMaxAgeSeconds: 604_800 }, 'while its data is younger than 604800 s (REGISTRY_COPY_MAX_AGE_SECONDS)'],
    [
      { offline: false, registryCopyMaxAgeSeconds: 0 },
      'never first; it stands in when the upstream fails (REGISTRY_COPY_MAX_AGE_SECONDS=0)'
    ],
    [{ offline: true, registryCopyMaxAgeSeconds: 604_800 }, 'always (OFFLINE: the copy answers alone)']
  ])('with a registry copy (%o), a row says when it answers: %s', async (settings, words) => {
    const withCopy = { ...SETTINGS, ...settings, registryCopy: '/var/lib/doi-proxy/copy' }
    const s = await createStatusCollector({ metrics: createMetrics(), settings: withCopy }).snapshot()
    expect(s.limits.at(-1)).toEqual({
      reason: null,
      limit: 'Registry copy answers before the upstream',
      setting: words,
      refusedLastHour: null,
      refusedSinceStart: null
    })
  })

  it('a reason a request was refused under that no limit names gets a row of its own, after the limits', async () => {
    const metrics = createMetrics()
    metrics.refusals.inc({ reason: 'something_new' }, 2)
    const s = await createStatusCollector({ metrics, settings: SETTINGS }).snapshot()
    expect(s.limits.at(-1)).toEqual({
      reason: 'something_new',
      limit: 'something_new',
      setting: '',
      refusedLastHour: 2,
      refusedSinceStart: 2
    })
  })

  it('a setting that refuses nothing itself is shown without a count', async () => {
    const s = await createStatusCollector({ metrics: createMetrics(), settings: SETTINGS }).snapshot()
    const row = { limit: 'Time a request may take', setting: '20 s (REQUEST_DEADLINE_MS)' }
    s.limits.push({ reason: null, ...row, refusedLastHour: null, refusedSinceStart: null })
    const page = renderStatusPage({ baseUrl: '/' }, s)
    expect(page).toContain(`<tr><td>${row.limit}</td><td>${row.setting}</td><td class="num">—</td><td class="num">—</td></tr>`)
  })
})
