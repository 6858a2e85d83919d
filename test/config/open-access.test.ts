import { describe, expect, it } from 'vitest'
import { buildConfig } from '../../src/config/schema.js'

// The open-access source's settings (docs/institutional.md "Open access first").
const CHAIN = [{ id: 'anyone', name: 'Everyone else', networks: ['0.0.0.0/0', '::/0'], linkout: ['open-access', 'registered'] }]

describe('open-access settings', () => {
  it("none by default, with the providers' public bases and a 300 ms budget", () => {
    const c = buildConfig(undefined, {})
    expect(c.oaProvider).toBeUndefined()
    expect(c.unpaywallUrl).toBe('https://api.unpaywall.org/v2')
    expect(c.openalexUrl).toBe('https://api.openalex.org')
    expect(c.oaBudgetMs).toBe(300)
  })

  it('from the environment', () => {
    const c = buildConfig(undefined, {
      OA_PROVIDER: 'unpaywall',
      UNPAYWALL_EMAIL: 'library@example.edu',
      UNPAYWALL_URL: 'http://127.0.0.1:9/v2/',
      OA_BUDGET_MS: '150'
    })
    expect([c.oaProvider, c.unpaywallEmail, c.unpaywallUrl, c.oaBudgetMs]).toEqual([
      'unpaywall',
      'library@example.edu',
      'http://127.0.0.1:9/v2',
      150
    ])
  })

  it('grouped as openAccess in the config file, the environment still winning', () => {
    const c = buildConfig(
      { openAccess: { provider: 'openalex', openalexUrl: 'http://127.0.0.1:9', budgetMs: 200, dailyLimit: 1000 }, localServices: CHAIN },
      { OA_BUDGET_MS: '100' }
    )
    expect([c.oaProvider, c.openalexUrl, c.oaBudgetMs, c.oaDailyLimit]).toEqual(['openalex', 'http://127.0.0.1:9', 100, 1000])
  })

  it.each<[Record<string, unknown> | undefined, Record<string, string>, RegExp]>([
    [
      undefined,
      { OA_PROVIDER: 'crossref' },
      /oaProvider \(env OA_PROVIDER\): expected one of unpaywall, openalex, file, or empty, got "crossref"/
    ],
    [undefined, { OA_PROVIDER: 'unpaywall' }, /unpaywallEmail: OA_PROVIDER=unpaywall needs UNPAYWALL_EMAIL/],
    [undefined, { OA_PROVIDER: 'file' }, /oaSnapshotFile: OA_PROVIDER=file needs OA_SNAPSHOT_FILE/],
    [undefined, { OA_BUDGET_MS: '20000' }, /oaBudgetMs \(env OA_BUDGET_MS\): expected an integer from 0 to 10000/],
    [undefined, { UNPAYWALL_URL: 'ftp://x.example' }, /unpaywallUrl \(env UNPAYWALL_URL\): expected an http\(s\) URL/],
    [{ localServices: CHAIN }, {}, /service "anyone" has "open-access" in its linkout but OA_PROVIDER is not set/],
    [{ openAccess: 'unpaywall' }, {}, /openAccess \(config file\): expected an object/],
    [{ openAccess: { provder: 'unpaywall' } }, {}, /unknown setting "openAccess.provder" in the config file/],
    [{ openAccess: { budgetMs: 1 }, oaBudgetMs: 2 }, {}, /gives oaBudgetMs twice/],
    [{ openAccess: { budgetMs: 'soon' } }, {}, /oaBudgetMs \(config file\): expected an integer/]
  ])('a bad setting %o %o stops the start with a message naming it', (file, env, message) => {
    expect(() => buildConfig(file, env)).toThrow(message)
  })
})
