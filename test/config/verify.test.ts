import { describe, expect, it } from 'vitest'
import { buildConfig, ConfigError, landingUserAgent, upstreamUserAgent } from '../../src/config/schema.js'
import { addressRulesOf, refusedAddress } from '../../src/handle/address-rules.js'

// Issue 41: the settings of check --verify, checked once at start, each message naming the setting and the value.
describe('the settings of check --verify', () => {
  it('by default every level is offered, retractions come from Crossref, and no private address is reached', () => {
    const config = buildConfig(undefined, {})
    expect(config.verifyLevels).toEqual(['metadata', 'retraction', 'landing'])
    expect(config.retractionsFrom).toBe('crossref')
    expect(config.crossrefApiUrl).toBe('https://api.crossref.org')
    expect(config.landingAllowPrivate).toBe(false)
    expect(config.landingShortTtlSeconds).toBeLessThanOrEqual(config.landingTtlSeconds)
  })

  it.each([
    [{ VERIFY_LEVELS: 'landing, metadata' }, 'verifyLevels', ['metadata', 'landing']],
    [{ VERIFY_LEVELS: '' }, 'verifyLevels', []], // off
    [{ LANDING_ALLOW_PRIVATE: 'true' }, 'landingAllowPrivate', true],
    [{ LANDING_ALLOW_PRIVATE: 'off' }, 'landingAllowPrivate', false],
    [{ LANDING_ALLOW_PRIVATE: '127.0.0.2/32, 10.1.0.0/16' }, 'landingAllowPrivate', ['127.0.0.2/32', '10.1.0.0/16']],
    [{ RETRACTIONS_FROM: 'off' }, 'retractionsFrom', 'off'],
    [{ CROSSREF_API_URL: 'http://127.0.0.1:9/' }, 'crossrefApiUrl', 'http://127.0.0.1:9']
  ])('%j reads as %s %j', (env, key, value) => {
    expect(buildConfig(undefined, env)[key as keyof ReturnType<typeof buildConfig>]).toEqual(value)
  })

  it('the config file may give lists as lists', () => {
    const config = buildConfig({ verifyLevels: ['retraction'], landingAllowPrivate: ['127.0.0.2'] }, {})
    expect(config.verifyLevels).toEqual(['retraction'])
    expect(config.landingAllowPrivate).toEqual(['127.0.0.2'])
  })

  it.each([
    [
      { VERIFY_LEVELS: 'metadata,links' },
      'invalid setting verifyLevels (env VERIFY_LEVELS): "links" is not a verify level (metadata, retraction or landing)'
    ],
    [
      { VERIFY_CONCURRENCY: '0' },
      'invalid setting verifyConcurrency (env VERIFY_CONCURRENCY): expected an integer from 1 to 1024, got "0"'
    ],
    [
      { RETRACTIONS_FROM: 'openalex' },
      'invalid setting retractionsFrom (env RETRACTIONS_FROM): expected crossref, file or off, got "openalex"'
    ],
    [
      { CROSSREF_API_URL: 'api.crossref.org' },
      'invalid setting crossrefApiUrl (env CROSSREF_API_URL): expected an http(s) URL, got "api.crossref.org"'
    ],
    [
      { CROSSREF_CONCURRENCY: '17' },
      'invalid setting crossrefConcurrency (env CROSSREF_CONCURRENCY): expected an integer from 1 to 16, got "17"'
    ],
    [{ LANDING_PER_HOST: '0' }, 'invalid setting landingPerHost (env LANDING_PER_HOST): expected an integer from 1 to 16, got "0"'],
    [
      { LANDING_TIMEOUT_MS: '100' },
      'invalid setting landingTimeoutMs (env LANDING_TIMEOUT_MS): expected an integer from 500 to 60000, got "100"'
    ],
    [
      { LANDING_MAX_BYTES: '1000' },
      'invalid setting landingMaxBytes (env LANDING_MAX_BYTES): expected an integer from 65536 to 16777216, got "1000"'
    ],
    [
      { LANDING_ROBOTS_TTL_SECONDS: '172800' },
      'invalid setting landingRobotsTtlSeconds (env LANDING_ROBOTS_TTL_SECONDS): expected an integer from 0 to 86400, got "172800"'
    ], // RFC 9309 2.4
    [
      { LANDING_ALLOW_PRIVATE: 'intranet' },
      'invalid setting landingAllowPrivate (env LANDING_ALLOW_PRIVATE): expected true, false, or comma-separated addresses or CIDRs such as 127.0.0.2/32, got "intranet"'
    ],
    [
      { RETRACTIONS_FROM: 'file' },
      'invalid setting retractionsFile (RETRACTIONS_FILE): needed with RETRACTIONS_FROM=file, the Retraction Watch CSV to read'
    ],
    [
      { RETRACTIONS_FILE: 'retractions.csv' },
      'invalid setting retractionsFile (RETRACTIONS_FILE): "retractions.csv" means something only with RETRACTIONS_FROM=file, got crossref'
    ],
    [
      { LANDING_TTL_SECONDS: '600', LANDING_SHORT_TTL_SECONDS: '3600' },
      'invalid setting landingShortTtlSeconds (LANDING_SHORT_TTL_SECONDS): 3600 is above landingTtlSeconds 600: a blocked or dead page is looked at again sooner than a live one, never later'
    ]
  ])('%j stops the start: %s', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(ConfigError)
    expect(() => buildConfig(undefined, env)).toThrow(message)
  })

  it('RETRACTIONS_FROM=file with its file is taken (the file itself is checked at start by main/paths.ts)', () => {
    expect(buildConfig(undefined, { RETRACTIONS_FROM: 'file', RETRACTIONS_FILE: 'rw.csv.gz' }).retractionsFile).toBe('rw.csv.gz')
  })

  it('every LANDING_ALLOW_PRIVATE the parser takes makes address rules', () => {
    const config = buildConfig(undefined, { LANDING_ALLOW_PRIVATE: '127.0.0.2/32,fd00::/8,10.0.0.0/0008' })
    const rules = addressRulesOf(config.landingAllowPrivate)
    expect(refusedAddress('127.0.0.2', rules)).toBeUndefined()
    expect(refusedAddress('10.9.8.7', rules)).toBeUndefined()
    expect(refusedAddress('127.0.0.1', rules)).toBe('127.0.0.1 is a loopback address')
  })
})

describe("the landing checks' User-Agent", () => {
  it('is the configured one, saying it checks landing pages, where it is described, and whom to write to', () => {
    const config = { userAgent: 'doi-proxy/0.1 (self-hosted DOI resolver)', contactEmail: 'ops@example.org' }
    expect(landingUserAgent(config)).toBe(
      'doi-proxy/0.1 (self-hosted DOI resolver) landing-check (+docs/checking-dois.md#the-crawler; mailto:ops@example.org)'
    )
    expect(landingUserAgent({ ...config, contactEmail: undefined })).toBe(
      'doi-proxy/0.1 (self-hosted DOI resolver) landing-check (+docs/checking-dois.md#the-crawler)'
    )
    expect(landingUserAgent(config)).not.toBe(upstreamUserAgent(config))
  })
})
