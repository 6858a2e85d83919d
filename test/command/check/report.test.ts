import { describe, expect, it } from 'vitest'
import { exitCode, formatReport, summarise } from '../../../src/command/check/report.js'
import type { Checked } from '../../../src/command/check/report.js'

const found = (file: string, line: number, doi: string, registered: boolean | null, error?: string): Checked =>
  ({ file, line, doi, verdict: { registered, doi: registered === true ? doi : null, url: null, status: registered === true ? 302 : registered === false ? 404 : 503, ...(error === undefined ? {} : { error }) } })

describe('the report of doi-proxy check', () => {
  const checked = [found('docs/a,b.md', 3, '10.1/ok', true), found('docs/a,b.md', 4, '10.1/100%', false), found('x.txt', 1, '10.1/down', null, 'The registry did not answer in time.')]
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
    const xml = formatReport('junit', [found('a&b.md', 1, '10.1/<x>', false)], summarise(1, [found('a&b.md', 1, '10.1/<x>', false)], 1), 'unregistered')
    expect(xml).toContain('<testcase classname="a&#38;b.md" name="a&#38;b.md:1 10.1/&#60;x&#62;" file="a&#38;b.md" line="1">')
    expect(xml).toContain('<failure message="10.1/&#60;x&#62; is not registered" type="unregistered"/>')
  })
})
