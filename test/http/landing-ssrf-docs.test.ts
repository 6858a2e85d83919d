import { readFileSync } from 'node:fs'
import { describe, expect, it, onTestFinished } from 'vitest'
import { setup } from '../support/app.js'
import { FakeLandingSite, pages, Sentinel } from '../support/fake-landing.js'
import { fakeLookup } from '../support/landing-dns.js'
import { str } from '../support/records.js'
import { addressRulesOf, refusedAddress } from '../../src/handle/address-rules.js'
import type { HandleValue } from '../../src/handle/types.js'
import type { BatchResult } from '../../src/http/batch.js'

// docs/security.md §7, run: each registered URL of its table through `POST /api/batch?verify=landing`, with
// the evidence the table shows, and no connection made. The doc's ports are the sentinel's here (a server on
// 127.0.0.1 that counts connections); journal.example is a fake site on 127.0.0.2 (the one network allowed,
// standing in for the public internet), and wiki.intranet.example resolves to it and to 10.0.0.5.

const DOC = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8')

/** The rows of §7's table: the registered URL (its first code span) and the evidence (its last). */
function shownRefusals(): Array<{ url: string; evidence: string }> {
  const section = DOC.slice(DOC.indexOf('## 7. Landing checks'))
  const table = /\| registered URL \| evidence \|\n\|---\|---\|\n((?:\|.*\n)+)/.exec(section)?.[1] ?? ''
  return table
    .trim()
    .split('\n')
    .map((row) => {
      const spans = [...row.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
      return { url: spans[0]!, evidence: spans.at(-1)! }
    })
}

describe('docs/security.md, landing checks and server-side request forgery', () => {
  it('refuses the first address of every range the table of refused addresses names, and lets a public one through', () => {
    const section = DOC.slice(DOC.indexOf('## 7. Landing checks'))
    const table = /\| range \| what it is \|\n\|---\|---\|\n((?:\|.*\n)+)/.exec(section)?.[1] ?? ''
    const ranges = [...table.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/^\[|\]$/g, ''))
    expect(ranges.length).toBeGreaterThan(25)
    const rules = addressRulesOf(false)
    for (const range of ranges) expect([range, refusedAddress(range.split('/')[0]!, rules)]).toEqual([range, expect.any(String)])
    expect(refusedAddress('93.184.215.14', rules)).toBeUndefined()
  })

  it('refuses each registered URL of the table with the evidence it shows, connecting to none', async () => {
    const sentinel = await Sentinel.start()
    const site = await FakeLandingSite.start({ pages: { '/moved': pages.redirect('http://169.254.169.254/latest/meta-data/') } })
    onTestFinished(async () => {
      await site.close()
      await sentinel.close()
    })
    const shown = shownRefusals()
    expect(shown).toHaveLength(4)
    const ours = (url: string): string =>
      url
        .replaceAll(':6379/', `:${sentinel.port}/`)
        .replace('http://wiki.intranet.example/', `http://wiki.intranet.example:${sentinel.port}/`)
        .replace('https://journal.example', site.origin('journal.example'))
    const records: Record<string, HandleValue[]> = {}
    shown.forEach(({ url }, i) => (records[`10.5555/ssrf${i}`] = [str(1, 'URL', ours(url))]))
    const { app } = await setup({
      records,
      overrides: { upstreamRetries: 0, landingAllowPrivate: ['127.0.0.2/32'], landingHostDelayMs: 0 },
      deps: { landingLookup: fakeLookup({ 'journal.example': '127.0.0.2', 'wiki.intranet.example': ['127.0.0.2', '10.0.0.5'] }) }
    })
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch?verify=landing',
      headers: { 'content-type': 'text/plain' },
      payload: Object.keys(records).join('\n')
    })
    const landings = res.body
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => (JSON.parse(l) as BatchResult).landing)
    expect(landings.map((l) => [l?.verdict, l?.status, l?.evidence])).toEqual(shown.map((s) => ['dead', null, s.evidence]))
    expect(sentinel.connections).toBe(0)
    // The public page was asked (its robots.txt, then the page); the redirect's target never.
    expect(site.paths).toEqual(['/robots.txt', '/moved'])
  })
})
