import { describe, expect, it } from 'vitest'
import { exitCode, formatReport, summarise } from '../../../src/command/check/report.js'
import type { Checked } from '../../../src/command/check/report.js'

const found = (file: string, line: number, doi: string, registered: boolean | null, error?: string): Checked => ({
  file,
  line,
  doi,
  verdict: {
    registered,
    doi: registered === true ? doi : null,
    url: null,
    status: registered === true ? 302 : registered === false ? 404 : 503,
    ...(error === undefined ? {} : { error })
  }
})

describe('the report of doi-proxy check', () => {
  const checked = [
    found('docs/a,b.md', 3, '10.1/ok', true),
    found('docs/a,b.md', 4, '10.1/100%', false),
    found('x.txt', 1, '10.1/down', null, 'The registry did not answer in time.')
  ]
  const summary = summarise(2, checked, 3)

  it('counts each place a DOI is written', () => {
    expect(summary).toEqual({ files: 2, found: 3, distinct: 3, registered: 1, unregistered: 1, unknown: 1 })
  })

  it('exits 1 for an unregistered DOI; an unknown one fails only with --fail-on unknown', () => {
    expect(exitCode(summary, 'unregistered')).toBe(1)
    expect(exitCode({ ...summary, unregistered: 0 }, 'unregistered')).toBe(0)
    expect(exitCode({ ...summary, unregistered: 0 }, 'unknown')).toBe(1)
  })

  it('escapes GitHub workflow commands as the Actions toolkit does (% , : in properties; % in the message)', () => {
    // Rules: actions/toolkit packages/core/src/command.ts escapeData and escapeProperty.
    expect(formatReport('github', checked, summary, 'unregistered').split('\n').slice(0, 2)).toEqual([
      '::error file=docs/a%2Cb.md,line=4,title=DOI not registered::10.1/100%25 is not registered',
      '::warning file=x.txt,line=1,title=DOI not checked::10.1/down could not be checked: The registry did not answer in time.'
    ])
    expect(formatReport('github', checked, summary, 'unknown')).toContain('::error file=x.txt,line=1')
  })

  it('writes JUnit XML with markup escaped', () => {
    const xml = formatReport(
      'junit',
      [found('a&b.md', 1, '10.1/<x>', false)],
      summarise(1, [found('a&b.md', 1, '10.1/<x>', false)], 1),
      'unregistered'
    )
    expect(xml).toContain('<testcase classname="a&#38;b.md" name="a&#38;b.md:1 10.1/&#60;x&#62;" file="a&#38;b.md" line="1">')
    expect(xml).toContain('<failure message="10.1/&#60;x&#62; is not registered" type="unregistered"/>')
  })

  describe('text a checked file wrote cannot command the terminal or the CI runner', () => {
    // A file name with newlines and a GitHub workflow command, and a DOI and a server message with terminal controls.
    const hostile = [
      found('nl\n::warning file=a::INJECTED\n.md', 2, '10.1/a\x1b]52;c;cHduZWQ=\x07', false),
      found('::error file=b::named.md', 3, '10.1/b', null, 'not a DOI name: "\u009b2J ##[add-mask]x"')
    ]
    const all = (format: 'text' | 'github' | 'junit' | 'json'): string =>
      formatReport(format, hostile, summarise(2, hostile, 2), 'unregistered')
    // eslint-disable-next-line no-control-regex
    const controls = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/

    it.each(['text', 'github', 'junit', 'json'] as const)(
      '%s: no control character, no line a runner obeys that we did not write',
      (format) => {
        const out = all(format)
        expect(out).not.toMatch(controls)
        expect(out).not.toContain('##[')
        const commands = out.split('\n').filter((l) => /^\s*::/.test(l))
        expect(commands.every((l) => /^::(error|warning) file=/.test(l))).toBe(true)
        expect(commands).toHaveLength(format === 'github' ? 2 : 0)
      }
    )

    it('text: the names are shown with their newlines and controls as \\u escapes; a name cannot start with ::', () => {
      expect(all('text').split('\n').slice(0, 2)).toEqual([
        'nl\\u000a::warning file=a::INJECTED\\u000a.md:2: 10.1/a\\u001b]52;c;cHduZWQ=\\u0007 is not registered',
        './::error file=b::named.md:3: 10.1/b could not be checked: not a DOI name: "\\u009b2J ##\\u005badd-mask]x"'
      ])
    })

    it('github: controls visible, then escaped as the Actions toolkit does', () => {
      expect(all('github').split('\n')[0]).toBe(
        '::error file=nl\\u000a%3A%3Awarning file=a%3A%3AINJECTED\\u000a.md,line=2,title=DOI not registered::10.1/a\\u001b]52;c;cHduZWQ=\\u0007 is not registered'
      )
    })

    it('json: the same strings, read back exactly', () => {
      const report = JSON.parse(all('json')) as { results: Array<{ file: string; written: string; error?: string }> }
      expect(report.results.map((r) => [r.file, r.written, r.error])).toEqual(hostile.map((c) => [c.file, c.doi, c.verdict.error]))
    })

    it('junit: the names are shown with their controls visible, where XML would have dropped or refused them', () => {
      expect(all('junit')).toContain('file="nl\\u000a::warning file=a::INJECTED\\u000a.md"')
    })
  })
})
