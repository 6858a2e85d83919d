import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { doiProxy } from '../../support/server-process.js'

const FIXTURES = new URL('../../fixtures/verify/', import.meta.url).pathname

type Line = string | { doi: string; title: string; year?: number; author?: string }

/**
 * A verifying batch API on 127.0.0.1 (the server side is built in T6): the verdicts of issue 41 per DOI,
 * answered as NDJSON with heartbeat lines; it records each request. `objects: false` plays an older doi-proxy.
 */
async function verifyingServer(
  verdicts: Record<string, object>,
  opts: { objects?: boolean } = {}
): Promise<{ url: string; bodies: Line[][]; urls: string[] }> {
  const bodies: Line[][] = []
  const urls: string[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (body += c))
    req.on('end', () => {
      urls.push(req.url ?? '')
      const lines = JSON.parse(body) as Line[]
      bodies.push(lines)
      res.writeHead(200, { 'content-type': 'application/x-ndjson' })
      for (const line of lines) {
        const doi = typeof line === 'string' ? line : line.doi
        const registered = !doi.includes('gone')
        const objects = {
          metadata: { verdict: 'match', mismatches: [] },
          retraction: { verdict: 'none', notice: null, date: null },
          landing: { verdict: 'alive', status: 200, url: 'https://journal.test/', evidence: 'citation_doi names the DOI' },
          ...verdicts[doi]
        }
        const answer = registered
          ? { input: doi, registered, doi, url: 'https://journal.test/', status: 302, ...(opts.objects === false ? {} : objects) }
          : { input: doi, registered, doi: null, url: null, status: 404, metadata: null, retraction: null, landing: null }
        res.write('\n' + JSON.stringify(answer) + '\n')
      }
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, urls }
}

const servers: Server[] = []

describe('doi-proxy check --verify against a verifying server', { timeout: 120_000 }, () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-verify-'))
    for (const name of ['refs.bib', 'refs.ris', 'refs.json', 'CITATION.cff']) await copyFile(join(FIXTURES, name), join(dir, name))
  })
  afterEach(async () => {
    await Promise.all(servers.splice(0).map(async (s) => await new Promise((resolve) => s.close(resolve))))
    await rm(dir, { recursive: true, force: true })
  })

  it('sends each entry of the .bib as {doi, title, year, author}, LaTeX read, and prints its problems on their lines (exit 1)', async () => {
    const { url, bodies, urls } = await verifyingServer({
      '10.5555/wrong-title': {
        metadata: {
          verdict: 'mismatch',
          kind: 'other-work',
          mismatches: [{ field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' }]
        }
      },
      '10.5555/year-off-two': {
        metadata: { verdict: 'mismatch', kind: 'details', mismatches: [{ field: 'year', cited: 2015, registered: 2013 }] }
      },
      '10.5555/accents': { retraction: { verdict: 'retracted', notice: '10.5555/notice', date: '2021-03-04' } }
    })
    const run = await doiProxy(['check', '--server', url, '--verify', 'metadata,retraction,landing', 'refs.bib'], dir)
    expect(urls).toEqual(['/api/batch?verify=metadata,retraction,landing'])
    expect(bodies[0]![0]).toEqual({
      doi: '10.5555/accents',
      title: "On the DNA of Schrödinger's α cats: an École study",
      year: 2019,
      author: 'Müller, Hans'
    })
    expect(bodies[0]).toContain('10.5555/no-title')
    expect(run.stdout.split('\n').slice(0, 3)).toEqual([
      'refs.bib:9: 10.5555/accents is retracted: notice 10.5555/notice on 2021-03-04',
      'refs.bib:16: 10.5555/wrong-title names another work: cited "Deep nets for cats", registered "Soil microbes of Iowa"',
      'refs.bib:32: 10.5555/year-off-two details differ (the title matches): year cited 2015, registered 2013'
    ])
    expect(run.code).toBe(1)
  })

  const WALLED = {
    '10.5555/wrong-title': {
      landing: { verdict: 'blocked', status: 403, url: 'https://journal.test/', evidence: 'Cloudflare challenge (cf-mitigated: challenge)' }
    },
    '10.5555/preferred': {
      landing: { verdict: 'unconfirmed', status: 200, url: 'https://casino.test/', evidence: 'neither the DOI nor the title' }
    }
  }

  it('a bot wall and a drifted page are warnings, and the run passes (exit 0)', async () => {
    const { url } = await verifyingServer(WALLED)
    const run = await doiProxy(['check', '--server', url, '--verify', 'landing', '--format', 'github', 'CITATION.cff'], dir)
    expect(run.stdout).toContain(
      '::warning file=CITATION.cff,line=20,title=Landing page blocked::10.5555/wrong-title landing page is behind a bot wall'
    )
    expect(run.stdout).toContain('::warning file=CITATION.cff,line=11,title=Landing page unconfirmed::')
    expect(run.code).toBe(0)
  })

  it('with --fail-on unconfirmed a drifted page fails the run (exit 1)', async () => {
    const { url } = await verifyingServer(WALLED)
    const run = await doiProxy(
      ['check', '--server', url, '--verify', 'landing', '--fail-on', 'unconfirmed', '--format', 'github', 'CITATION.cff'],
      dir
    )
    expect(run.stdout).toContain('::error file=CITATION.cff,line=11,title=Landing page unconfirmed::')
    expect(run.code).toBe(1)
  })

  it('reads RIS and CSL-JSON files too, and .ris files in a directory walk', async () => {
    const { url, bodies } = await verifyingServer({})
    const run = await doiProxy(['check', '--server', url, '--verify', 'metadata', '--format', 'json', '.'], dir)
    const cited = bodies.flat().filter((l): l is Exclude<Line, string> => typeof l !== 'string')
    expect(cited).toContainEqual({ doi: '10.5555/year-off-one', title: 'Soil microbes of Iowa', year: 2018, author: 'van der Berg, Jan' })
    const report = JSON.parse(run.stdout) as { summary: { files: number }; results: Array<{ file: string; metadata: unknown }> }
    expect(new Set(report.results.map((r) => r.file))).toEqual(new Set(['CITATION.cff', 'refs.bib', 'refs.json', 'refs.ris']))
    expect(report.results[0]!.metadata).toEqual({ verdict: 'match', mismatches: [] })
    expect(run.code).toBe(0)
  })

  it('an older doi-proxy that does not verify is a failure to check (exit 2), never a run that verified nothing', async () => {
    const { url } = await verifyingServer({}, { objects: false })
    const run = await doiProxy(['check', '--server', url, '--verify', 'metadata', 'refs.bib'], dir)
    expect(run.stderr).toContain('does not verify (its answers carry no "metadata")')
    expect(run.code).toBe(2)
  })

  it.each([
    [['--verify', 'metadata,links'], '--verify: "links" is not a verify level (metadata, retraction or landing)'],
    [['--fail-on', 'mismatch'], '--fail-on mismatch needs --verify metadata'],
    [
      ['--verify', 'landing', '--fail-on', 'blocked'],
      '--fail-on takes unregistered, unknown, mismatch, retracted, dead, unconfirmed (a comma list), got "blocked"'
    ]
  ])('%j is a usage error (exit 2): %s', async (args, message) => {
    const run = await doiProxy(['check', ...args, 'refs.bib'], dir)
    expect(run.stderr).toContain(message)
    expect(run.code).toBe(2)
  })
})
