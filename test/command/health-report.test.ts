import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parseHealthArgs, runHealth } from '../../src/command/health.js'
import { readReport, renderReport } from '../../src/command/health-report.js'
import type { HealthFormat } from '../../src/command/health-report.js'
import type { CheckResult, FailureVerdict } from '../../src/handle/health/types.js'
import { openHealthDb } from '../../src/resolve/health/db.js'
import type { HealthDb, WatchedDoi } from '../../src/resolve/health/db.js'
import { createHealthReader } from '../../src/resolve/health/reader.js'
import { AT, checkEvent, stateOf, watched } from '../support/health-writer.js'

// `doi-proxy health` (issue 42, plan §5, §7): its options, and its report in each format from a real history
// (SQLite in memory, filled through the fleet log's events as the checker's run fills it).

const DAY = 86_400_000
const SETTINGS = { intervalSeconds: 604_800, confirm: 3, confirmGapSeconds: 30, keepDays: 365 }
const opened: HealthDb[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (db) => await db.close()))
})

let seq = 0
function history(): HealthDb {
  const db = openHealthDb({ file: undefined, log: { info() {}, warn() {} }, now: () => AT })
  opened.push(db)
  return db
}
const apply = (db: HealthDb, ...args: Parameters<typeof checkEvent>): void => {
  db.applyEvent(`${++seq}-0`, checkEvent(...args))
}
/** Seen alive ten days before `at`, then confirmed broken at `at` (the streak began a day before). */
function broken(db: HealthDb, doi: WatchedDoi, verdict: FailureVerdict, at: number, result: Partial<CheckResult> = {}): void {
  apply(db, doi, at - 10 * DAY, 'alive', { result: { finalUrl: `https://journal.example/${doi.key}` } })
  apply(db, doi, at, verdict, { state: stateOf(verdict, at, { since: at - DAY, confirmedAt: at }), result })
}

function seeded(): HealthDb {
  const db = history()
  const dois = [1, 2, 3].map((n) => watched(n, '10.5555'))
  db.upsertWatched('list', dois, db.nextGeneration())
  broken(db, watched(1, '10.5555'), 'dead', AT, {
    status: 404,
    finalUrl: 'https://www.journal.example/article/1',
    evidence: 'HTTP 404 (page not found)'
  })
  apply(db, watched(2, '10.5555'), AT, 'alive')
  return db
}

const report = (db: HealthDb, format: HealthFormat): string =>
  renderReport(
    format,
    readReport(createHealthReader(db, { watched: ['10.5555'], now: () => AT }), SETTINGS, AT, format),
    'https://doi.example.org/'
  )

describe('the report of doi-proxy health', () => {
  it('as text: one line per broken DOI (verdict, since, status, failing URL, last good), then one line per prefix', () => {
    expect(report(seeded(), 'text')).toBe(
      '10.5555/K1  dead since 2026-10-31: HTTP 404 at https://www.journal.example/article/1 (HTTP 404 (page not found)) · last good https://journal.example/10.5555/k1 (2026-10-22)\n' +
        '10.5555  3 DOIs: 1 alive, 1 dead, 1 unchecked (1 newly broken this week)\n'
    )
  })

  it('as text: what a page or record wrote cannot steer the terminal (control characters shown escaped)', () => {
    const db = history()
    const doi = watched(7, '10.5555')
    db.upsertWatched('list', [doi], db.nextGeneration())
    broken(db, doi, 'dead', AT, { status: null, finalUrl: 'https://evil.example/\u001b]0;owned\u0007', evidence: 'no such host \u001b[2J' })
    const text = report(db, 'text')
    // eslint-disable-next-line no-control-regex
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/)
    expect(text).toContain('\\u001b[2J')
  })

  it('as CSV: exactly doi,verdict,since,url,evidence, one row per broken DOI, formulas defused', () => {
    const db = seeded()
    const doi = watched(3, '10.5555')
    broken(db, doi, 'not-found', AT + 1, { status: 404, finalUrl: null, evidence: '=HYPERLINK("https://evil.example")' })
    expect(report(db, 'csv')).toBe(
      'doi,verdict,since,url,evidence\r\n' +
        '10.5555/K1,dead,2026-10-31T00:00:00.000Z,https://www.journal.example/article/1,HTTP 404 (page not found)\r\n' +
        `10.5555/K3,not-found,2026-10-31T00:00:00.001Z,,"'=HYPERLINK(""https://evil.example"")"\r\n`
    )
  })

  it('as JSON: the shape of /health.json, times in ISO 8601', () => {
    const json = JSON.parse(report(seeded(), 'json')) as Record<string, unknown> & {
      prefixes: Array<{ prefix: string; counts: Record<string, number>; history: unknown[] }>
      broken: Array<Record<string, unknown>>
    }
    expect(json).toMatchObject({ generatedAt: '2026-11-01T00:00:00.000Z', settings: SETTINGS, checker: { state: 'running' } })
    expect(json.prefixes).toHaveLength(1)
    expect(json.prefixes[0]).toMatchObject({ prefix: '10.5555', counts: { alive: 1, dead: 1, unchecked: 1 } })
    expect(json.prefixes[0]?.history.length).toBeGreaterThan(0) // the chart's days
    expect(json.broken).toEqual([
      expect.objectContaining({
        doi: '10.5555/K1',
        verdict: 'dead',
        since: '2026-10-31T00:00:00.000Z',
        confirmedAt: '2026-11-01T00:00:00.000Z',
        url: 'https://www.journal.example/article/1',
        status: 404,
        lastGoodUrl: 'https://journal.example/10.5555/k1',
        lastGoodAt: '2026-10-22T00:00:00.000Z'
      })
    ])
  })

  it('as HTML: the /health page, every string escaped, no script, links to the server', () => {
    const db = seeded()
    const doi = watched(3, '10.5555')
    broken(db, doi, 'dead', AT + 1, { evidence: '<script>alert(1)</script>', finalUrl: 'javascript:alert(1)' })
    const html = report(db, 'html')
    expect(html).toMatch(/^<!doctype html>/)
    expect(html).toContain('<h1>DOI health</h1>')
    expect(html).not.toContain('<script')
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(html).not.toContain('href="javascript:')
    expect(html).toContain('href="https://doi.example.org/health?doi=10.5555%2FK1"')
  })

  it('lists every broken DOI, past the reader’s page of 1,000', () => {
    const db = history()
    const dois = Array.from({ length: 1005 }, (_, n) => watched(n, '10.5555'))
    db.upsertWatched('list', dois, db.nextGeneration())
    dois.forEach((doi, n) => {
      apply(db, doi, AT + n, 'dead', { state: stateOf('dead', AT + n) })
    })
    const csv = report(db, 'csv').trimEnd().split('\r\n')
    expect(csv).toHaveLength(1 + 1005)
    expect(new Set(csv.slice(1).map((line) => line.split(',')[0])).size).toBe(1005)
  })
})

describe('the options of doi-proxy health', () => {
  const CWD = '/work/project'

  it('reads --watch (comma-separated, or given again), --list, --format, --out, --db and --confirm-gap; paths from the working directory', () => {
    expect(
      parseHealthArgs(
        [
          '--watch',
          '10.5555,10.6666',
          '-w',
          '10.7777',
          '--list',
          'dois.txt',
          '-f',
          'csv',
          '-o',
          'out/broken.csv',
          '--db',
          '/var/h.sqlite',
          '--confirm-gap',
          '0'
        ],
        CWD
      )
    ).toEqual({
      watch: ['10.5555', '10.6666', '10.7777'],
      list: '/work/project/dois.txt',
      format: 'csv',
      out: '/work/project/out/broken.csv',
      db: '/var/h.sqlite',
      confirmGapSeconds: 0
    })
  })

  it('defaults to text on standard output, the history in memory, 30 s between confirming checks', () => {
    expect(parseHealthArgs(['--list', 'dois.txt'], CWD)).toEqual({
      watch: [],
      list: '/work/project/dois.txt',
      format: 'text',
      out: undefined,
      db: undefined,
      confirmGapSeconds: 30
    })
    expect(parseHealthArgs(['--help'], CWD)).toBe('help')
  })

  // [arguments, what the message says]
  const REFUSED: Array<[string[], RegExp]> = [
    [[], /nothing to check: give --watch PREFIX .* or --list FILE/],
    [['--format', 'xml', '--list', 'a'], /--format must be one of text, json, csv, html, got "xml"/],
    [['--confirm-gap', '-1', '--list', 'a'], /--confirm-gap|argument '--confirm-gap'/],
    [['--confirm-gap', 'soon', '--list', 'a'], /--confirm-gap must be a whole number of seconds from 0 to 604800, got "soon"/],
    [['--confirm-gap', '604801', '--list', 'a'], /--confirm-gap must be a whole number .* got "604801"/],
    [['--confirm-gap', '1.5', '--list', 'a'], /--confirm-gap must be a whole number/],
    [['--list', 'a', 'extra'], /unexpected argument "extra"/],
    [['--list', 'a', '--out', '-'], /--out must name a file, got "-"/],
    [['--list', ''], /--list must name a file/],
    [['--watch', '10.5555,', '--list', 'a'], /--watch takes comma-separated prefixes/],
    [['--list', 'a', '--verbose'], /Unknown option '--verbose'/]
  ]
  it.each(REFUSED)('refuses %j', (args, message) => {
    expect(() => parseHealthArgs(args, CWD)).toThrow(message)
  })
})

describe('doi-proxy health refuses before checking anything (exit 2)', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-health-'))
    await writeFile(join(dir, 'dois.txt'), '10.5555/a\n')
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const out: string[] = []
    const err: string[] = []
    stdout.on('data', (c: Buffer) => out.push(c.toString()))
    stderr.on('data', (c: Buffer) => err.push(c.toString()))
    // No UPSTREAM_URL is asked: each of these stops before anything is built.
    const code = await runHealth(args, { cwd: dir, env: { UPSTREAM_URL: 'http://127.0.0.1:9/api/handles', ...env }, stdout, stderr })
    return { code, stdout: out.join(''), stderr: err.join('') }
  }

  it('a --list that cannot be read, named with why', async () => {
    const r = await run(['--list', 'missing.txt'])
    expect(r.code).toBe(2)
    expect(r.stderr).toBe(
      `doi-proxy health: cannot read --list ${JSON.stringify(join(dir, 'missing.txt'))} (ENOENT)\nRun "doi-proxy health --help" for the options.\n`
    )
  })

  it('a --list that is a directory', async () => {
    const r = await run(['--list', '.'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('(not a file)')
  })

  it('an --out or --db in a directory that does not exist', async () => {
    for (const option of ['--out', '--db']) {
      const r = await run(['--list', 'dois.txt', option, 'nowhere/file'])
      expect(r.code, option).toBe(2)
      expect(r.stderr, option).toContain(
        `cannot write ${option} ${JSON.stringify(join(dir, 'nowhere/file'))}: its directory cannot be written (ENOENT)`
      )
    }
  })

  it('a prefix the server would refuse, named by its option', async () => {
    const r = await run(['--watch', '10.5555,10.5555'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('invalid setting --watch: "10.5555" is named twice')
    const spaced = await run(['--watch', '10.5555 x'])
    expect(spaced.stderr).toContain('invalid setting --watch: expected comma-separated prefixes such as 10.5555')
  })

  it('OFFLINE=true: health checks need the network', async () => {
    const r = await run(['--list', 'dois.txt'], { OFFLINE: 'true' })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('OFFLINE=true forbids it')
  })

  it('--help prints the usage and exits 0', async () => {
    const r = await run(['--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^doi-proxy health: /)
    expect(r.stdout).toContain('--confirm-gap S')
  })
})
