import { describe, expect, it } from 'vitest'
import { buildConfig, upstreamUserAgent } from '../src/config/schema.js'

describe('configuration (issue 2 item 10)', () => {
  it('defaults serve on 127.0.0.1:8000 through doi.org', () => {
    const c = buildConfig(undefined, {})
    expect([c.host, c.port, c.upstreamUrl]).toEqual(['127.0.0.1', 8000, 'https://doi.org/api/handles'])
  })

  it('the environment overrides the file, which overrides the defaults', () => {
    const c = buildConfig({ port: 9000, host: '0.0.0.0' }, { PORT: '9100' })
    expect([c.host, c.port]).toEqual(['0.0.0.0', 9100])
  })

  it.each([
    [{ PORT: 'eighty' }, /port \(env PORT\): expected an integer, got "eighty"/],
    [{ PORT: '70000' }, /port \(env PORT\): expected an integer from 0 to 65535, got "70000"/],
    [{ UPSTREAM_URL: 'ftp://x' }, /upstreamUrl \(env UPSTREAM_URL\): expected an http\(s\) URL/],
    [{ UPSTREAM_URL: 'https://doi.org/api/handles?x=1' }, /without \?query/],
    [
      { TRUST_PROXY: 'maybe' },
      /trustProxy \(env TRUST_PROXY\): expected true, false, a number of proxies \(0 to 16\) or the proxies' addresses\/CIDRs, got "maybe"/
    ],
    [{ TRUST_PROXY: '17' }, /trustProxy \(env TRUST_PROXY\)/],
    [{ REQUEST_DEADLINE_MS: '30000' }, /requestDeadlineMs: 30000 must be below requestTimeoutMs 30000/],
    [{ LOG_LEVEL: 'loud' }, /logLevel \(env LOG_LEVEL\): expected one of fatal/],
    [{ ALLOWED_SCHEMES: 'https,java script' }, /allowedSchemes/],
    [{ RATE_LIMIT_ALLOW_LIST: '10.0.0.0/33' }, /rateLimitAllowList \(env RATE_LIMIT_ALLOW_LIST\)/],
    [{ RA_NAMES: 'NOEQUALS' }, /raNames \(env RA_NAMES\): expected KEY=Name pairs/],
    [{ LOCAL_AUTHORITATIVE_PREFIXES: '10.1/x' }, /localAuthoritativePrefixes/],
    [{ USER_AGENT: 'a\nb' }, /userAgent \(env USER_AGENT\): expected a string without control characters/],
    [{ CACHE_MIN_TTL_SECONDS: '90000', CACHE_MAX_TTL_SECONDS: '60' }, /cacheMinTtlSeconds/]
  ])('a bad setting %o stops the start with a message naming it and the value', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(message)
  })

  it('an unknown key in the config file is refused', () => {
    expect(() => buildConfig({ prot: 8000 }, {})).toThrow(/unknown setting "prot" in the config file/)
  })

  it('a bad value in the config file names the file as its source', () => {
    expect(() => buildConfig({ port: '80' }, {})).not.toThrow()
    expect(() => buildConfig({ port: true }, {})).toThrow(/port \(config file\): expected an integer, got true/)
  })

  it('an empty optional setting means none', () => {
    expect(buildConfig(undefined, { LOCAL_STORE_DIR: '', PUBLIC_BASE_URL: '' })).toMatchObject({
      localStoreDir: undefined,
      publicBaseUrl: undefined
    })
  })

  it('lists and maps are read from comma-separated strings', () => {
    const c = buildConfig(undefined, {
      ALLOWED_SCHEMES: 'HTTPS, http',
      RA_NAMES: 'newra=New Agency',
      RATE_LIMIT_ALLOW_LIST: '10.0.0.0/8, ::1'
    })
    expect(c.allowedSchemes).toEqual(['https', 'http'])
    expect(c.raNames).toEqual({ NEWRA: 'New Agency' })
    expect(c.rateLimitAllowList).toEqual(['10.0.0.0/8', '::1'])
  })

  it.each([
    ['1', 1],
    ['2', 2],
    ['0', 0],
    ['true', true],
    ['false', false],
    ['10.0.0.1, 10.1.0.0/16', ['10.0.0.1', '10.1.0.0/16']]
  ])("TRUST_PROXY=%s means %o (a hop count, every hop, none, or the proxies' addresses)", (env, value) => {
    expect(buildConfig(undefined, { TRUST_PROXY: env }).trustProxy).toEqual(value)
  })

  it('LOCAL_STORE_POLL_MS turns polling of the local store on, for mounts where fs.watch hears nothing', () => {
    expect(buildConfig(undefined, {}).localStorePollMs).toBe(0)
    expect(buildConfig(undefined, { LOCAL_STORE_POLL_MS: '5000' }).localStorePollMs).toBe(5000)
    expect(() => buildConfig(undefined, { LOCAL_STORE_POLL_MS: 'often' })).toThrow(
      /localStorePollMs \(env LOCAL_STORE_POLL_MS\): expected an integer/
    )
  })

  it('the User-Agent carries the contact address', () => {
    expect(upstreamUserAgent({ userAgent: 'doi-proxy/0.1', contactEmail: 'ops@x.example' })).toBe('doi-proxy/0.1 (mailto:ops@x.example)')
  })
})
