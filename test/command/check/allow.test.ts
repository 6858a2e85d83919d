import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { addAllowed, AllowError, MAX_ALLOW_BYTES, readAllowLists } from '../../../src/command/check/allow.js'
import type { AllowList } from '../../../src/command/check/allow.js'
import { CHECK_HELP } from '../../../src/command/check/command.js'
import { exitCode, formatReport, summarise } from '../../../src/command/check/report.js'
import type { Checked } from '../../../src/command/check/report.js'
import { formatVerifyReport, summariseVerified, verifyExitCode } from '../../../src/command/check/report-verify.js'

const allowedIn = (text: string): Record<string, number> => {
  const list: AllowList = new Map()
  addAllowed(text, 'allow.txt', list)
  return Object.fromEntries([...list].map(([key, at]) => [key, at.line]))
}

// The allow file (docs/checking-dois.md, "Allowing DOIs that are not registered yet"): one DOI a line in any
// form check finds in a file, case folded as DOIs are (the DOI Handbook §2.4: ASCII case-insensitive),
// `#` comments at a line's start or after a space, blank lines skipped.
describe('addAllowed: the DOIs of an allow file', () => {
  it.each<[string, string, Record<string, number>]>([
    ['a bare DOI', '10.5281/zenodo.123\n', { '10.5281/ZENODO.123': 1 }],
    [
      'doi: and a doi.org link',
      'doi:10.5281/zenodo.1\nhttps://doi.org/10.5281/zenodo.2\n',
      { '10.5281/ZENODO.1': 1, '10.5281/ZENODO.2': 2 }
    ],
    ['comments and blank lines', '# reserved at Zenodo\n\n  10.5281/zenodo.7   # v2.0, out in May\n\n', { '10.5281/ZENODO.7': 3 }],
    ['a # inside a DOI is no comment', '10.5555/a#b\n', { '10.5555/A#B': 1 }],
    ['Windows line ends', '10.5555/a\r\n10.5555/b\r\n', { '10.5555/A': 1, '10.5555/B': 2 }],
    ['the first line of a DOI listed twice, whatever its case', '10.5555/Twice\n10.5555/TWICE\n', { '10.5555/TWICE': 1 }],
    ['an empty file', '', {}]
  ])('%s', (_name, text, expected) => {
    expect(allowedIn(text)).toEqual(expected)
  })

  it.each([
    ['a word', '10.5555/a\nzenodo\n', 'allow.txt:2: "zenodo" is not one DOI'],
    ['two DOIs on a line', '10.5555/a 10.5555/b\n', 'allow.txt:1: "10.5555/a 10.5555/b" is not one DOI'],
    ['a publisher link', 'https://journal.example/doi/10.5555/a\n', 'allow.txt:1: "https://journal.example/doi/10.5555/a" is not one DOI'],
    ['a prefix alone', '10.5555\n', 'allow.txt:1: "10.5555" is not one DOI']
  ])('%s is a usage error naming the file and line', (_name, text, message) => {
    expect(() => allowedIn(text)).toThrow(AllowError)
    expect(() => allowedIn(text)).toThrow(`--allow ${message}`)
  })
})

describe('readAllowLists: the files of --allow', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-allow-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('reads each file named, relative to the working directory, remembering which allows what', async () => {
    await writeFile(join(dir, 'a.txt'), '10.5555/a\n')
    await mkdir(join(dir, 'ci'))
    await writeFile(join(dir, 'ci', 'b.txt'), '\n10.5555/b\n10.5555/a\n')
    const list = await readAllowLists(['a.txt', 'ci/b.txt'], dir)
    expect(Object.fromEntries(list)).toEqual({ '10.5555/A': { file: 'a.txt', line: 1 }, '10.5555/B': { file: 'ci/b.txt', line: 2 } })
  })

  it.each([
    ['a file that does not exist', async () => 'missing.txt', '--allow missing.txt: no such file'],
    ['a directory', async () => 'ci', '--allow ci: cannot be used (not a regular file)'],
    [
      'a file over 1 MiB',
      async () => {
        await writeFile(join(dir, 'big.txt'), '#'.repeat(MAX_ALLOW_BYTES + 1))
        return 'big.txt'
      },
      `--allow big.txt: cannot be used (larger than ${MAX_ALLOW_BYTES} bytes)`
    ]
  ])('%s is a usage error naming it', async (_name, make, message) => {
    await mkdir(join(dir, 'ci'))
    const file = await make()
    await expect(readAllowLists([file], dir)).rejects.toThrow(message)
  })
})

const at = (line: number, doi: string, registered: boolean, allowed?: number): Checked => ({
  file: 'CITATION.cff',
  line,
  doi,
  verdict: { registered, doi: registered ? doi : null, url: null, status: registered ? 302 : 404 },
  ...(allowed === undefined ? {} : { allowed: { file: 'allow.txt', line: allowed } })
})
// Reserved and cited before the release; registered since; not allowed and not registered.
const RESERVED = at(4, '10.5281/zenodo.9', false, 2)
const RELEASED = at(9, '10.5281/zenodo.8', true, 5)
const GONE = at(12, '10.5555/gone', false)

describe('what an allowed DOI is in the report of check (without --verify)', () => {
  const summary = (checked: Checked[]) => summarise(1, checked, checked.length, true)

  it('text: a notice on its line that it is not registered yet, naming the allow file', () => {
    expect(formatReport('text', [RESERVED], summary([RESERVED]), 'unregistered')).toBe(
      'CITATION.cff:4: 10.5281/zenodo.9 is not registered yet (allowed by allow.txt)\n' +
        'Checked 1 DOI (1 distinct) in 1 file: 0 registered, 0 not registered, 1 not registered yet (allowed), 0 could not be checked.\n'
    )
  })

  it('text: one registered by now can leave the allow list, at its line there', () => {
    expect(formatReport('text', [RELEASED], summary([RELEASED]), 'unregistered').split('\n')[0]).toBe(
      'CITATION.cff:9: 10.5281/zenodo.8 is registered: it can leave the allow list (allow.txt:5)'
    )
  })

  it('exits 0 for an allowed DOI not registered yet, and 1 still for one no list allows', () => {
    expect(exitCode(summary([RESERVED, RELEASED]), 'unregistered')).toBe(0)
    expect(exitCode(summary([RESERVED, GONE]), 'unregistered')).toBe(1)
  })

  it('github: ::notice for both, ::error for the DOI no list allows', () => {
    expect(
      formatReport('github', [RESERVED, RELEASED, GONE], summary([RESERVED, RELEASED, GONE]), 'unregistered')
        .split('\n')
        .slice(0, 3)
    ).toEqual([
      '::notice file=CITATION.cff,line=4,title=DOI not registered yet (allowed)::10.5281/zenodo.9 is not registered yet (allowed by allow.txt)',
      '::notice file=CITATION.cff,line=9,title=Allowed DOI is registered::10.5281/zenodo.8 is registered: it can leave the allow list (allow.txt:5)',
      '::error file=CITATION.cff,line=12,title=DOI not registered::10.5555/gone is not registered'
    ])
  })

  it('junit: the allowed DOI not registered yet is skipped with the reason', () => {
    const xml = formatReport('junit', [RESERVED, RELEASED], summary([RESERVED, RELEASED]), 'unregistered')
    expect(xml).toContain('<skipped message="10.5281/zenodo.9 is not registered yet (allowed by allow.txt)" type="allowed"/>')
    expect(xml).toContain('<system-out>notice: 10.5281/zenodo.8 is registered: it can leave the allow list (allow.txt:5)</system-out>')
    expect(xml).toMatch(/tests="2" failures="0" errors="0" skipped="1"/)
  })

  it('json: "allowed": true, and which line allows it', () => {
    const report = JSON.parse(formatReport('json', [RESERVED], summary([RESERVED]), 'unregistered')) as {
      summary: Record<string, number>
      results: Array<Record<string, unknown>>
    }
    expect(report.results[0]).toMatchObject({ written: '10.5281/zenodo.9', registered: false, allowed: true, allowedBy: 'allow.txt:2' })
    expect(report.summary).toMatchObject({ unregistered: 0, allowed: 1 })
  })

  it('without --allow the summary and results are as before (no "allowed")', () => {
    const report = JSON.parse(formatReport('json', [GONE], summarise(1, [GONE], 1), 'unregistered')) as Record<string, unknown>
    expect(JSON.stringify(report)).not.toContain('allowed')
  })
})

describe('what an allowed DOI is in the report of check --verify', () => {
  const FAIL_ON = ['unregistered', 'mismatch', 'retracted', 'dead'] as const
  const verified = (checked: Checked[]) => summariseVerified(summarise(1, checked, checked.length, true), checked, ['landing'])
  const reserved: Checked = { ...RESERVED, verdict: { ...RESERVED.verdict, landing: null } }
  const released: Checked = {
    ...RELEASED,
    verdict: {
      ...RELEASED.verdict,
      landing: { verdict: 'alive', status: 200, url: 'https://zenodo.test/8', evidence: 'citation_doi names the DOI' }
    }
  }

  it('exits 0 for an allowed DOI not registered yet, with no failure in json', () => {
    expect(verifyExitCode([reserved], [...FAIL_ON])).toBe(0)
    const report = JSON.parse(formatVerifyReport('json', [reserved], verified([reserved]), [...FAIL_ON])) as {
      results: Array<Record<string, unknown>>
    }
    expect(report.results[0]).toMatchObject({ allowed: true, allowedBy: 'allow.txt:2', failures: [] })
  })

  it('github: ::notice, never ::error, for both', () => {
    const lines = formatVerifyReport('github', [reserved, released], verified([reserved, released]), [...FAIL_ON]).split('\n')
    expect(lines.filter((l) => l.startsWith('::')).map((l) => l.slice(0, l.indexOf('::', 2)))).toEqual([
      '::notice file=CITATION.cff,line=4,title=DOI not registered yet (allowed)',
      '::notice file=CITATION.cff,line=9,title=Allowed DOI is registered'
    ])
  })

  it('junit: skipped with the reason, the registered one passes with its notice', () => {
    const xml = formatVerifyReport('junit', [reserved, released], verified([reserved, released]), [...FAIL_ON])
    expect(xml).toContain('<skipped message="10.5281/zenodo.9 is not registered yet (allowed by allow.txt)" type="allowed"/>')
    expect(xml).toContain('notice: 10.5281/zenodo.8 is registered: it can leave the allow list (allow.txt:5)')
    expect(xml).toMatch(/tests="2" failures="0" errors="0" skipped="1"/)
  })
})

describe('doi-proxy check --help', () => {
  it('names --allow, and says an unregistered DOI fails whatever --fail-on names unless allowed', () => {
    expect(CHECK_HELP).toMatch(/^ {6}--allow FILE {9}DOIs not registered yet/m)
    expect(CHECK_HELP.replace(/\s+/g, ' ')).toContain(
      "but a DOI that is not registered exits 1 whatever it names (check's first question), unless --allow lists it"
    )
  })
})
