import { describe, expect, it } from 'vitest'
import { defaultConfig } from '../src/config/schema.js'
import type { Config } from '../src/config/schema.js'
import { budgetsExceeded, workerShare } from '../src/main/workers.js'

// WORKERS processes are one host to doi.org, the agencies and the open-access provider: src/main/workers.ts.
// (OA_DAILY_LIMIT's share is its counter's: test/http/linkout.test.ts.)
const config = (overrides: Partial<Config> = {}): Config => ({ ...defaultConfig(), ...overrides })

describe("a worker's share of the host's budgets", () => {
  const vectors: Array<{ why: string; config: Config; workers: number; share: ReturnType<typeof workerShare> }> = [
    // The defaults (16, 16, 4, 8) over two cores: half each.
    {
      why: 'defaults, two workers',
      config: config(),
      workers: 2,
      share: { upstreamMaxConcurrent: 8, upstreamConnections: 8, metadataAgencyConcurrency: 2, oaConnections: 4 }
    },
    // Rounded down, so that together they stay within the setting.
    {
      why: 'defaults, three workers',
      config: config(),
      workers: 3,
      share: { upstreamMaxConcurrent: 5, upstreamConnections: 5, metadataAgencyConcurrency: 1, oaConnections: 2 }
    },
    // At least one each: a worker that may never ask would answer nothing (budgetsExceeded warns).
    {
      why: 'more workers than slots',
      config: config(),
      workers: 32,
      share: { upstreamMaxConcurrent: 1, upstreamConnections: 1, metadataAgencyConcurrency: 1, oaConnections: 1 }
    },
    {
      why: 'one worker keeps everything',
      config: config({ upstreamMaxConcurrent: 7 }),
      workers: 1,
      share: { upstreamMaxConcurrent: 7, upstreamConnections: 16, metadataAgencyConcurrency: 4, oaConnections: 8 }
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
    [4, []],
    [5, ['metadataAgencyConcurrency']], // 4 agency fetches at once by default
    [9, ['metadataAgencyConcurrency', 'oaConnections']],
    [17, ['upstreamMaxConcurrent', 'upstreamConnections', 'metadataAgencyConcurrency', 'oaConnections']]
  ])('%i workers: %j', (workers, exceeded) => {
    expect(budgetsExceeded(config(), workers)).toEqual(exceeded)
  })
})
