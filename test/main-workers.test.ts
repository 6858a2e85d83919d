import { describe, expect, it } from 'vitest'
import { defaultConfig } from '../src/config/schema.js'
import type { Config } from '../src/config/schema.js'
import { budgetsExceeded, workerShare } from '../src/main/workers.js'

// WORKERS processes are one host to doi.org, the agencies and the open-access provider: src/main/workers.ts.
// (OA_DAILY_LIMIT's share is its counter's: test/http/linkout.test.ts.)
const config = (overrides: Partial<Config> = {}): Config => ({ ...defaultConfig(), ...overrides })

const budgets = (upstream: number, connections: number, agency: number, oa: number, crossref: number, perHost: number) => ({
  upstreamMaxConcurrent: upstream,
  upstreamConnections: connections,
  metadataAgencyConcurrency: agency,
  oaConnections: oa,
  crossrefConcurrency: crossref,
  landingPerHost: perHost
})

describe("a worker's share of the host's budgets", () => {
  const vectors: Array<{ why: string; config: Config; workers: number; share: ReturnType<typeof workerShare> }> = [
    // The defaults (16, 16, 4, 8, 3, 2; a second between a host's starts) over two cores: half each, the gap twice as long.
    {
      why: 'defaults, two workers',
      config: config(),
      workers: 2,
      share: { ...budgets(8, 8, 2, 4, 1, 1), landingHostDelayMs: 2000 }
    },
    // Rounded down, so that together they stay within the setting.
    {
      why: 'defaults, three workers',
      config: config(),
      workers: 3,
      share: { ...budgets(5, 5, 1, 2, 1, 1), landingHostDelayMs: 3000 }
    },
    // At least one each: a worker that may never ask would answer nothing (budgetsExceeded warns).
    {
      why: 'more workers than slots',
      config: config(),
      workers: 32,
      share: { ...budgets(1, 1, 1, 1, 1, 1), landingHostDelayMs: 32_000 }
    },
    {
      why: 'one worker keeps everything',
      config: config({ upstreamMaxConcurrent: 7 }),
      workers: 1,
      share: { ...budgets(7, 16, 4, 8, 3, 2), landingHostDelayMs: 1000 }
    }
  ]
  for (const v of vectors) {
    it(v.why, () => {
      expect(workerShare(v.config, v.workers)).toEqual(v.share)
    })
  }
})

describe('the budgets more workers than their setting exceed', () => {
  it.each<[number, string[]]>([
    [2, []],
    [3, ['landingPerHost']], // 2 requests at once to one landing host by default
    [4, ['crossrefConcurrency', 'landingPerHost']], // 3 to Crossref's REST API
    [5, ['metadataAgencyConcurrency', 'crossrefConcurrency', 'landingPerHost']], // 4 agency fetches
    [9, ['metadataAgencyConcurrency', 'oaConnections', 'crossrefConcurrency', 'landingPerHost']],
    [
      17,
      [
        'upstreamMaxConcurrent',
        'upstreamConnections',
        'metadataAgencyConcurrency',
        'oaConnections',
        'crossrefConcurrency',
        'landingPerHost'
      ]
    ]
  ])('%i workers: %j', (workers, exceeded) => {
    expect(budgetsExceeded(config(), workers)).toEqual(exceeded)
  })

  it("leaves out Crossref's and the landing hosts' budgets when nothing uses them", () => {
    expect(budgetsExceeded(config({ verifyLevels: ['metadata'] }), 9)).toEqual(['metadataAgencyConcurrency', 'oaConnections'])
  })

  it("leaves out Crossref's when retractions come from a file", () => {
    expect(budgetsExceeded(config({ retractionsFrom: 'file' }), 4)).toEqual(['landingPerHost'])
  })

  it("leaves out the landing hosts' when Redis holds the fleet's host slots", () => {
    expect(budgetsExceeded(config({ redisUrl: 'redis://127.0.0.1:6379' }), 4)).toEqual(['crossrefConcurrency'])
  })
})
