import { XMLValidator } from 'fast-xml-parser'
import { describe, expect, it } from 'vitest'
import { formatVerifyReport, problemsOf, summariseVerified, verifyExitCode } from '../../../src/command/check/report-verify.js'
import { summarise } from '../../../src/command/check/report.js'
import type { Checked, Verdict } from '../../../src/command/check/report.js'
import type { FailOn } from '../../../src/handle/verify/fail-on.js'
import { landingVerdictOf } from '../../../src/handle/landing/verdict.js'
import type { ProbeOutcome } from '../../../src/handle/landing/verdict.js'
import type { MetadataResult, VerifyLevel } from '../../../src/handle/verify/types.js'

const ALL: VerifyLevel[] = ['metadata', 'retraction', 'landing']
const DEFAULT: FailOn[] = ['unregistered', 'mismatch', 'retracted', 'dead']
const ALIVE = { verdict: 'alive', status: 200, url: 'https://journal.test/a', evidence: 'citation_doi names the DOI' } as const
const NONE = { verdict: 'none', notice: null, date: null } as const
const MATCH: MetadataResult = { verdict: 'match', mismatches: [] }

const at = (line: number, doi: string, verdict: Partial<Verdict>, title?: string): Checked => ({
  file: 'refs.bib',
  line,
  doi,
  ...(title === undefined ? {} : { cited: { title } }),
  verdict: {
    registered: true,
    doi,
    url: 'https://journal.test/a',
    status: 302,
    metadata: MATCH,
    retraction: NONE,
    landing: ALIVE,
    ...verdict
  }
})

// The examples of each verdict (issue 41 §1), and the plan's text lines (plan-41 §3).
const CHECKED: Checked[] = [
  at(3, '10.1/ok', {}, 'Fine'),
  at(
    12,
    '10.1/x',
    {
      metadata: {
        verdict: 'mismatch',
        kind: 'other-work',
        mismatches: [
          { field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' },
          { field: 'year', cited: 2020, registered: 2016 }
        ]
      }
    },
    'Deep nets for cats'
  ),
  at(
    30,
    '10.1/y',
    { metadata: { verdict: 'mismatch', kind: 'details', mismatches: [{ field: 'year', cited: 2019, registered: 2017 }] } },
    'Y'
  ),
  at(41, '10.1/z', { retraction: { verdict: 'retracted', notice: '10.1/n', date: '2021-03-04' } }),
  at(44, '10.1/c', { retraction: { verdict: 'corrected', notice: '10.1/e', date: '2020-01-02' } }),
  at(50, '10.1/w', {
    landing: { verdict: 'dead', status: 404, url: 'https://journal.test/w', evidence: 'HTTP 404 at https://journal.test/w' }
  }),
  at(55, '10.1/b', {
    landing: { verdict: 'blocked', status: 403, url: 'https://journal.test/b', evidence: 'Cloudflare challenge (cf-mitigated: challenge)' }
  }),
  at(60, '10.1/u', {
    landing: {
      verdict: 'unconfirmed',
      status: 200,
      url: 'https://casino.test/',
      evidence: 'neither the DOI nor the title; landed on casino.test'
    }
  }),
  at(62, '10.1/q', { metadata: { verdict: 'unverifiable', mismatches: [], why: 'the agency has no metadata' } }, 'Q'),
  at(64, '10.1/r', { retraction: { verdict: null, notice: null, date: null, error: 'Crossref did not answer' } }),
  {
    file: 'refs.bib',
    line: 70,
    doi: '10.1/gone',
    verdict: { registered: false, doi: null, url: null, status: 404, metadata: null, retraction: null, landing: null }
  }
]
const SUMMARY = summariseVerified(summarise(1, CHECKED, CHECKED.length), CHECKED, ALL)

describe('the report of check --verify', () => {
  it('text: each problem on its file:line with the evidence, then the summaries', () => {
    expect(formatVerifyReport('text', CHECKED, SUMMARY, DEFAULT)).toBe(
      [
        'refs.bib:12: 10.1/x names another work: cited "Deep nets for cats", registered "Soil microbes of Iowa"; year cited 2020, registered 2016',
        'refs.bib:30: 10.1/y details differ (the title matches): year cited 2019, registered 2017',
        'refs.bib:41: 10.1/z is retracted: notice 10.1/n on 2021-03-04',
        'refs.bib:44: 10.1/c has a correction: notice 10.1/e on 2020-01-02',
        'refs.bib:50: 10.1/w landing page is dead: HTTP 404 at https://journal.test/w',
        'refs.bib:55: 10.1/b landing page is behind a bot wall: Cloudflare challenge (cf-mitigated: challenge) (HTTP 403 at https://journal.test/b)',
        'refs.bib:60: 10.1/u landing page does not name the work: neither the DOI nor the title; landed on casino.test (HTTP 200 at https://casino.test/)',
        'refs.bib:62: 10.1/q metadata could not be compared: the agency has no metadata',
        'refs.bib:64: 10.1/r: whether it was retracted could not be checked: Crossref did not answer',
        'refs.bib:70: 10.1/gone is not registered',
        'Checked 11 DOIs (11 distinct) in 1 file: 10 registered, 1 not registered, 0 could not be checked.',
        'Verified: metadata 7 match, 2 mismatch (1 naming another work, 1 with other details), 1 unverifiable; ' +
          'retraction 1 retracted, 1 corrected, 0 expression of concern, 7 none, 1 could not be checked; ' +
          'landing 7 alive, 1 unconfirmed, 1 blocked, 1 dead, 0 could not be checked.',
        ''
      ].join('\n')
    )
  })

  it('says nothing of metadata not compared where no title was cited (a DOI in running text)', () => {
    const bare = { ...CHECKED[8]!, cited: undefined }
    expect(problemsOf(bare)).toEqual([])
  })

  it("says a dead page's URL once when its evidence names it, as the prober's 404 evidence does", () => {
    const url = 'https://journal.test/w'
    const dead = at(50, '10.1/w', { landing: { verdict: 'dead', status: 404, url, evidence: `HTTP 404 at ${url}` } })
    expect(problemsOf(dead).map((p) => p.message)).toEqual([`10.1/w landing page is dead: HTTP 404 at ${url}`])
  })

  it('github: an error for each verdict --fail-on names, a warning for the rest', () => {
    const lines = formatVerifyReport('github', CHECKED, SUMMARY, DEFAULT).split('\n')
    expect(lines.filter((l) => l.startsWith('::error')).map((l) => l.slice(0, l.indexOf('::', 2)))).toEqual([
      '::error file=refs.bib,line=12,title=DOI names another work',
      '::error file=refs.bib,line=30,title=Reference details differ',
      '::error file=refs.bib,line=41,title=Work retracted',
      '::error file=refs.bib,line=50,title=Landing page dead',
      '::error file=refs.bib,line=70,title=DOI not registered'
    ])
    expect(lines.filter((l) => l.startsWith('::warning')).map((l) => l.slice(0, l.indexOf('::', 2)))).toEqual([
      '::warning file=refs.bib,line=44,title=Work corrected',
      '::warning file=refs.bib,line=55,title=Landing page blocked',
      '::warning file=refs.bib,line=60,title=Landing page unconfirmed',
      '::warning file=refs.bib,line=62,title=Metadata not compared',
      '::warning file=refs.bib,line=64,title=Retraction not checked'
    ])
  })

  it('an explicit --fail-on replaces the default: unconfirmed and unknown become errors, mismatch a warning', () => {
    const lines = formatVerifyReport('github', CHECKED, SUMMARY, ['unregistered', 'unknown', 'unconfirmed']).split('\n')
    expect(lines.find((l) => l.includes('line=60'))).toMatch(/^::error /)
    expect(lines.find((l) => l.includes('line=64'))).toMatch(/^::error /)
    expect(lines.find((l) => l.includes('line=12'))).toMatch(/^::warning /)
  })

  it('exits 1 when a verdict --fail-on names is met, 0 when only warnings remain', () => {
    expect(verifyExitCode(CHECKED, DEFAULT)).toBe(1)
    expect(verifyExitCode([CHECKED[0]!, CHECKED[4]!, CHECKED[6]!, CHECKED[8]!, CHECKED[9]!], DEFAULT)).toBe(0)
    expect(verifyExitCode([CHECKED[9]!], ['unregistered', 'unknown'])).toBe(1)
  })

  it('junit: one valid case per DOI found, its verdicts as properties, a failure when a verdict fails it', () => {
    const xml = formatVerifyReport('junit', CHECKED, SUMMARY, DEFAULT)
    expect(XMLValidator.validate(xml)).toBe(true)
    expect(xml).toMatch(/<testsuites name="doi-proxy check" tests="11" failures="5" errors="0" skipped="0">/)
    expect(xml).toContain(
      [
        '    <testcase classname="refs.bib" name="refs.bib:41 10.1/z" file="refs.bib" line="41">',
        '      <properties>',
        '        <property name="metadata" value="match"/>',
        '        <property name="retraction" value="retracted"/>',
        '        <property name="landing" value="alive: citation_doi names the DOI"/>',
        '      </properties>',
        '      <failure message="10.1/z is retracted: notice 10.1/n on 2021-03-04" type="retracted"/>',
        '    </testcase>'
      ].join('\n')
    )
    expect(xml).toContain('<system-out>warning: 10.1/b landing page is behind a bot wall: Cloudflare challenge')
  })

  it('junit: a verdict that could not be found out is an error with --fail-on unknown', () => {
    const xml = formatVerifyReport('junit', [CHECKED[9]!], summariseVerified(summarise(1, [CHECKED[9]!], 1), [CHECKED[9]!], ALL), [
      'unregistered',
      'unknown'
    ])
    expect(xml).toContain(
      '<error message="10.1/r: whether it was retracted could not be checked: Crossref did not answer" type="unknown"/>'
    )
    expect(xml).toMatch(/tests="1" failures="0" errors="1" skipped="0"/)
  })

  it('json: each result carries the three objects exactly as the issue names them, what was cited, and its failures', () => {
    const report = JSON.parse(formatVerifyReport('json', CHECKED, SUMMARY, DEFAULT)) as {
      summary: { verified: Record<string, Record<string, number>> }
      results: Array<Record<string, unknown>>
    }
    expect(report.results[1]).toEqual({
      file: 'refs.bib',
      line: 12,
      written: '10.1/x',
      registered: true,
      doi: '10.1/x',
      url: 'https://journal.test/a',
      status: 302,
      metadata: {
        verdict: 'mismatch',
        kind: 'other-work',
        mismatches: [
          { field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' },
          { field: 'year', cited: 2020, registered: 2016 }
        ]
      },
      retraction: { verdict: 'none', notice: null, date: null },
      landing: ALIVE,
      cited: { title: 'Deep nets for cats' },
      failures: ['mismatch']
    })
    expect(report.summary.verified.landing).toEqual({ alive: 7, unconfirmed: 1, blocked: 1, dead: 1, unknown: 0 })
  })

  describe("a landing page's line says its status and URL once, with the prober's own evidence", () => {
    const URL_ = 'https://journal.test/p'
    const answer = (status: number, headers: Record<string, string> = {}, head = ''): Extract<ProbeOutcome, { kind: 'answer' }> => ({
      kind: 'answer',
      status,
      url: URL_,
      headers,
      head,
      evidence: { titles: [] },
      startUrl: URL_
    })
    it.each<[string, ProbeOutcome, string]>([
      ['404', answer(404), `is dead: HTTP 404 at ${URL_}`],
      ['503 on every try', { ...answer(503), tries: 3 }, `is dead: HTTP 503 at ${URL_} (3 tries)`],
      ['410', answer(410), `is dead: HTTP 410 at ${URL_}`],
      [
        'a DNS failure',
        { kind: 'failed', url: URL_, reason: 'dns', detail: 'ENOTFOUND journal.test' },
        `is dead: DNS: ENOTFOUND journal.test (at ${URL_})`
      ],
      [
        'a Cloudflare challenge',
        answer(403, { 'cf-mitigated': 'challenge' }),
        `is behind a bot wall: Cloudflare challenge (cf-mitigated: challenge) (HTTP 403 at ${URL_})`
      ],
      [
        'an Akamai denial',
        answer(403, {}, 'Reference #18.6f2c3e17.1700000000'),
        `is behind a bot wall: Akamai access denial (HTTP 403) (at ${URL_})`
      ],
      [
        'a 200 naming neither',
        answer(200),
        `does not name the work: HTTP 200, but the page names neither the DOI nor the title (at ${URL_})`
      ]
    ])('%s', (_name, outcome, said) => {
      const [p] = problemsOf(at(1, '10.1/p', { landing: landingVerdictOf(outcome) }))
      expect(p!.message).toBe(`10.1/p landing page ${said}`)
      expect(p!.message.split(URL_)).toHaveLength(2)
    })
  })

  describe('what a page, a file or a server wrote cannot command the terminal or the CI runner', () => {
    const hostile = at(
      2,
      '10.1/h',
      {
        landing: {
          verdict: 'dead',
          status: 404,
          url: 'https://x.test/\n::error::INJECTED',
          evidence: 'title "\u001b]52;c;cHduZWQ=\u0007" ##[add-mask]x'
        },
        metadata: {
          verdict: 'mismatch',
          kind: 'other-work',
          mismatches: [{ field: 'title', cited: 'a\u202eb', registered: 'x\r\n::warning::y' }]
        }
      },
      'a\u202eb'
    )
    const report = { ...hostile, file: '::error file=b::named.bib' }
    const summary = summariseVerified(summarise(1, [report], 1), [report], ALL)

    it.each(['text', 'github', 'junit', 'json'] as const)('%s', (format) => {
      const out = formatVerifyReport(format, [report], summary, DEFAULT)
      for (const line of out.split('\n')) {
        expect(line).not.toMatch(/^\s*::(?!error file=\.\/|error file=%3A|warning file=%3A)/) // only our annotations start a line
        expect(line).not.toContain('##[')
      }
      expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/) // eslint-disable-line no-control-regex
    })
  })
})
