/**
 * A doi-proxy app with every verify level on (issue 41), against real fakes on loopback addresses: the
 * Handle API (its records), an agency answering CSL-JSON for the prefix's DOIs (conneg through the
 * prefix's namespace), Crossref's REST API, and landing pages on journal.test at 127.0.0.2, reached
 * through an injected lookup (no name is resolved). Everything is closed when the test ends.
 */
import type { FastifyInstance } from 'fastify'
import { onTestFinished } from 'vitest'
import { setup } from './app.js'
import { FakeAgency } from './fake-agency.js'
import { FakeCrossrefApi } from './fake-crossref-api.js'
import type { FakeCrossrefWork } from './fake-crossref-api.js'
import { FakeLandingSite } from './fake-landing.js'
import type { Page } from './fake-landing.js'
import { fakeLookup } from './landing-dns.js'
import { admin, str } from './records.js'
import type { AppDeps } from '../../src/app.js'
import type { Config } from '../../src/config/schema.js'
import type { HandleValue } from '../../src/handle/types.js'

const CSL = 'application/vnd.citationstyles.csl+json'

/** A work's CSL-JSON as an agency answers it: its title, year and first author. */
export function cslRecord(title: string, year: number, family: string, given = 'A.'): Record<string, string> {
  return {
    [CSL]: JSON.stringify({ type: 'article-journal', title, issued: { 'date-parts': [[year]] }, author: [{ family, given }] })
  }
}

export interface VerifyingAppOptions {
  /** The prefix whose DOIs the agency answers (10.5555). */
  prefix: string
  /** DOI → its record at the agency (cslRecord); a DOI not here has no metadata. */
  agency: Record<string, Record<string, string>>
  /** DOI → its notices at Crossref; a DOI not here is unknown to Crossref (another agency's). */
  crossref: Record<string, FakeCrossrefWork>
  /** journal.test's pages by path; any other path is a 404. */
  pages: Record<string, Page>
  /** DOI → the path of its landing page on journal.test (its URL record). */
  landing: Record<string, string>
  /** More handle records. */
  records?: Record<string, HandleValue[]>
  /** Settings over the test's (and over these: no retries, no delay between a host's requests). */
  overrides?: Partial<Config>
  deps?: Omit<AppDeps, 'landingLookup'>
}

export interface VerifyingApp {
  app: FastifyInstance
  agency: FakeAgency
  crossref: FakeCrossrefApi
  site: FakeLandingSite
  /** A landing page's URL: its path on journal.test. */
  page: (path: string) => string
}

export async function verifyingApp(opts: VerifyingAppOptions): Promise<VerifyingApp> {
  const agency = await FakeAgency.start(opts.agency)
  const crossref = await FakeCrossrefApi.start({ works: opts.crossref })
  const site = await FakeLandingSite.start({ pages: opts.pages })
  onTestFinished(async () => {
    await site.close()
    await crossref.close()
    await agency.close()
  })
  const page = (path: string): string => `${site.origin('journal.test')}${path}`
  const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
  const records: Record<string, HandleValue[]> = {
    [opts.prefix]: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
    '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)],
    ...Object.fromEntries(Object.entries(opts.landing).map(([doi, path]) => [doi, [str(1, 'URL', page(path))]])),
    ...opts.records
  }
  const { app } = await setup({
    records,
    overrides: {
      upstreamRetries: 0,
      metadataHosts: [agency.host],
      crossrefApiUrl: crossref.url,
      landingAllowPrivate: ['127.0.0.2/32'],
      landingHostDelayMs: 0,
      ...opts.overrides
    },
    deps: { ...opts.deps, landingLookup: fakeLookup({ 'journal.test': '127.0.0.2' }) }
  })
  return { app, agency, crossref, site, page }
}
