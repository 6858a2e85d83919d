import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { setup } from '../../support/app.js'
import { FakeAgency } from '../../support/fake-agency.js'
import { FakeCrossrefApi } from '../../support/fake-crossref-api.js'
import type { FakeCrossrefWork } from '../../support/fake-crossref-api.js'
import { FakeLandingSite, pages } from '../../support/fake-landing.js'
import type { Page } from '../../support/fake-landing.js'
import { fakeLookup } from '../../support/landing-dns.js'
import { admin, str } from '../../support/records.js'
import { ranToEnd } from '../../support/server-process.js'
import type { Run } from '../../support/server-process.js'
import { buildConfig, landingUserAgent } from '../../../src/config/schema.js'
import type { HandleValue } from '../../../src/handle/types.js'
import { parseFailOn } from '../../../src/handle/verify/fail-on.js'
import type { BatchResult } from '../../../src/http/batch.js'

// docs/checking-dois.md's `--verify` examples, run as written against a real doi-proxy on 127.0.0.1 and
// real fakes: the Handle API, an agency's CSL-JSON, Crossref's REST API, and a publisher's site at
// journal.example (127.0.0.2 through an injected lookup: no name is resolved, nothing leaves the machine).
// The doc shows the site as https://journal.example; the run's origin (http, a free port) is written so.

const DOC = readFileSync(new URL('../../../docs/checking-dois.md', import.meta.url), 'utf8')
const REPO = new URL('../../..', import.meta.url).pathname
const TSX = new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url).href
const CSL = 'application/vnd.citationstyles.csl+json'
const SHOWN_SITE = 'https://journal.example'

/** The fenced blocks of the doc in a language. */
function blocks(lang: string): string[] {
  return [...DOC.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!)
}

/** The one block of a language holding a marker. */
function block(lang: string, marker: string): string {
  const found = blocks(lang).filter((b) => b.includes(marker))
  if (found.length !== 1) throw new Error(`${found.length} ${lang} blocks of docs/checking-dois.md hold ${JSON.stringify(marker)}`)
  return found[0]!
}

const year = (y: number): { 'date-parts': number[][] } => ({ 'date-parts': [[y]] })

/** What the registry, the agency, Crossref and the publisher's site hold of each DOI of the doc's refs.bib. */
const WORKS: Record<string, { csl: Record<string, unknown>; crossref?: FakeCrossrefWork; page?: (doi: string) => Page }> = {
  '10.5555/cats': {
    csl: { title: 'On the DNA of Schrödinger’s α cats', issued: year(2019), author: [{ family: 'Müller', given: 'Hans' }] },
    page: pages.citationDoi
  },
  '10.5555/soil-erosion': {
    csl: { title: 'Soil erosion in Kansas wheat fields', issued: year(2020), author: [{ family: 'Smith', given: 'Anna' }] },
    page: pages.citationDoi
  },
  '10.5555/measurement': {
    csl: {
      title: 'A history of measurement',
      subtitle: ['units and standards'],
      issued: year(2012),
      author: [{ literal: 'World Health Organization' }]
    },
    page: pages.jsonLd
  },
  '10.5555/too-good': {
    csl: { title: 'A result too good to be true', issued: year(2020), author: [{ family: 'Doe', given: 'Jane' }] },
    crossref: {
      'updated-by': [{ DOI: '10.5555/too-good.retraction', type: 'retraction', date: '2021-03-04', source: 'retraction-watch' }]
    },
    page: pages.citationDoi
  },
  '10.5555/voles': {
    csl: { title: 'Counting voles in wet meadows', issued: year(2018), author: [{ family: 'Roe', given: 'Richard' }] },
    crossref: { 'updated-by': [{ DOI: '10.5555/voles.erratum', type: 'correction', date: '2019-05-06' }] },
    page: pages.doiInText
  },
  // Its page is gone: 404.
  '10.5555/microbes': {
    csl: {
      title: 'Soil microbes of Iowa',
      issued: year(2017),
      author: [{ family: 'Berg', 'non-dropping-particle': 'van der', given: 'Jan' }]
    }
  },
  '10.5555/tides': {
    csl: { title: 'Tides of the Yellow Sea', issued: year(2021), author: [{ family: 'Lee', given: 'Min-jun' }] },
    page: () => pages.cfChallenge()
  },
  // The journal's old address now sends readers to a casino.
  '10.5555/coral': {
    csl: { title: 'Coral bleaching in the Andaman Sea', issued: year(2016), author: [{ family: 'Kim', given: 'Ji-woo' }] },
    page: () => pages.redirect((site) => `${site.origin('casino.example')}/win`)
  }
  // 10.5555/dataset-typo is not registered.
}

const pathOf = (doi: string): string => `/articles/${doi.slice('10.5555/'.length)}`

/** A doi-proxy listening on 127.0.0.1, its registry, agency, Crossref and the publisher's site all fakes. */
async function world(opts: { robots?: string } = {}) {
  const agency = await FakeAgency.start(
    Object.fromEntries(Object.entries(WORKS).map(([doi, w]) => [doi, { [CSL]: JSON.stringify({ type: 'article-journal', ...w.csl }) }]))
  )
  const crossref = await FakeCrossrefApi.start({
    works: Object.fromEntries(Object.entries(WORKS).map(([doi, w]) => [doi, w.crossref ?? {}]))
  })
  const site = await FakeLandingSite.start({
    pages: {
      ...Object.fromEntries(Object.entries(WORKS).flatMap(([doi, w]) => (w.page === undefined ? [] : [[pathOf(doi), w.page(doi)]]))),
      '/win': pages.casino()
    },
    ...(opts.robots === undefined ? {} : { robots: opts.robots })
  })
  onTestFinished(async () => {
    await site.close()
    await crossref.close()
    await agency.close()
  })
  const origin = site.origin('journal.example')
  const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
  const records: Record<string, HandleValue[]> = {
    '10.5555': [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
    '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)]
  }
  for (const doi of Object.keys(WORKS)) records[doi] = [str(1, 'URL', `${origin}${pathOf(doi)}`)]
  const { app } = await setup({
    records,
    overrides: {
      upstreamRetries: 0,
      contactEmail: 'docs-team@example.org',
      metadataHosts: [agency.host],
      crossrefApiUrl: crossref.url,
      landingAllowPrivate: ['127.0.0.2/32'],
      landingHostDelayMs: 0
    },
    deps: { landingLookup: fakeLookup({ 'journal.example': '127.0.0.2', 'casino.example': '127.0.0.2' }) }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const proxy = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  /** The doc's text with this run's addresses: doi-proxy's, and the site's. */
  const ours = (text: string): string => text.replaceAll('http://127.0.0.1:8000', proxy)
  /** This run's text as the doc shows it: the sites at their https addresses. */
  const shown = (text: string): string =>
    text.replaceAll(origin, SHOWN_SITE).replaceAll(site.origin('casino.example'), 'https://casino.example')
  return { app, proxy, site, crossref, agency, ours, shown }
}

/** A directory holding the doc's refs.bib as paper/refs.bib. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-verify-doc-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'paper'))
  writeFileSync(join(dir, 'paper/refs.bib'), block('bibtex', '@article{muller2019'))
  return dir
}

/** `doi-proxy check ARGS`, the real command in a child process. */
async function check(args: string[], cwd: string): Promise<Run> {
  const child = spawn(process.execPath, ['--import', TSX, join(REPO, 'src/command/cli.ts'), 'check', ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 90_000
  })
  return await ranToEnd(child)
}

/** The arguments of a `doi-proxy check …` command line of the doc (words without quotes, as the doc writes them). */
function checkArgs(commandLine: string): string[] {
  const words = commandLine.trim().split(/\s+/)
  const at = words.findIndex((w, i) => w === 'doi-proxy' && words[i + 1] === 'check')
  if (at < 0) throw new Error(`no doi-proxy check in ${commandLine}`)
  return words.slice(at + 2)
}

/** A batch with `?verify=`, through the app itself: its NDJSON lines. */
async function verifyBatch(app: Awaited<ReturnType<typeof world>>['app'], levels: string, items: unknown[]): Promise<BatchResult[]> {
  const res = await app.inject({
    method: 'POST',
    url: `/api/batch?verify=${levels}`,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(items)
  })
  expect(res.statusCode).toBe(200)
  return res.body
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as BatchResult)
}

describe('docs/checking-dois.md, --verify', { timeout: 120_000 }, () => {
  it('the example run prints what the doc shows, and exits 1', async () => {
    const w = await world()
    const dir = project()
    const command = block('sh', '--verify metadata,retraction,landing paper/refs.bib')
    // The doc asks the default server, http://127.0.0.1:8000; this run asks the test's.
    const run = await check(['--server', w.proxy, ...checkArgs(command)], dir)
    expect(run.stderr).toBe('')
    expect(w.shown(run.stdout)).toBe(block('text', 'paper/refs.bib:13:'))
    expect(run.code).toBe(1)
    // The crawler as "The crawler" describes it: its User-Agent exactly, each page once, doi.org never.
    const crawlerUa = block('text', 'mailto:docs-team@example.org').trim()
    expect(new Set(w.site.seen.map((s) => s.userAgent))).toEqual(new Set([crawlerUa]))
    expect(w.site.seen.every((s) => s.cookie === undefined)).toBe(true)
    expect(w.site.paths.filter((p) => p.startsWith('/articles/')).sort()).toEqual(Object.keys(WORKS).map(pathOf).sort())
  })

  it("the JSON result shown is the example's, as --format json gives it", async () => {
    const w = await world()
    const dir = project()
    const run = await check(['--server', w.proxy, '--verify', 'metadata,retraction,landing', '--format', 'json', 'paper/refs.bib'], dir)
    const shown = JSON.parse(block('json', '"written": "10.5555/soil-erosion"')) as { written: string }
    const results = (JSON.parse(w.shown(run.stdout)) as { results: Array<{ written: string }> }).results
    expect(results.find((r) => r.written === shown.written)).toEqual(shown)
  })

  it('the GitHub Actions job verifying a .bib runs check as the doc shows, failing with its annotations', async () => {
    const workflow = parseYaml(block('yaml', 'name: References')) as {
      on: { pull_request: { paths: string[] } }
      jobs: { references: { services: Record<string, { ports: string[]; env: Record<string, string> }>; steps: Array<{ run?: string }> } }
    }
    const job = workflow.jobs.references
    expect(workflow.on.pull_request.paths).toEqual(['paper/**.bib'])
    expect(job.services['doi-proxy']!.ports).toEqual(['8000:8000'])
    const step = job.steps.find((s) => s.run?.includes('doi-proxy check'))!.run!
    const w = await world()
    const dir = project()
    const run = await check(checkArgs(w.ours(step)), dir)
    expect(run.stderr).toBe('')
    expect(w.shown(run.stdout)).toBe(block('text', '::error file=paper/refs.bib'))
    expect(run.code).toBe(1)
  })

  it('the batch API example with ?verify= answers what the doc shows', async () => {
    const w = await world()
    const { stdout } = await promisify(execFile)('bash', ['-c', w.ours(block('sh', 'api/batch?verify='))])
    const lines = w
      .shown(stdout)
      .split('\n')
      .filter((l) => l.trim() !== '')
    expect(lines.join('\n') + '\n').toBe(block('json', '{"input":"10.5555/soil-erosion"'))
  })

  it("the crawler's User-Agent is the one the doc shows, with and without CONTACT_EMAIL", () => {
    const defaults = buildConfig(undefined, {})
    expect(landingUserAgent({ ...defaults, contactEmail: 'docs-team@example.org' })).toBe(
      block('text', 'mailto:docs-team@example.org').trim()
    )
    expect(landingUserAgent({ ...defaults, contactEmail: undefined })).toBe(
      block('text', 'landing-check (+docs/checking-dois.md#the-crawler)\n').trim()
    )
    expect(DOC).toContain(`\`${defaults.userAgent}\``)
  })

  it("a publisher's robots.txt from the doc shuts the crawler out (blocked, no page fetched) or lets it in", async () => {
    const [shut, open] = blocks('text').filter((b) => b.startsWith('User-agent: doi-proxy\n'))
    expect([shut, open].every((b) => b !== undefined)).toBe(true)
    const out = await world({ robots: shut! })
    const [blocked] = await verifyBatch(out.app, 'landing', ['10.5555/cats'])
    expect(blocked!.landing).toEqual(
      expect.objectContaining({ verdict: 'blocked', evidence: 'robots.txt disallows /articles/cats for doi-proxy' })
    )
    expect(out.site.paths).toEqual(['/robots.txt'])
    const inside = await world({ robots: open! })
    const [alive] = await verifyBatch(inside.app, 'landing', ['10.5555/cats'])
    expect(alive!.landing?.verdict).toBe('alive')
    expect(inside.site.paths).toEqual(['/robots.txt', '/articles/cats'])
  })

  it('its links to sections (#the-crawler, security.md#7-…) lead to headings', () => {
    // GitHub's anchors: the heading in lower case, punctuation but `-` dropped, each space a `-`.
    const anchorsOf = (md: string): string[] =>
      [...md.matchAll(/^#+ (.*)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^\p{L}\p{N}_\- ]/gu, '')
          .replaceAll(' ', '-')
      )
    const security = readFileSync(new URL('../../../docs/security.md', import.meta.url), 'utf8')
    const links = [...DOC.matchAll(/\]\((security\.md)?#([^)]+)\)/g)].map((m): [string, string] => [m[1] ?? '', m[2]!])
    expect(links.length).toBeGreaterThan(3)
    for (const [file, anchor] of links) {
      expect([file, anchor, anchorsOf(file === '' ? DOC : security).includes(anchor)]).toEqual([file, anchor, true])
    }
    // src/config/schema.ts's landingUserAgent points publishers at this one.
    expect(anchorsOf(DOC)).toContain('the-crawler')
  })

  it('the --fail-on defaults and the usage error are the ones the doc states', () => {
    const all = ['metadata', 'retraction', 'landing'] as const
    expect(DOC).toContain('`unregistered,mismatch,retracted,dead`')
    expect(parseFailOn(undefined, [...all])).toEqual(['unregistered', 'mismatch', 'retracted', 'dead'])
    expect(DOC).toContain('(`--verify landing` alone: `unregistered,dead`)')
    expect(parseFailOn(undefined, ['landing'])).toEqual(['unregistered', 'dead'])
    expect(parseFailOn('mismatch', [...all])).toEqual(['unregistered', 'mismatch'])
    expect(DOC).toContain('(`--fail-on dead needs --verify landing`, exit 2)')
    expect(parseFailOn('dead', ['metadata'])).toBe('--fail-on dead needs --verify landing')
  })
})
