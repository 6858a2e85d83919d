import { describe, expect, it } from 'vitest'
import { buildConfig, ConfigError, healthEnabled } from '../../src/config/schema.js'
import type { Config } from '../../src/config/schema.js'

// Issue 42: the settings of resolution health, checked once at start, each message naming the setting and the value.
describe('the settings of resolution health', () => {
  it("by default health is off: nothing watched, no database, the issue's schedule (weekly, 3 failures 6 h apart)", () => {
    const config = buildConfig(undefined, {})
    expect(healthEnabled(config)).toBe(false)
    expect(config.healthWatch).toEqual([])
    expect(config.healthListFile).toBeUndefined()
    // Off, the default file is not used, so main/paths.ts does not ask for data/ to be writable.
    expect(config.healthDb).toBeUndefined()
    expect([config.healthIntervalSeconds, config.healthConfirm, config.healthConfirmGapSeconds]).toEqual([604_800, 3, 21_600])
    expect([config.healthKeepDays, config.healthConcurrency, config.healthMaxDois, config.healthLogKeepSeconds]).toEqual([
      365, 32, 1_000_000, 172_800
    ])
  })

  it('a watched prefix or a list file turns it on, with the database under data/ unless HEALTH_DB names another', () => {
    expect(buildConfig(undefined, { HEALTH_WATCH: '10.5555' }).healthDb).toBe('data/health.sqlite')
    expect(healthEnabled(buildConfig(undefined, { HEALTH_LIST_FILE: 'dois.txt' }))).toBe(true)
    expect(buildConfig(undefined, { HEALTH_WATCH: '10.5555', HEALTH_DB: '/data/health.sqlite' }).healthDb).toBe('/data/health.sqlite')
    // Empty: the history in memory only.
    expect(buildConfig(undefined, { HEALTH_WATCH: '10.5555', HEALTH_DB: '' }).healthDb).toBeUndefined()
  })

  it.each([
    [{ HEALTH_WATCH: '10.5555, 10.1234' }, 'healthWatch', ['10.5555', '10.1234']],
    [{ HEALTH_LIST_FILE: 'config/our-dois.txt' }, 'healthListFile', 'config/our-dois.txt'],
    [{ HEALTH_INTERVAL_SECONDS: '86400', HEALTH_CONFIRM_GAP_SECONDS: '3600' }, 'healthIntervalSeconds', 86_400],
    [{ HEALTH_CONFIRM: '1' }, 'healthConfirm', 1], // the first failure reported at once
    [{ HEALTH_CONFIRM_GAP_SECONDS: '0' }, 'healthConfirmGapSeconds', 0],
    [{ HEALTH_KEEP_DAYS: '14' }, 'healthKeepDays', 14], // exactly two weekly intervals
    [{ HEALTH_CONCURRENCY: '1024' }, 'healthConcurrency', 1024],
    [{ HEALTH_MAX_DOIS: '10000000' }, 'healthMaxDois', 10_000_000],
    [{ HEALTH_LOG_KEEP_SECONDS: '3600' }, 'healthLogKeepSeconds', 3600]
  ])('%j reads as %s %j', (env, key, value) => {
    expect(buildConfig(undefined, env)[key as keyof Config]).toEqual(value)
  })

  it('the config file may give the prefixes as a list', () => {
    expect(buildConfig({ healthWatch: ['10.5555', '10.1234'] }, {}).healthWatch).toEqual(['10.5555', '10.1234'])
  })

  it.each([
    [
      { HEALTH_WATCH: '10.5555/abc' },
      'invalid setting healthWatch (env HEALTH_WATCH): expected comma-separated prefixes such as 10.5555 (no spaces, no slash), got "10.5555/abc"'
    ],
    [{ HEALTH_WATCH: '10.5555,10.1234,10.5555' }, 'invalid setting healthWatch (HEALTH_WATCH): "10.5555" is named twice'],
    [{ HEALTH_WATCH: '10.ABC,10.abc' }, 'invalid setting healthWatch (HEALTH_WATCH): "10.abc" is named twice'], // DOIs are case-insensitive
    [
      { HEALTH_INTERVAL_SECONDS: '59' },
      'invalid setting healthIntervalSeconds (env HEALTH_INTERVAL_SECONDS): expected an integer from 60 to 31536000, got "59"'
    ],
    [{ HEALTH_CONFIRM: '0' }, 'invalid setting healthConfirm (env HEALTH_CONFIRM): expected an integer from 1 to 10, got "0"'],
    [{ HEALTH_CONFIRM: '11' }, 'invalid setting healthConfirm (env HEALTH_CONFIRM): expected an integer from 1 to 10, got "11"'],
    [
      { HEALTH_CONFIRM_GAP_SECONDS: '-1' },
      'invalid setting healthConfirmGapSeconds (env HEALTH_CONFIRM_GAP_SECONDS): expected an integer from 0 to 604800, got "-1"'
    ],
    [{ HEALTH_DB: 'a\nb' }, 'invalid setting healthDb (env HEALTH_DB): expected a string without control characters, got "a\\nb"'],
    [{ HEALTH_KEEP_DAYS: '0' }, 'invalid setting healthKeepDays (env HEALTH_KEEP_DAYS): expected an integer from 1 to 3650, got "0"'],
    [
      { HEALTH_CONCURRENCY: '1025' },
      'invalid setting healthConcurrency (env HEALTH_CONCURRENCY): expected an integer from 1 to 1024, got "1025"'
    ],
    [{ HEALTH_MAX_DOIS: 'many' }, 'invalid setting healthMaxDois (env HEALTH_MAX_DOIS): expected an integer, got "many"'],
    [
      { HEALTH_LOG_KEEP_SECONDS: '60' },
      'invalid setting healthLogKeepSeconds (env HEALTH_LOG_KEEP_SECONDS): expected an integer from 3600 to 2592000, got "60"'
    ],
    // Three failures 6 h apart take 12 h: they fit a day's interval, not 12 h.
    [
      { HEALTH_INTERVAL_SECONDS: '43200' },
      'invalid setting healthConfirmGapSeconds (HEALTH_CONFIRM_GAP_SECONDS): 3 checks (HEALTH_CONFIRM) 21600 s apart take 43200 s, not below healthIntervalSeconds (HEALTH_INTERVAL_SECONDS) 43200: a breakage would be confirmed only after the next scheduled check'
    ],
    [
      { HEALTH_CONFIRM: '10', HEALTH_CONFIRM_GAP_SECONDS: '86400' },
      'invalid setting healthConfirmGapSeconds (HEALTH_CONFIRM_GAP_SECONDS): 10 checks (HEALTH_CONFIRM) 86400 s apart take 777600 s, not below healthIntervalSeconds (HEALTH_INTERVAL_SECONDS) 604800: a breakage would be confirmed only after the next scheduled check'
    ],
    [
      { HEALTH_KEEP_DAYS: '13' },
      'invalid setting healthKeepDays (HEALTH_KEEP_DAYS): 13 days is less than two intervals of healthIntervalSeconds (HEALTH_INTERVAL_SECONDS) 604800: each check needs the one before it'
    ],
    [
      { HEALTH_WATCH: '10.5555,10.1234', OFFLINE: 'true' },
      'invalid setting healthWatch (HEALTH_WATCH): "10.5555,10.1234" turns health checks on, which need the network; OFFLINE=true forbids it'
    ],
    [
      { HEALTH_LIST_FILE: 'our-dois.txt', OFFLINE: 'true' },
      'invalid setting healthListFile (HEALTH_LIST_FILE): "our-dois.txt" turns health checks on, which need the network; OFFLINE=true forbids it'
    ]
  ])('%j stops the start: %s', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(ConfigError)
    expect(() => buildConfig(undefined, env)).toThrow(message)
  })

  it('a confirmation that just fits the interval is taken: HEALTH_CONFIRM 1 needs no gap at all', () => {
    const fits = buildConfig(undefined, { HEALTH_INTERVAL_SECONDS: '43201' })
    expect((fits.healthConfirm - 1) * fits.healthConfirmGapSeconds).toBeLessThan(fits.healthIntervalSeconds)
    expect(buildConfig(undefined, { HEALTH_INTERVAL_SECONDS: '60', HEALTH_CONFIRM: '1', HEALTH_KEEP_DAYS: '1' }).healthConfirm).toBe(1)
  })
})
