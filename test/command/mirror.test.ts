import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { HandleValue } from '../../src/handle/types.js'
import { mirrorExitCode, needsOf, parseReadingList, runMirror } from '../../src/command/mirror.js'
import type { MirrorOptions, MirrorSummary, ReadingList } from '../../src/command/mirror.js'
import { parseStoreFile } from '../../src/resolve/local-store/file-format.js'
import { createUpstreamClient } from '../../src/resolve/upstream/client.js'
import type { UpstreamClient } from '../../src/resolve/upstream/client.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { admin, LOC_XML, str } from '../support/records.js'
import { ranToEnd } from '../support/server-process.js'
import type { Run } from '../support/server-process.js'

const REPO = join(import.meta.dirname, '../..')

const NAMESPACE = '<HS_NAMESPACE><DOI.RA>10.SERV/CROSSREF</DOI.RA><locs>10.SERV/TESTLOCS</locs></HS_NAMESPACE>'
const CONNEG_LOC =
  '<locations><location id="1" href="https://data.example.org/{hdl}" http_role="conneg" mime_type="application/json" /></locations>'

/** The upstream's world: a prefix with namespace locations, DOIs, an alias into another prefix. */
const RECORDS: Record<string, HandleValue[]> = {
  10.5555: [admin(), str(1, 'HS_SERV', '10.SERV/CROSSREF'), str(2, 'HS_NAMESPACE', NAMESPACE)],
  '10.SERV/TESTLOCS': [str(1, '10320/loc', CONNEG_LOC)],
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/loc': [admin(), str(1, 'URL', 'http://example.org/loc-url'), str(2, '10320/loc', LOC_XML)],
  '10.5555/alias': [admin(), str(1, 'HS_ALIAS', '10.6666/target')],
  10.6666: [admin(), str(1, 'HS_SERV', '10.SERV/DATACITE')],
  '10.6666/target': [admin(), str(1, 'URL', 'http://example.org/target')],
  '10.5555/flaky': [admin(), str(1, 'URL', 'http://example.org/flaky')],
  '10.5555/broken': [admin(), str(1, 'URL', 'http://example.org/broken')]
}

/**
 * A tiny server in front of the fake upstream: answers HTTP 500 for a handle as many times as told, and passes
 * every other request through. FakeUpstream's failure mode is global; this fails one DOI and not the rest.
 */
class FailingFront {
  readonly failures = new Map<string, number>()
  readonly seen: string[] = []
  private readonly server: Server
  private constructor(private readonly target: string) {
    this.server = createServer((req, res) => {
      this.answer(req.url ?? '/', res).catch(() => res.destroy())
    })
  }

  static async start(target: FakeUpstream): Promise<FailingFront> {
    const front = new FailingFront(target.url.replace(/\/api\/handles$/, ''))
    await new Promise<void>((resolve) => front.server.listen(0, '127.0.0.1', resolve))
    return front
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/handles`
  }

  failFor(handle: string, times = Infinity): void {
    this.failures.set(handle.toUpperCase(), times)
  }

  count(handle: string): number {
    return this.seen.filter((h) => h.toUpperCase() === handle.toUpperCase()).length
  }

  private async answer(url: string, res: import('node:http').ServerResponse): Promise<void> {
    const handle = decodeURIComponent(url.split('?')[0]?.replace(/^\/api\/handles\//, '') ?? '')
    this.seen.push(handle)
    const left = this.failures.get(handle.toUpperCase()) ?? 0
    if (left > 0) {
      this.failures.set(handle.toUpperCase(), left - 1)
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"responseCode":2,"message":"Internal error"}')
      return
    }
    const upstream = await fetch(this.target + url)
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text())
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

const OPTIONS: MirrorOptions = { concurrency: 3, retries: 2, delayMs: 0, retryBaseMs: 1 }

function clientFor(baseUrl: string): UpstreamClient {
  return createUpstreamClient({
    baseUrl,
    userAgent: 'doi-proxy-test',
    timeoutMs: 5000,
    connectTimeoutMs: 2000,
    connections: 4,
    maxBodyBytes: 1 << 20
  })
}

function list(...handles: string[]): ReadingList {
  return parseReadingList(handles.join('\n'))
}

async function storedHandles(path: string): Promise<string[]> {
  const { records, problems } = parseStoreFile('out.ndjson', await readFile(path, 'utf8'))
  expect(problems).toEqual([])
  return records.map((r) => r.handle)
}

describe('runMirror against a real (fake) Handle REST API', () => {
  let fake: FakeUpstream
  let front: FailingFront
  let client: UpstreamClient
  let dir: string
  let out: string

  beforeEach(async () => {
    fake = await FakeUpstream.start(RECORDS)
    front = await FailingFront.start(fake)
    client = clientFor(front.url)
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-mirror-'))
    out = join(dir, 'records', 'mirror.ndjson')
  })
  afterEach(async () => {
    await client.close()
    await front.close()
    await fake.close()
    await rm(dir, { recursive: true, force: true })
  })

  const mirror = async (l: ReadingList, options: Partial<MirrorOptions> = {}): Promise<MirrorSummary> =>
    await runMirror({ upstream: client, list: l, outPath: out, options: { ...OPTIONS, ...options } })

  it('writes each DOI as one NDJSON record the local store loads, with the values the upstream gave', async () => {
    const summary = await mirror(list('10.5555/plain', 'doi:10.5555/loc', 'https://doi.org/10.5555/PLAIN'))
    expect(summary).toMatchObject({ total: 2, done: 2, fetched: 2, skipped: 0, notFound: 0, failed: 0 })
    const { records } = parseStoreFile('out.ndjson', await readFile(out, 'utf8'))
    expect(records.find((r) => r.handle === '10.5555/loc')?.values).toEqual(RECORDS['10.5555/loc'])
    expect(mirrorExitCode(summary)).toBe(0)
  })

  it('fetches the prefix record once per prefix, and the handles its HS_NAMESPACE <locs> names (content negotiation offline)', async () => {
    const summary = await mirror(list('10.5555/plain', '10.5555/loc'))
    expect((await storedHandles(out)).sort()).toEqual(['10.5555', '10.5555/loc', '10.5555/plain', '10.SERV/TESTLOCS'])
    expect(fake.count('10.5555')).toBe(1)
    expect(fake.count('10.SERV/TESTLOCS')).toBe(1)
    expect(summary.related).toEqual({ fetched: 2, notFound: 0, failed: 0 })
  })

  it("an HS_ALIAS brings its target, and the target's prefix", async () => {
    await mirror(list('10.5555/alias'))
    expect((await storedHandles(out)).sort()).toEqual(['10.5555', '10.5555/alias', '10.6666', '10.6666/target', '10.SERV/TESTLOCS'])
  })

  it('resumes: a second run skips what is already there and asks the upstream nothing', async () => {
    await mirror(list('10.5555/plain', '10.5555/alias'))
    const requests = fake.seen.length
    const again = await mirror(list('10.5555/plain', '10.5555/alias', '10.5555/loc'))
    expect(again).toMatchObject({ total: 3, fetched: 1, skipped: 2, failed: 0 })
    expect(fake.seen.length).toBe(requests + 1) // only 10.5555/loc
    const handles = await storedHandles(out)
    expect(new Set(handles).size).toBe(handles.length) // nothing written twice
  })

  it('a DOI the upstream does not know is counted as not found, not failed', async () => {
    const summary = await mirror(list('10.5555/plain', '10.5555/missing'))
    expect(summary).toMatchObject({ fetched: 1, notFound: 1, failed: 0 })
    expect(await storedHandles(out)).not.toContain('10.5555/missing')
    expect(mirrorExitCode(summary)).toBe(0)
  })

  it('a DOI that keeps failing is reported as failed (exit status 1) after its retries, and the rest is still written', async () => {
    front.failFor('10.5555/broken')
    const summary = await mirror(list('10.5555/plain', '10.5555/broken', '10.5555/loc'), { retries: 2 })
    expect(summary).toMatchObject({ fetched: 2, failed: 1 })
    expect(summary.failures).toEqual([
      {
        handle: '10.5555/broken',
        neededBy: 'line 2',
        message:
          'The DOI registry is having trouble right now and answered with an error. This is usually brief: please try again in a minute. (HTTP 500)'
      }
    ])
    expect(front.count('10.5555/broken')).toBe(3) // one try and two retries
    expect(await storedHandles(out)).toEqual(expect.arrayContaining(['10.5555/plain', '10.5555/loc']))
    expect(mirrorExitCode(summary)).toBe(1)
  })

  it('a run that writes nothing leaves no file behind (an empty mirror looks finished), and a refused connection is not retried', async () => {
    await front.close()
    const summary = await mirror(list('10.5555/plain'), { retries: 3 })
    expect(summary).toMatchObject({ fetched: 0, failed: 1 })
    expect(summary.failures[0]?.message).toContain('refused the connection')
    await expect(readFile(out, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('a file that was there before is kept, even when the run adds nothing', async () => {
    await mirror(list('10.5555/plain'))
    await mirror(list('10.5555/missing'))
    expect(await storedHandles(out)).toContain('10.5555/plain')
  })

  it('a passing failure (two 500s) is retried with backoff and then fetched', async () => {
    front.failFor('10.5555/flaky', 2)
    const summary = await mirror(list('10.5555/flaky'), { retries: 2 })
    expect(summary).toMatchObject({ fetched: 1, failed: 0 })
    expect(await storedHandles(out)).toContain('10.5555/flaky')
  })

  it('a failing prefix record fails the run too: the mirror would be incomplete', async () => {
    front.failFor('10.5555')
    const summary = await mirror(list('10.5555/plain'), { retries: 0 })
    expect(summary).toMatchObject({ fetched: 1, failed: 0, related: { failed: 1 } })
    expect(summary.failures[0]).toMatchObject({ handle: '10.5555', neededBy: '10.5555/plain' })
    expect(mirrorExitCode(summary)).toBe(1)
  })

  it('resuming fetches the prefix record an interrupted run did not get to', async () => {
    await writeFile(join(dir, 'partial.ndjson'), JSON.stringify({ handle: '10.5555/plain', values: RECORDS['10.5555/plain'] }) + '\n')
    out = join(dir, 'partial.ndjson')
    const summary = await mirror(list('10.5555/plain'))
    expect(summary).toMatchObject({ skipped: 1, fetched: 0 })
    expect(fake.count('10.5555/plain')).toBe(0)
    expect((await storedHandles(out)).sort()).toEqual(['10.5555', '10.5555/plain', '10.SERV/TESTLOCS'])
  })

  it('a last line cut short by an interrupted run is dropped and that record fetched again', async () => {
    const whole = JSON.stringify({ handle: '10.5555/plain', values: RECORDS['10.5555/plain'] }) + '\n'
    const cut = JSON.stringify({ handle: '10.5555/loc', values: RECORDS['10.5555/loc'] }).slice(0, 40)
    out = join(dir, 'cut.ndjson')
    await writeFile(out, whole + cut)
    const summary = await mirror(list('10.5555/plain', '10.5555/loc'))
    expect(summary).toMatchObject({ skipped: 1, fetched: 1, repairedPartialLine: true })
    expect(await storedHandles(out)).toContain('10.5555/loc')
  })

  it('a hand-written last record without a final newline is kept, not cut', async () => {
    out = join(dir, 'handmade.ndjson')
    await writeFile(out, JSON.stringify({ handle: '10.5555/plain', values: RECORDS['10.5555/plain'] }))
    const summary = await mirror(list('10.5555/plain', '10.5555/loc'))
    expect(summary).toMatchObject({ skipped: 1, fetched: 1 })
    expect(await storedHandles(out)).toEqual(expect.arrayContaining(['10.5555/plain', '10.5555/loc']))
  })

  it('stops starting requests when interrupted, and says so', async () => {
    const stop = new AbortController()
    stop.abort()
    const summary = await mirror(list('10.5555/plain', '10.5555/loc'), { signal: stop.signal })
    expect(summary).toMatchObject({ fetched: 0, interrupted: true })
    expect(fake.seen).toEqual([])
  })
})

describe('parseReadingList: one DOI per line (issue 7 §3)', () => {
  it.each([
    { why: 'a bare DOI', text: '10.5555/a', handles: ['10.5555/a'] },
    { why: 'blank lines and # comments are skipped', text: '# my list\n\n  10.5555/a  \n# 10.5555/b\n', handles: ['10.5555/a'] },
    {
      why: 'doi:, hdl: and resolver URLs are stripped (behaviour.md §2.4)',
      text: 'doi:10.5555/a\nhttps://doi.org/10.5555/b\nhttp://dx.doi.org/10.5555/c\nhdl:10.5555/d',
      handles: ['10.5555/a', '10.5555/b', '10.5555/c', '10.5555/d']
    },
    {
      why: 'a percent-encoded link pasted from a browser is decoded like a request path',
      text: 'https://doi.org/10.5555/a%20b',
      handles: ['10.5555/a b']
    },
    {
      why: 'a repeat (ASCII case folded, behaviour.md §2.8) is fetched once',
      text: '10.5555/a\n10.5555/A\ndoi:10.5555/a',
      handles: ['10.5555/a']
    },
    { why: 'CRLF line ends', text: '10.5555/a\r\n10.5555/b\r\n', handles: ['10.5555/a', '10.5555/b'] },
    {
      why: "a pasted link's ?query and #fragment are dropped, as in a batch",
      text: 'https://doi.org/10.5555/a?utm_source=x\nhttps://doi.org/10.5555/b#top',
      handles: ['10.5555/a', '10.5555/b']
    }
  ])('$why', ({ text, handles }) => {
    const parsed = parseReadingList(text)
    expect(parsed.handles.map((h) => h.handle)).toEqual(handles)
    expect(parsed.invalidLines).toEqual([])
  })

  it.each([
    { why: 'an encoded control character (behaviour.md §2: 400)', text: '10.5555/a\n10.5555/b%0Ac', line: 2, message: /control character/ },
    { why: 'a prefix with nothing after it', text: 'doi:', line: 1, message: /no DOI name/ },
    { why: 'bytes that are not UTF-8 once decoded', text: '10.5555/%FF', line: 1, message: /not valid UTF-8/ }
  ])('names the line of $why', ({ text, line, message }) => {
    const parsed = parseReadingList(text)
    expect(parsed.invalidLines).toHaveLength(1)
    expect(parsed.invalidLines[0]?.line).toBe(line)
    expect(parsed.invalidLines[0]?.message).toMatch(message)
  })
})

describe('needsOf: the records the resolver reads besides the DOI (behaviour.md R9, behaviour.md §3)', () => {
  it.each([
    {
      why: 'a DOI needs its prefix record',
      handle: '10.5555/plain',
      values: RECORDS['10.5555/plain'],
      wantsPrefix: true,
      needs: ['10.5555']
    },
    {
      why: 'a related record does not bring its prefix',
      handle: '10.SERV/TESTLOCS',
      values: RECORDS['10.SERV/TESTLOCS'],
      wantsPrefix: false,
      needs: []
    },
    {
      why: 'a prefix record needs the handles its HS_NAMESPACE <locs> names',
      handle: '10.5555',
      values: RECORDS['10.5555'],
      wantsPrefix: false,
      needs: ['10.SERV/TESTLOCS']
    },
    {
      why: 'an alias needs its target',
      handle: '10.5555/alias',
      values: RECORDS['10.5555/alias'],
      wantsPrefix: true,
      needs: ['10.5555', '10.6666/target']
    },
    {
      why: 'a 10320/loc include needs its target',
      handle: '10.5555/inc',
      values: [str(1, '10320/loc', '<locations><include>10.5555/shared</include></locations>')],
      wantsPrefix: false,
      needs: ['10.5555/shared']
    },
    {
      why: 'a 10320/loc overridePrefix needs that prefix',
      handle: '10.5555/ov',
      values: [str(1, '10320/loc', '<locations overridePrefix="10.7777"><location href="http://x/" /></locations>')],
      wantsPrefix: false,
      needs: ['10.7777']
    }
  ])('$why', ({ handle, values, wantsPrefix, needs }) => {
    expect(needsOf({ handle, values: values ?? [] }, wantsPrefix).map((n) => n.handle)).toEqual(needs)
  })
})

// ---------------------------------------------------------------------------------------------------------

/** Run the real command as a user would (through tsx, so no build is needed). */
async function doiProxy(args: string[], stdin = ''): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/command/cli.ts', ...args], {
    cwd: REPO,
    env: { ...process.env, UPSTREAM_URL: '' }
  })
  child.stdin.end(stdin)
  return await ranToEnd(child)
}

describe('the doi-proxy command', () => {
  let fake: FakeUpstream
  let dir: string
  beforeEach(async () => {
    fake = await FakeUpstream.start(RECORDS)
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-cli-'))
  })
  afterEach(async () => {
    await fake.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('--help explains the mirror command and exits 0', async () => {
    const run = await doiProxy(['--help'])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('doi-proxy mirror [options]')
    expect(run.stdout).toContain('--concurrency N')
  })

  it('mirrors a reading list into a file the store loads, and prints a summary', async () => {
    const input = join(dir, 'reading-list.txt')
    const out = join(dir, 'mirror.ndjson')
    await writeFile(input, '# to read\n10.5555/plain\nhttps://doi.org/10.5555/loc\n10.5555/missing\n')
    const run = await doiProxy(['mirror', '--input', input, '--out', out, '--upstream', fake.url, '--delay-ms', '0', '--concurrency', '2'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/fetched: +2\n/)
    expect(run.stdout).toMatch(/not found: +1\n/)
    expect((await storedHandles(out)).sort()).toEqual(['10.5555', '10.5555/loc', '10.5555/plain', '10.SERV/TESTLOCS'])
    expect(fake.seen[0]?.headers['user-agent']).toMatch(/^doi-proxy/)
  })

  it('reads the list from standard input and exits 1 when a DOI fails', async () => {
    const front = await FailingFront.start(fake)
    try {
      front.failFor('10.5555/broken')
      const out = join(dir, 'mirror.ndjson')
      const run = await doiProxy(
        ['mirror', '--out', out, '--upstream', front.url, '--delay-ms', '0', '--retries', '0'],
        '10.5555/plain\n10.5555/broken\n'
      )
      expect(run.code).toBe(1)
      expect(run.stdout).toMatch(/failed: +1\n/)
      expect(run.stderr).toContain(
        'failed: 10.5555/broken (line 2): The DOI registry is having trouble right now and answered with an error. This is usually brief: please try again in a minute. (HTTP 500)'
      )
      expect(await storedHandles(out)).toContain('10.5555/plain')
    } finally {
      await front.close()
    }
  })

  it('an upstream whose host name does not resolve: one line naming the DNS failure, exit 69, and no file', async () => {
    const out = join(dir, 'mirror.ndjson')
    const run = await doiProxy(
      ['mirror', '--out', out, '--upstream', 'http://doi-proxy-test.invalid/api/handles', '--delay-ms', '0'],
      '10.5555/plain\n10.5555/loc\n'
    )
    expect(run.code).toBe(69)
    expect(run.stderr).toBe(
      'doi-proxy: cannot reach the upstream http://doi-proxy-test.invalid/api/handles: DNS failure: its host name does not resolve ' +
        '(no network, or DNS failing) (getaddrinfo ENOTFOUND doi-proxy-test.invalid). Nothing was fetched or written; check the network and --upstream (or UPSTREAM_URL), then run the same command again.\n'
    )
    await expect(readFile(out, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it.each([
    { args: ['mirror', '--concurrency', '0'], message: 'doi-proxy: --concurrency must be a whole number from 1 to 64, got "0"' },
    { args: ['mirror', '--retries', 'many'], message: 'doi-proxy: --retries must be a whole number from 0 to 10, got "many"' },
    {
      args: ['mirror', '--upstream', 'doi.org'],
      message: 'doi-proxy: --upstream must be an http(s) URL such as https://doi.org/api/handles, got "doi.org"'
    },
    { args: ['mirror', '--colour'], message: "doi-proxy: Unknown option '--colour'" },
    {
      args: ['mirror', '--accept', 'bibtex'],
      message: 'doi-proxy: --accept takes media types such as application/x-bibtex, comma-separated; "bibtex" is not one'
    },
    { args: ['mirror', '--input', '/nonexistent/list.txt'], message: 'doi-proxy: cannot read --input "/nonexistent/list.txt" (ENOENT)' },
    { args: ['unmirror'], message: 'doi-proxy: unknown command "unmirror" (the commands are: mirror, record, check, health, import)' },
    { args: ['record', '--dois', 'a.txt', '--input', 'b.txt'], message: 'doi-proxy: give the list once: --dois FILE or --input FILE' }
  ])('a usage error names the option and value: $args', async ({ args, message }) => {
    const run = await doiProxy(args)
    expect(run.code).toBe(2)
    expect(run.stderr.split('\n')[0]).toBe(message)
  })
})
