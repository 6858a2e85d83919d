import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createMetrics } from '../../../src/observe/metrics.js'
import { openLocalStore } from '../../../src/resolve/local-store/store.js'
import { openRecorder } from '../../../src/resolve/recording/recorder.js'
import { recordFiles } from '../../../src/resolve/recording/record-file.js'
import { createCrossrefUpdates } from '../../../src/resolve/retraction/crossref-updates.js'
import { createRetractions, CROSSREF_WORK_TYPE, NOT_RECORDED, OTHER_AGENCY } from '../../../src/resolve/retraction/retractions.js'
import type { RetractionsOptions } from '../../../src/resolve/retraction/retractions.js'
import { FakeCrossrefApi } from '../../support/fake-crossref-api.js'
import { str } from '../../support/records.js'

// Issue 41: the retraction level is "recorded and replayed by RECORD_TO/OFFLINE like everything else":
// Crossref's answers go into the recorded file beside the DOI's record, and an offline run gives the same verdicts.
const WORKS = {
  '10.1/retracted': { 'updated-by': [{ DOI: '10.1/notice', type: 'retraction', date: '2021-03-04' }] },
  '10.1/corrected': { 'updated-by': [{ DOI: '10.1/erratum', type: 'correction', date: '2020-01-02' }] },
  '10.1/fine': {}
}
const DOIS = ['10.1/retracted', '10.1/corrected', '10.1/fine', '10.5061/other-agency']
const log = { info: () => {}, warn: () => {}, error: () => {} }
const dirs: string[] = []
const open: Array<{ close: () => Promise<void> | void }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map(async (x) => await x.close()))
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function service(opts: Partial<RetractionsOptions>) {
  const metrics = createMetrics()
  return { metrics, s: createRetractions({ from: 'crossref', metrics, now: () => 0, ttlSeconds: 3600, lookupMs: 3_000, ...opts }) }
}

describe('retraction verdicts recorded and replayed', () => {
  it('RECORD_TO then OFFLINE gives the same verdicts, asking Crossref nothing offline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-rr-'))
    dirs.push(dir)
    const api = await FakeCrossrefApi.start({ works: WORKS })
    open.push(api)
    const crossref = createCrossrefUpdates({
      baseUrl: api.url,
      mailto: undefined,
      userAgent: 'doi-proxy/test',
      concurrency: 2,
      timeoutMs: 2_000,
      maxBodyBytes: 1 << 20
    })
    open.push(crossref)
    const recorder = await openRecorder({ dir, flushDelayMs: 60_000, log })
    const online = service({ crossref, recorder }).s
    const verdicts = []
    for (const doi of DOIS) {
      recorder.record(doi, [str(1, 'URL', `https://example.org/${doi}`)]) // the lookup records the DOI's record
      verdicts.push(await online.find(doi))
    }
    await recorder.close()
    expect(verdicts.map((v) => v.verdict)).toEqual(['retracted', 'corrected', 'none', null])
    expect(verdicts[3]).toMatchObject({ error: OTHER_AGENCY })

    // Recorded trimmed to what the verdict reads: the notices, not the title or the references.
    const lines = readFileSync(recordFiles(dir).path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { handle: string; metadata?: Record<string, { body: string }> })
    const recorded = lines.find((l) => l.handle === '10.1/retracted')?.metadata?.[CROSSREF_WORK_TYPE]
    expect(JSON.parse(recorded?.body ?? 'null')).toEqual({
      status: 'ok',
      'message-type': 'work',
      message: { DOI: '10.1/retracted', 'updated-by': [expect.objectContaining({ DOI: '10.1/notice', type: 'retraction' })] }
    })

    const store = await openLocalStore({ dir, authoritativePrefixes: [], watch: false, log })
    open.push(store)
    const seen = api.seen.length
    const { s: offline, metrics } = service({ recorded: store })
    const replayed = []
    for (const doi of DOIS) replayed.push(await offline.find(doi))
    expect(replayed).toEqual(verdicts)
    expect(api.seen).toHaveLength(seen)
    expect(await offline.find('10.1/never-asked')).toEqual({ verdict: null, notice: null, date: null, error: NOT_RECORDED })
    const { values } = await metrics.retractionLookups.get()
    expect(Object.fromEntries(values.map((v) => [`${v.labels.source}/${v.labels.outcome}`, v.value]))).toEqual({
      'recorded/found': 2,
      'recorded/none': 1,
      'recorded/other_agency': 1,
      'recorded/not_recorded': 1
    })
  })
})
