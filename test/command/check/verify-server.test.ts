import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { XMLValidator } from 'fast-xml-parser'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pages } from '../../support/fake-landing.js'
import { str } from '../../support/records.js'
import { cslRecord, verifyingApp } from '../../support/verifying-app.js'
import { ranToEnd } from '../../support/server-process.js'
import type { Run } from '../../support/server-process.js'
import type { HandleValue } from '../../../src/handle/types.js'

// `doi-proxy check --server URL --verify …` end to end (issue 41): the real command in a child process asks a
// real doi-proxy listening on 127.0.0.1 (buildApp, every verify level on), whose verifier asks real fakes: the
// Handle API, an agency's CSL-JSON, Crossref's REST API, and landing pages on 127.0.0.2 named journal.test
// (an injected lookup: no name is resolved). Each test asserts what a user sees: the report and the exit status.

const REPO = new URL('../../..', import.meta.url).pathname
const TSX = new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url).href
const ALL = 'metadata,retraction,landing'

/** One .bib entry a line, so each DOI's line is its entry's. */
const ENTRIES = {
  good: '@article{good, title = {Soil microbes of Iowa}, year = 2017, doi = {10.5555/good}}',
  wrong: '@article{wrong, title = {Deep nets for cats}, year = 2020, doi = {10.5555/wrong-title}}',
  retracted: '@article{retracted, title = {A retracted result}, year = 2020, doi = {10.5555/retracted}}',
  dead: '@article{dead, title = {A dead page}, year = 2021, doi = {10.5555/dead}}',
  blocked: '@article{blocked, title = {A page behind a wall}, year = 2021, doi = {10.5555/blocked}}',
  casino: '@article{casino, title = {A page taken over}, year = 2021, doi = {10.5555/casino}}',
  gone: '@article{gone, title = {Never registered}, year = 2021, doi = {10.5555/gone}}',
  otherAgency: '@article{other, title = {Registered elsewhere}, year = 2021, doi = {10.5555/other-agency}}'
}
type Entry = keyof typeof ENTRIES

/** A doi-proxy on 127.0.0.1 with every verify level on, and the fakes it verifies against. */
async function verifyingDoiProxy(extra: Record<string, HandleValue[]> = {}): Promise<{ url: string; page: (path: string) => string }> {
  const csl = (title: string, year: number): Record<string, string> => cslRecord(title, year, 'Berg', 'Jan')
  const { app, page } = await verifyingApp({
    prefix: '10.5555',
    agency: {
      '10.5555/good': csl('Soil microbes of Iowa', 2017),
      '10.5555/wrong-title': csl('Soil erosion in Kansas wheat fields', 2020),
      '10.5555/retracted': csl('A retracted result', 2020),
      '10.5555/dead': csl('A dead page', 2021),
      '10.5555/blocked': csl('A page behind a wall', 2021),
      '10.5555/casino': csl('A page taken over', 2021),
      '10.5555/other-agency': csl('Registered elsewhere', 2021)
    },
    crossref: {
      '10.5555/good': {},
      '10.5555/wrong-title': {},
      '10.5555/retracted': { 'updated-by': [{ DOI: '10.5555/notice', type: 'retraction', date: '2021-03-04' }] },
      '10.5555/dead': {},
      '10.5555/blocked': {},
      '10.5555/casino': {}
      // 10.5555/other-agency: unknown to Crossref, so whether it was retracted cannot be told (verdict null)
    },
    pages: {
      '/good': pages.citationDoi('10.5555/good'),
      '/wrong-title': pages.citationDoi('10.5555/wrong-title'),
      '/retracted': pages.citationDoi('10.5555/retracted'),
      '/blocked': pages.cfChallenge(),
      '/casino': pages.casino(),
      '/other-agency': pages.citationDoi('10.5555/other-agency')
      // /dead: 404
    },
    landing: Object.fromEntries(
      ['good', 'wrong-title', 'retracted', 'dead', 'blocked', 'casino', 'other-agency'].map((name) => [`10.5555/${name}`, `/${name}`])
    ),
    records: extra,
    overrides: { landingTimeoutMs: 5000 }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, page }
}

describe('doi-proxy check --server --verify against a doi-proxy verifying with real fakes', { timeout: 120_000 }, () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-verify-server-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  /** `doi-proxy check --server URL ARGS… refs.bib`, refs.bib holding the entries named, one a line. */
  async function check(url: string, entries: Entry[], args: string[]): Promise<Run> {
    await writeFile(join(dir, 'refs.bib'), entries.map((e) => ENTRIES[e]).join('\n') + '\n')
    const child = spawn(
      process.execPath,
      ['--import', TSX, join(REPO, 'src/command/cli.ts'), 'check', '--server', url, ...args, 'refs.bib'],
      {
        cwd: dir,
        env: process.env,
        timeout: 90_000
      }
    )
    return await ranToEnd(child)
  }

  const EVERY: Entry[] = ['good', 'wrong', 'retracted', 'dead', 'blocked', 'casino', 'gone']

  describe('every --format', () => {
    it('text: each problem on its line with its evidence, the summaries, and exit 1', async () => {
      const { url, page } = await verifyingDoiProxy()
      const run = await check(url, EVERY, ['--verify', ALL])
      expect(run.stdout).toBe(
        [
          'refs.bib:2: 10.5555/wrong-title names another work: cited "Deep nets for cats", registered "Soil erosion in Kansas wheat fields"',
          'refs.bib:3: 10.5555/retracted is retracted: notice 10.5555/notice on 2021-03-04',
          `refs.bib:4: 10.5555/dead landing page is dead: HTTP 404 at ${page('/dead')}`,
          `refs.bib:5: 10.5555/blocked landing page is behind a bot wall: Cloudflare challenge (cf-mitigated: challenge) (HTTP 403 at ${page('/blocked')})`,
          `refs.bib:6: 10.5555/casino landing page does not name the work: HTTP 200, but the page names neither the DOI nor the title (at ${page('/casino')})`,
          'refs.bib:7: 10.5555/gone is not registered',
          'Checked 7 DOIs (7 distinct) in 1 file: 6 registered, 1 not registered, 0 could not be checked.',
          'Verified: metadata 5 match, 1 mismatch (1 naming another work, 0 with other details), 0 unverifiable; ' +
            'retraction 1 retracted, 0 corrected, 0 expression of concern, 5 none, 0 could not be checked; ' +
            'landing 3 alive, 1 unconfirmed, 1 blocked, 1 dead, 0 could not be checked.',
          ''
        ].join('\n')
      )
      expect(run.stderr).toBe('')
      expect(run.code).toBe(1)
    })

    it('github: ::error for what fails (another work, retracted, dead, not registered), ::warning for the bot wall and the drifted page', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, EVERY, ['--verify', ALL, '--format', 'github'])
      const annotations = run.stdout.split('\n').filter((l) => l.startsWith('::'))
      expect(annotations.map((l) => l.slice(0, l.indexOf('::', 2)))).toEqual([
        '::error file=refs.bib,line=2,title=DOI names another work',
        '::error file=refs.bib,line=3,title=Work retracted',
        '::error file=refs.bib,line=4,title=Landing page dead',
        '::warning file=refs.bib,line=5,title=Landing page blocked',
        '::warning file=refs.bib,line=6,title=Landing page unconfirmed',
        '::error file=refs.bib,line=7,title=DOI not registered'
      ])
      // The URL's ':' is the message's own: only properties escape it.
      expect(annotations[2]).toMatch(/::10\.5555\/dead landing page is dead: HTTP 404 at http:\/\/journal\.test:\d+\/dead$/)
      expect(run.code).toBe(1)
    })

    it('junit: one valid case per DOI, its verdicts as properties, a failure for each that fails', async () => {
      const { url, page } = await verifyingDoiProxy()
      const run = await check(url, EVERY, ['--verify', ALL, '--format', 'junit'])
      expect(XMLValidator.validate(run.stdout)).toBe(true)
      expect(run.stdout).toMatch(/<testsuites name="doi-proxy check" tests="7" failures="4" errors="0" skipped="0">/)
      expect(run.stdout).toContain(
        [
          '    <testcase classname="refs.bib" name="refs.bib:5 10.5555/blocked" file="refs.bib" line="5">',
          '      <properties>',
          '        <property name="metadata" value="match"/>',
          '        <property name="retraction" value="none"/>',
          '        <property name="landing" value="blocked: Cloudflare challenge (cf-mitigated: challenge)"/>',
          '      </properties>',
          `      <system-out>warning: 10.5555/blocked landing page is behind a bot wall: Cloudflare challenge (cf-mitigated: challenge) (HTTP 403 at ${page('/blocked')})</system-out>`,
          '    </testcase>'
        ].join('\n')
      )
      expect(run.stdout).toContain(
        '<failure message="10.5555/retracted is retracted: notice 10.5555/notice on 2021-03-04" type="retracted"/>'
      )
      expect(run.code).toBe(1)
    })

    it('json: each DOI with the three objects exactly as the issue names them, what was cited, and its failures', async () => {
      const { url, page } = await verifyingDoiProxy()
      const run = await check(url, EVERY, ['--verify', ALL, '--format', 'json'])
      const report = JSON.parse(run.stdout) as { summary: Record<string, unknown>; results: Array<Record<string, unknown>> }
      expect(report.results.map((r) => [r.written, r.failures])).toEqual([
        ['10.5555/good', []],
        ['10.5555/wrong-title', ['mismatch']],
        ['10.5555/retracted', ['retracted']],
        ['10.5555/dead', ['dead']],
        ['10.5555/blocked', []],
        ['10.5555/casino', []],
        ['10.5555/gone', ['unregistered']]
      ])
      expect(report.results[1]).toMatchObject({
        file: 'refs.bib',
        line: 2,
        registered: true,
        cited: { title: 'Deep nets for cats', year: 2020 },
        metadata: {
          verdict: 'mismatch',
          kind: 'other-work',
          mismatches: [{ field: 'title', cited: 'Deep nets for cats', registered: 'Soil erosion in Kansas wheat fields' }]
        },
        retraction: { verdict: 'none', notice: null, date: null },
        landing: { verdict: 'alive', status: 200, url: page('/wrong-title'), evidence: 'citation_doi names the DOI' }
      })
      expect(report.results[2]!.retraction).toEqual({ verdict: 'retracted', notice: '10.5555/notice', date: '2021-03-04' })
      expect(report.results[6]).toMatchObject({ registered: false, metadata: null, retraction: null, landing: null })
      expect(report.summary.verified).toEqual({
        metadata: { match: 5, mismatch: 1, 'other-work': 1, details: 0, unverifiable: 0 },
        retraction: { retracted: 1, corrected: 0, 'expression-of-concern': 0, none: 5, unknown: 0 },
        landing: { alive: 3, unconfirmed: 1, blocked: 1, dead: 1, unknown: 0 }
      })
      expect(run.code).toBe(1)
    })
  })

  describe('the exit status', () => {
    it('a landing page behind a bot wall is a warning: exit 0', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['good', 'blocked'], ['--verify', 'landing', '--format', 'github'])
      expect(run.stdout).toMatch(
        /^::warning file=refs\.bib,line=2,title=Landing page blocked::10\.5555\/blocked landing page is behind a bot wall/m
      )
      expect(run.stdout).not.toContain('::error')
      expect(run.code).toBe(0)
    })

    it('a page that does not name the work is a warning by default: exit 0', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['casino'], ['--verify', 'landing'])
      expect(run.stdout).toContain('10.5555/casino landing page does not name the work')
      expect(run.code).toBe(0)
    })

    it('--fail-on unconfirmed makes that page fail the run: ::error, exit 1', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['casino'], ['--verify', 'landing', '--fail-on', 'unconfirmed', '--format', 'github'])
      expect(run.stdout).toMatch(/^::error file=refs\.bib,line=1,title=Landing page unconfirmed::/m)
      expect(run.code).toBe(1)
    })

    it('--fail-on retracted alone: another work and a dead page are warnings, exit 0', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['wrong', 'dead'], ['--verify', ALL, '--fail-on', 'retracted', '--format', 'github'])
      expect(
        run.stdout
          .split('\n')
          .filter((l) => l.startsWith('::'))
          .map((l) => l.slice(0, l.indexOf(' ')))
      ).toEqual(['::warning', '::warning'])
      expect(run.code).toBe(0)
    })

    it('--fail-on retracted alone still fails a DOI that is not registered: exit 1', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['good', 'gone'], ['--verify', ALL, '--fail-on', 'retracted'])
      expect(run.stdout).toContain('refs.bib:2: 10.5555/gone is not registered')
      expect(run.code).toBe(1)
    })

    it('a retraction that cannot be found out is a warning by default: exit 0', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['otherAgency'], ['--verify', 'retraction'])
      expect(run.stdout).toMatch(/^refs\.bib:1: 10\.5555\/other-agency: whether it was retracted could not be checked: /m)
      expect(run.code).toBe(0)
    })

    it('--fail-on unknown fails on a retraction that cannot be found out (verdict null): exit 1', async () => {
      const { url } = await verifyingDoiProxy()
      const run = await check(url, ['otherAgency'], ['--verify', 'retraction', '--fail-on', 'unknown', '--format', 'github'])
      expect(run.stdout).toMatch(/^::error file=refs\.bib,line=1,title=Retraction not checked::/m)
      expect(run.code).toBe(1)
    })
  })
})

// docs/checking-dois.md, "Allowing DOIs that are not registered yet": its example run, as written.
const DOC = readFileSync(new URL('../../../docs/checking-dois.md', import.meta.url), 'utf8')
const ALLOW_SECTION = DOC.slice(DOC.indexOf('### Allowing DOIs that are not registered yet'))
const ALLOW_FILE = /```text\n(# DOIs reserved[\s\S]*?)```/.exec(ALLOW_SECTION)![1]!
const ALLOWED_RUN = /```text\n(CITATION\.cff:4:[\s\S]*?)```/.exec(ALLOW_SECTION)![1]!
const RELEASED_LINE = /`(CITATION\.cff:4: \S+ is registered: [^`]*)`/.exec(ALLOW_SECTION)![1]!
const RESERVED = '10.5281/zenodo.1234567'

describe('doi-proxy check --allow FILE, as docs/checking-dois.md shows it', { timeout: 120_000 }, () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-allow-'))
    await mkdir(join(dir, '.github'))
    await writeFile(join(dir, '.github', 'reserved-dois.txt'), ALLOW_FILE)
    await writeFile(
      join(dir, 'CITATION.cff'),
      `cff-version: 1.2.0\nmessage: "Cite the release below."\ntitle: "example"\ndoi: ${RESERVED}\n`
    )
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  async function check(url: string, args: string[]): Promise<Run> {
    const child = spawn(process.execPath, ['--import', TSX, join(REPO, 'src/command/cli.ts'), 'check', '--server', url, ...args], {
      cwd: dir,
      env: process.env,
      timeout: 90_000
    })
    return await ranToEnd(child)
  }

  it('a reserved DOI not registered yet is a notice, and the run passes (the allow file itself is not checked)', async () => {
    const { url } = await verifyingDoiProxy()
    const run = await check(url, ['--allow', '.github/reserved-dois.txt', '.'])
    expect(run.stdout).toBe(ALLOWED_RUN)
    expect(run.code).toBe(0)
  })

  it('without the allow file, the same DOI fails the run', async () => {
    const { url } = await verifyingDoiProxy()
    const run = await check(url, ['.'])
    expect(run.stdout).toContain(`CITATION.cff:4: ${RESERVED} is not registered`)
    expect(run.code).toBe(1)
  })

  it('once registered, a notice says its line in the allow file can go', async () => {
    const { url } = await verifyingDoiProxy({ [RESERVED]: [str(1, 'URL', 'https://zenodo.test/records/1234567')] })
    const run = await check(url, ['--allow', '.github/reserved-dois.txt', '.'])
    expect(run.stdout.split('\n')[0]).toBe(RELEASED_LINE)
    expect(run.code).toBe(0)
  })

  it('with --verify, a github ::notice and exit 0', async () => {
    const { url } = await verifyingDoiProxy()
    const run = await check(url, ['--verify', ALL, '--format', 'github', '--allow', '.github/reserved-dois.txt', 'CITATION.cff'])
    expect(run.stdout).toMatch(
      /^::notice file=CITATION\.cff,line=4,title=DOI not registered yet \(allowed\)::10\.5281\/zenodo\.1234567 is not registered yet \(allowed by \.github\/reserved-dois\.txt\)$/m
    )
    expect(run.stdout).not.toMatch(/^::(error|warning)/m)
    expect(run.code).toBe(0)
  })

  it('a line of the allow file that is not one DOI is a usage error naming file and line: exit 2', async () => {
    await writeFile(join(dir, '.github', 'reserved-dois.txt'), `${RESERVED}\nzenodo v2\n`)
    const run = await check('http://127.0.0.1:9', ['--allow', '.github/reserved-dois.txt', '.'])
    expect(run.stderr).toContain('doi-proxy check: --allow .github/reserved-dois.txt:2: "zenodo v2" is not one DOI')
    expect(run.code).toBe(2)
  })
})
