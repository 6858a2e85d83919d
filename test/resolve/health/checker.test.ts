import { afterEach, describe, expect, it } from 'vitest'
import { FakeLandingSite, pages } from '../../support/fake-landing.js'
import type { Page } from '../../support/fake-landing.js'
import { FakeUpstream } from '../../support/fake-upstream.js'
import { realChecker } from '../../support/health-checker.js'
import { fakeLookup } from '../../support/landing-dns.js'
import { admin, str } from '../../support/records.js'

// Issue 42 (plan D13): one check of a watched DOI, through our own resolution and issue 41's landing checks,
// against a real fake registry and real fake landing sites on loopback.
const lookup = fakeLookup({ 'journal.test': '127.0.0.2', 'casino.test': '127.0.0.3' })
const opened: Array<{ close: () => Promise<void> }> = []

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (o) => await o.close()))
})

async function world(table: Record<string, Page>) {
  const journal = await FakeLandingSite.start({ pages: table })
  opened.push(journal)
  const upstream = await FakeUpstream.start({})
  opened.push(upstream)
  const checker = await realChecker(upstream, { lookup, perHost: 2, keepVerdicts: true }, opened)
  const register = (doi: string, path: string): void => {
    upstream.set(doi, [str(1, 'URL', `${journal.origin('journal.test')}${path}`), admin()])
  }
  return { journal, upstream, checker, register, table }
}

const signal = new AbortController().signal

describe('one health check of a watched DOI', () => {
  it('is alive when the registered page names the DOI', async () => {
    const w = await world({ '/a': pages.citationDoi('10.5555/a') })
    w.register('10.5555/a', '/a')
    const result = await w.checker.check({ doi: '10.5555/a', lastGood: null }, 'scheduled', signal)
    expect(result).toMatchObject({ verdict: 'alive', status: 200, registeredUrl: w.journal.origin('journal.test') + '/a' })
  })

  it('is dead when the page answers 404, with the failing URL', async () => {
    const w = await world({ '/gone': pages.status(404) })
    w.register('10.5555/gone', '/gone')
    const result = await w.checker.check({ doi: '10.5555/gone', lastGood: null }, 'scheduled', signal)
    expect(result).toMatchObject({ verdict: 'dead', status: 404, finalUrl: w.journal.origin('journal.test') + '/gone' })
  })

  it('is not-found when the registry does not know the DOI', async () => {
    const w = await world({})
    const result = await w.checker.check({ doi: '10.5555/never', lastGood: null }, 'scheduled', signal)
    expect(result).toMatchObject({ verdict: 'not-found', status: 404, registeredUrl: null, finalUrl: null })
    expect(w.journal.paths).toEqual([])
  })

  it('is no-url when the record gives no URL to visit', async () => {
    const w = await world({})
    w.upstream.set('10.5555/nourl', [str(1, 'EMAIL', 'someone@example.org'), admin()])
    const result = await w.checker.check({ doi: '10.5555/nourl', lastGood: null }, 'scheduled', signal)
    expect(result.verdict).toBe('no-url')
  })

  it('is error, not a verdict on the DOI, when the registry fails', async () => {
    const w = await world({})
    w.upstream.mode = { kind: 'status', status: 500 }
    const result = await w.checker.check({ doi: '10.5555/any', lastGood: null }, 'scheduled', signal)
    expect(result.verdict).toBe('error')
    expect(result.evidence).toMatch(/could not be resolved/)
  })

  it('is takeover when the page moved to another domain that names neither DOI nor title', async () => {
    const casino = await FakeLandingSite.start({ host: '127.0.0.3', pages: { '/': pages.casino() } })
    opened.push(casino)
    const w = await world({ '/moved': pages.redirect(() => `${casino.origin('casino.test')}/`) })
    w.register('10.5555/taken', '/moved')
    const lastGood = { url: `${w.journal.origin('journal.test')}/moved`, at: Date.parse('2026-05-02T00:00:00Z') }
    const result = await w.checker.check({ doi: '10.5555/taken', lastGood }, 'scheduled', signal)
    expect(result.verdict).toBe('takeover')
    expect(result.evidence).toBe('landed on casino.test; alive on journal.test until 2026-05-02')
  })

  it('a confirmation visits the page again though a verdict is kept', async () => {
    const w = await world({ '/flaky': pages.citationDoi('10.5555/flaky') })
    w.register('10.5555/flaky', '/flaky')
    expect((await w.checker.check({ doi: '10.5555/flaky', lastGood: null }, 'scheduled', signal)).verdict).toBe('alive')
    w.table['/flaky'] = pages.status(410)
    expect((await w.checker.check({ doi: '10.5555/flaky', lastGood: null }, 'scheduled', signal)).verdict).toBe('alive')
    expect((await w.checker.check({ doi: '10.5555/flaky', lastGood: null }, 'confirm', signal)).verdict).toBe('dead')
  })
})
