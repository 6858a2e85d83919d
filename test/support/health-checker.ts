import pino from 'pino'
import { addressRulesOf } from '../../src/handle/address-rules.js'
import { createChecker } from '../../src/resolve/health/checker.js'
import type { Checker } from '../../src/resolve/health/checker.js'
import { createLandingChecks } from '../../src/resolve/landing/landing-checks.js'
import { createLandingProber } from '../../src/resolve/landing/prober.js'
import type { LandingLookup } from '../../src/resolve/landing/address-guard.js'
import { createServices } from '../../src/services.js'
import { testConfig } from './app.js'
import type { FakeUpstream } from './fake-upstream.js'

/**
 * A health checker (issue 42) as the server builds it, in front of `upstream`: the real resolution (services made
 * from the test settings) and issue 41's landing prober allowed onto loopback, names resolved by `lookup`. With
 * `keepVerdicts` false no landing verdict is kept, so every check visits the page and the sites count the checks.
 * What it opens is pushed to `opened`, for the test to close.
 */
export async function realChecker(
  upstream: Pick<FakeUpstream, 'url'>,
  opts: { lookup: LandingLookup; perHost: number; keepVerdicts: boolean },
  opened: Array<{ close: () => Promise<void> }>
): Promise<Checker> {
  const { services, hooks } = await createServices(
    testConfig(upstream.url),
    {},
    { log: pino({ level: 'silent' }), lifecycle: { ready: true } }
  )
  opened.push({ close: hooks.onClose })
  const prober = createLandingProber({
    userAgent: 'doi-proxy/test health',
    timeoutMs: 5_000,
    maxBytes: 64 * 1024,
    perHost: opts.perHost,
    hostDelayMs: 0,
    robotsTtlMs: 60_000,
    rules: addressRulesOf(['127.0.0.0/8']),
    lookup: opts.lookup,
    retryBaseMs: 10
  })
  opened.push(prober)
  const ttlMs = opts.keepVerdicts ? 86_400_000 : 0
  const landing = createLandingChecks({ prober, ttlMs, shortTtlMs: opts.keepVerdicts ? 3_600_000 : 0, maxEntries: 100 })
  return createChecker({ proxyService: services.proxyService, landing, resolveMs: 5_000 })
}
