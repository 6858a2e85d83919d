import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { FakeAgency } from '../../support/fake-agency.js'
import { FakeCrossrefApi } from '../../support/fake-crossref-api.js'
import { FakeLandingSite, pages } from '../../support/fake-landing.js'
import { FakeUpstream } from '../../support/fake-upstream.js'
import { admin, str } from '../../support/records.js'
import { ranToEnd } from '../../support/server-process.js'
import type { HandleValue } from '../../../src/handle/types.js'

// `doi-proxy check --upstream --verify metadata,retraction,landing` end to end (issue 41): the real command in
// a child process, its in-process server asking real fakes: the Handle API, an agency's CSL-JSON, Crossref's
// REST API and landing pages on 127.0.0.2 (IP literals, LANDING_ALLOW_PRIVATE=127.0.0.2/32: no name is resolved).

const REPO = new URL('../../..', import.meta.url).pathname
const TSX = new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url).href
const REFS = join(REPO, 'test/fixtures/verify/refs.bib')
const CSL = 'application/vnd.citationstyles.csl+json'

const csl = (fields: Record<string, unknown>): Record<string, string> => ({ [CSL]: JSON.stringify({ type: 'article-journal', ...fields }) })
const year = (y: number): { 'date-parts': number[][] } => ({ 'date-parts': [[y]] })

describe('doi-proxy check --upstream --verify', { timeout: 120_000 }, () => {
  it('names the wrong title, the wrong year, the retraction and the dead page of refs.bib, and fails', async () => {
    const agency = await FakeAgency.start({
      '10.5555/accents': csl({
        title: 'On the DNA of Schrödinger’s α cats',
        subtitle: ['an École study'],
        issued: year(2019),
        author: [{ family: 'Müller', given: 'Hans' }]
      }),
      '10.5555/wrong-title': csl({
        title: 'Soil erosion in Kansas wheat fields',
        issued: year(2020),
        author: [{ family: 'Smith', given: 'Anna' }]
      }),
      '10.5555/year-off-one': csl({
        title: 'Soil microbes of Iowa',
        issued: year(2017),
        author: [{ family: 'Berg', 'non-dropping-particle': 'van der', given: 'Jan' }]
      }),
      '10.5555/year-off-two': csl({
        title: 'A history of measurement: units and “standards”',
        issued: year(2012),
        author: [{ literal: 'World Health Organization' }]
      }),
      '10.5555/no-title': csl({ title: 'Untitled', issued: year(2001), author: [{ family: 'Nobody', given: 'N.' }] })
    })
    const crossref = await FakeCrossrefApi.start({
      works: {
        '10.5555/accents': { 'updated-by': [{ DOI: '10.5555/notice', type: 'retraction', date: '2021-03-04' }] },
        '10.5555/wrong-title': {},
        '10.5555/year-off-one': {},
        '10.5555/year-off-two': {},
        '10.5555/no-title': {}
      }
    })
    const site = await FakeLandingSite.start({
      pages: {
        '/accents': pages.citationDoi('10.5555/accents'),
        '/wrong-title': pages.citationDoi('10.5555/wrong-title'),
        '/year-off-one': pages.citationDoi('10.5555/year-off-one'),
        '/year-off-two': pages.citationDoi('10.5555/year-off-two')
        // /no-title: 404
      }
    })
    const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
    const records: Record<string, HandleValue[]> = {
      '10.5555': [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
      '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)]
    }
    for (const name of ['accents', 'wrong-title', 'year-off-one', 'year-off-two', 'no-title']) {
      records[`10.5555/${name}`] = [str(1, 'URL', `${site.origin()}/${name}`)]
    }
    const upstream = await FakeUpstream.start(records)
    onTestFinished(async () => {
      await upstream.close()
      await site.close()
      await crossref.close()
      await agency.close()
    })
    const child = spawn(
      process.execPath,
      ['--import', TSX, join(REPO, 'src/command/cli.ts'), 'check', '--upstream', '--verify', 'metadata,retraction,landing', REFS],
      {
        cwd: REPO,
        timeout: 90_000,
        env: {
          ...process.env,
          UPSTREAM_URL: upstream.url,
          CACHE_FILE: '',
          LOCAL_STORE_DIR: '',
          METADATA_HOSTS: agency.host,
          CROSSREF_API_URL: crossref.url,
          LANDING_ALLOW_PRIVATE: '127.0.0.2/32',
          LANDING_HOST_DELAY_MS: '0',
          UPSTREAM_RETRIES: '0'
        }
      }
    )
    const run = await ranToEnd(child)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(
      '10.5555/wrong-title names another work: cited "Deep nets for cats", registered "Soil erosion in Kansas wheat fields"'
    )
    expect(run.stdout).toMatch(/10\.5555\/year-off-two details differ \(the title matches\): year cited 2015, registered 2012/)
    expect(run.stdout).toContain('10.5555/accents is retracted')
    expect(run.stdout).toMatch(/10\.5555\/no-title landing page is dead/)
    // A year one off is the online-first year, and accents, braces and math are the same title.
    expect(run.stdout).not.toMatch(/year-off-one (names|details)/)
    expect(run.stdout).not.toMatch(/accents (names|details)/)
    // Every landing page asked once, with the crawler's User-Agent; doi.org never.
    expect(site.paths.filter((p) => p !== '/robots.txt').sort()).toEqual([
      '/accents',
      '/no-title',
      '/wrong-title',
      '/year-off-one',
      '/year-off-two'
    ])
    expect(site.seen.every((s) => s.userAgent?.includes('landing-check'))).toBe(true)
  })
})
