import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { buildConfig } from '../../src/config/schema.js'
import type { Config } from '../../src/config/schema.js'
import { openRecorder } from '../../src/resolve/recording/recorder.js'
import { RECORD_FILE } from '../../src/resolve/recording/record-file.js'
import { FakeAgency } from '../support/fake-agency.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { urlRecord } from '../support/local-records.js'
import { admin, str } from '../support/records.js'
import { exitOf, ranToEnd, startServer } from '../support/server-process.js'
import type { Run } from '../support/server-process.js'

// Issue 29 §1: a test suite runs once online through doi-proxy with RECORD_TO, then offline with
// LOCAL_STORE_DIR set to the same directory, and gets byte-identical answers.

const BIBTEX = '@article{paper, title = {A paper}}\n'
const CSL = '{"type":"article-journal","title":"A paper","DOI":"10.9999/paper"}'
const APA = 'Author, A. (2020). A paper. Journal, 1(2), 3. https://doi.org/10.9999/paper\n'

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-record-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function registry() {
  const agency = await FakeAgency.start({
    '10.9999/paper': {
      'application/x-bibtex': BIBTEX,
      'application/vnd.citationstyles.csl+json': CSL,
      'text/x-bibliography;style=apa': APA
    }
  })
  const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}" /></locations>`
  const upstream = await FakeUpstream.start({
    10.9999: [
      admin(),
      str(1, 'HS_SERV', '10.SERV/CROSSREF'),
      str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')
    ],
    '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)],
    '10.9999/paper': [str(1, 'URL', 'https://publisher.example/paper'), str(2, 'EMAIL', 'editor@publisher.example'), admin()],
    '10.9999/Alias': [str(1, 'HS_ALIAS', '10.9999/paper'), admin()],
    // A prefix without namespace locations: a record without a URL shows its values.
    10.8888: [admin(), str(1, 'HS_SERV', '10.SERV/DATACITE')],
    '10.8888/values-only': [str(1, 'DESC', 'No URL <here> & "there"'), admin()],
    '10.9999/loc': [
      str(
        1,
        '10320/loc',
        '<locations chooseby="locatt,country,weighted"><location href="https://a.example/" weight="1" /><location href="https://uk.example/" country="gb" weight="0" /></locations>'
      ),
      admin()
    ]
  })
  onTestFinished(async () => {
    await upstream.close()
    await agency.close()
  })
  return { agency, upstream }
}

async function start(config: Config): Promise<FastifyInstance> {
  const app = await buildApp(config, { random: () => 0 })
  await app.ready()
  return app
}

const CURL = { 'user-agent': 'curl/8.5.0', accept: '*/*' }
/** What a test suite asks: every kind of answer, metadata in several types. */
const REQUESTS: Array<{ url: string; headers?: Record<string, string> }> = [
  { url: '/10.9999/paper', headers: CURL },
  {
    url: '/10.9999/paper',
    headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', accept: 'text/html,*/*;q=0.8' }
  },
  { url: '/10.9999/paper?noredirect' },
  { url: '/api/handles/10.9999/paper' },
  { url: '/api/handles/10.9999/paper?pretty&type=URL' },
  { url: '/10.9999/paper', headers: { accept: 'application/x-bibtex' } },
  { url: '/10.9999/paper', headers: { accept: 'application/vnd.citationstyles.csl+json' } },
  { url: '/10.9999/paper', headers: { accept: 'text/x-bibliography; style=apa' } },
  { url: '/10.9999/paper', headers: { accept: 'application/rdf+xml;q=0.9, application/x-bibtex;q=0.5' } },
  { url: '/10.9999/alias', headers: CURL },
  { url: '/10.8888/values-only', headers: CURL },
  { url: '/api/handles/10.8888/values-only' },
  { url: '/10.9999/loc', headers: CURL },
  { url: '/10.9999/loc?country=GB', headers: CURL },
  { url: '/10.9999/paper?action=showurls' },
  { url: '/doiRA/10.9999/paper' }
]

const RELEVANT = ['location', 'content-type', 'vary', 'link', 'x-content-type-options', 'content-security-policy'] as const

async function answers(
  app: FastifyInstance
): Promise<Array<{ request: string; status: number; headers: Record<string, unknown>; body: string }>> {
  const out = []
  for (const r of REQUESTS) {
    const res = await app.inject({ url: r.url, headers: r.headers ?? {} })
    out.push({
      request: `${r.url} ${JSON.stringify(r.headers ?? {})}`,
      status: res.statusCode,
      headers: Object.fromEntries(RELEVANT.map((h) => [h, res.headers[h]])),
      body: res.body
    })
  }
  return out
}

describe('RECORD_TO, then OFFLINE=true LOCAL_STORE_DIR: the same answers', () => {
  it('every answer of a suite run offline from what it recorded online is byte-identical (status, headers, body)', async () => {
    const { agency, upstream } = await registry()
    const dir = tempDir()
    const base: Config = {
      ...buildConfig(undefined, {}),
      upstreamUrl: upstream.url,
      cacheFile: undefined,
      localStoreDir: undefined,
      maxEventLoopDelayMs: 0,
      metadataMode: 'fetch',
      metadataHosts: [agency.host]
    }
    const online = await start({ ...base, recordTo: dir })
    const recorded = await answers(online)
    expect(
      recorded.map((a) => a.status),
      JSON.stringify(
        recorded.map((a) => [a.request, a.status, a.body.slice(0, 200)]),
        null,
        1
      )
    ).toEqual([302, 302, 200, 200, 200, 200, 200, 200, 200, 301, 200, 200, 302, 302, 200, 200])
    // Written off the request path, shortly after: the answers did not wait for the file.
    await vi.waitFor(
      () => {
        expect(readFileSync(join(dir, RECORD_FILE), 'utf8')).toContain('text/x-bibliography;style=apa')
      },
      { timeout: 5000, interval: 50 }
    )
    await online.close()

    const offline = await start({ ...base, offline: true, localStoreDir: dir })
    onTestFinished(async () => {
      await offline.close()
    })
    const seenUpstream = upstream.seen.length
    const seenAgency = agency.seen.length
    expect(await answers(offline)).toEqual(recorded)
    expect(upstream.seen).toHaveLength(seenUpstream)
    expect(agency.seen).toHaveLength(seenAgency)
  })

  it('the file holds each handle once, with its metadata by the media type asked, and loads without a problem', async () => {
    const { agency, upstream } = await registry()
    const dir = tempDir()
    const app = await start({
      ...buildConfig(undefined, {}),
      upstreamUrl: upstream.url,
      cacheFile: undefined,
      localStoreDir: undefined,
      maxEventLoopDelayMs: 0,
      metadataMode: 'fetch',
      metadataHosts: [agency.host],
      recordTo: dir
    })
    for (let i = 0; i < 2; i++) await answers(app)
    await app.inject({ url: '/10.9999/paper', headers: { accept: 'application/x-bibtex' } })
    await app.close()
    const lines = readFileSync(join(dir, RECORD_FILE), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { handle: string; metadata?: Record<string, unknown> })
    // Each handle as it was asked for (the store folds case as the upstream does).
    expect(lines.map((l) => l.handle).sort()).toEqual(
      ['10.8888', '10.8888/values-only', '10.9999', '10.9999/alias', '10.9999/loc', '10.9999/paper', '10.SERV/FAKE'].sort()
    )
    expect(Object.keys(lines.find((l) => l.handle === '10.9999/paper')?.metadata ?? {})).toEqual([
      'application/x-bibtex',
      'application/vnd.citationstyles.csl+json',
      'text/x-bibliography;style=apa'
    ])
    const replay = await start({
      ...buildConfig(undefined, {}),
      offline: true,
      cacheFile: undefined,
      localStoreDir: dir,
      maxEventLoopDelayMs: 0
    })
    onTestFinished(async () => {
      await replay.close()
    })
    expect((await replay.inject({ url: '/metrics' })).body).toMatch(/doi_proxy_local_records 7/)
  })

  it('a second run keeps what the first recorded and adds what it fetched', async () => {
    const { upstream } = await registry()
    const dir = tempDir()
    const config: Config = {
      ...buildConfig(undefined, {}),
      upstreamUrl: upstream.url,
      cacheFile: undefined,
      localStoreDir: undefined,
      maxEventLoopDelayMs: 0,
      recordTo: dir
    }
    const first = await start(config)
    await first.inject({ url: '/10.9999/paper' })
    await first.close()
    const second = await start(config)
    await second.inject({ url: '/10.9999/loc' })
    await second.close()
    const handles = readFileSync(join(dir, RECORD_FILE), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { handle: string }).handle)
    expect(handles.sort()).toEqual(['10.9999', '10.9999/loc', '10.9999/paper', '10.SERV/FAKE'])
  })

  it('a recorded file with a line that is not a record stops the start, naming the line, rather than being rewritten without it', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, RECORD_FILE), '{"handle":"10.1/a","values":[]}\nnot json\n')
    await expect(start({ ...buildConfig(undefined, {}), cacheFile: undefined, localStoreDir: undefined, recordTo: dir })).rejects.toThrow(
      /line 2 of .*recorded\.ndjson/
    )
  })

  it('what is recorded but not yet written is written at close, not lost', async () => {
    const dir = tempDir()
    const log = { info: () => {}, warn: () => {}, error: () => {} }
    const recorder = await openRecorder({ dir, flushDelayMs: 60_000, log })
    recorder.record('10.1/a', [str(1, 'URL', 'https://example.org/a')])
    recorder.recordMetadata('10.1/a', 'application/x-bibtex', { contentType: 'application/x-bibtex', body: '@misc{a}' })
    expect(() => readFileSync(join(dir, RECORD_FILE))).toThrow(/ENOENT/)
    await recorder.close()
    expect(JSON.parse(readFileSync(join(dir, RECORD_FILE), 'utf8'))).toMatchObject({
      handle: '10.1/a',
      metadata: { 'application/x-bibtex': { body: '@misc{a}' } }
    })
  })

  it('past its bound, a record is not kept and the log says so once', async () => {
    const dir = tempDir()
    const warnings: string[] = []
    const recorder = await openRecorder({
      dir,
      maxRecords: 2,
      log: {
        info: () => {},
        warn: (_o, msg) => {
          warnings.push(msg)
        },
        error: () => {}
      }
    })
    for (const h of ['10.1/a', '10.1/b', '10.1/c', '10.1/d']) recorder.record(h, [str(1, 'URL', `https://example.org/${h}`)])
    recorder.record('10.1/A', [str(1, 'URL', 'https://example.org/a2')])
    await recorder.close()
    const lines = readFileSync(join(dir, RECORD_FILE), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { handle: string })
    expect(lines.map((l) => l.handle)).toEqual(['10.1/a', '10.1/b'])
    expect(warnings).toHaveLength(1)
  })

  it('two servers recording into one directory lose nothing: the file holds what each fetched', async () => {
    const { upstream } = await registry()
    const dir = tempDir()
    const env = { UPSTREAM_URL: upstream.url, RECORD_TO: dir, DRAIN_DELAY_MS: '0' }
    const [a, b] = await Promise.all([startServer(env), startServer(env)])
    // Both read the (empty) directory at start; then each fetches its own DOI and writes the file.
    expect((await fetch(`http://127.0.0.1:${a.port}/10.9999/paper`, { redirect: 'manual' })).status).toBe(302)
    await vi.waitFor(
      () => {
        expect(readFileSync(join(dir, RECORD_FILE), 'utf8')).toContain('10.9999/paper')
      },
      { timeout: 10_000, interval: 50 }
    )
    expect((await fetch(`http://127.0.0.1:${b.port}/10.8888/values-only`, { redirect: 'manual' })).status).toBe(200)
    for (const s of [a, b]) s.child.kill('SIGTERM')
    expect(await Promise.all([exitOf(a.child), exitOf(b.child)])).toEqual([0, 0])
    const handles = readFileSync(join(dir, RECORD_FILE), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { handle: string }).handle)
    expect(handles.sort()).toEqual(['10.8888', '10.8888/values-only', '10.9999', '10.9999/paper', '10.SERV/FAKE'])
    expect(a.output() + b.output()).not.toMatch(/could not write/)
  }, 60_000)

  it('two recorders writing into one directory at once: no write fails, no record is lost', async () => {
    const dir = tempDir()
    expect(await twoRecordersAtOnce(dir, 40)).toEqual([])
    expect(readFileSync(join(dir, RECORD_FILE), 'utf8').trimEnd().split('\n')).toHaveLength(80)
  })

  it('a lock left by a writer that died, and two recorders writing at once: it is taken over, no record is lost', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, `.${RECORD_FILE}.lock`), 'a writer that died')
    const anHourAgo = new Date(Date.now() - 3_600_000)
    utimesSync(join(dir, `.${RECORD_FILE}.lock`), anHourAgo, anHourAgo)
    expect(await twoRecordersAtOnce(dir, 20)).toEqual([])
    expect(readFileSync(join(dir, RECORD_FILE), 'utf8').trimEnd().split('\n')).toHaveLength(40)
    expect(readdirSync(dir)).toEqual([RECORD_FILE])
  })

  it('a handle another server fetched again since this one started is written as the other fetched it, not put back as it was', async () => {
    const dir = tempDir()
    const v1 = [str(1, 'URL', 'https://example.org/v1')]
    const v2 = [str(1, 'URL', 'https://example.org/v2')]
    writeFileSync(
      join(dir, RECORD_FILE),
      JSON.stringify({
        handle: '10.1/x',
        values: v1,
        metadata: { 'application/x-bibtex': { contentType: 'application/x-bibtex', body: '@misc{v1}' } }
      }) + '\n'
    )
    const log = { info: () => {}, warn: () => {}, error: () => {} }
    const [a, b] = await Promise.all([openRecorder({ dir, flushDelayMs: 60_000, log }), openRecorder({ dir, flushDelayMs: 60_000, log })])
    b.record('10.1/x', v2)
    b.recordMetadata('10.1/x', 'application/x-bibtex', { contentType: 'application/x-bibtex', body: '@misc{v2}' })
    await b.flush()
    a.record('10.1/y', [str(1, 'URL', 'https://example.org/y')])
    await a.flush()
    a.recordMetadata('10.1/x', 'application/vnd.citationstyles.csl+json', {
      contentType: 'application/vnd.citationstyles.csl+json',
      body: '{}'
    })
    await Promise.all([a.close(), b.close()])
    const lines = readFileSync(join(dir, RECORD_FILE), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { handle: string })
    expect(lines.find((l) => l.handle === '10.1/x')).toEqual({
      handle: '10.1/x',
      values: v2,
      metadata: {
        'application/x-bibtex': { contentType: 'application/x-bibtex', body: '@misc{v2}' },
        'application/vnd.citationstyles.csl+json': { contentType: 'application/vnd.citationstyles.csl+json', body: '{}' }
      }
    })
    expect(lines.map((l) => l.handle).sort()).toEqual(['10.1/x', '10.1/y'])
  })

  it('records that cannot be written at shutdown (another writer holds the lock) are kept in a file of their own, which the log names and a replay reads', async () => {
    const dir = tempDir()
    writeFileSync(
      join(dir, RECORD_FILE),
      urlRecord('10.1/x', 'https://example.org/old') + '\n' + urlRecord('10.1/kept', 'https://example.org/kept') + '\n'
    )
    const logged: Array<{ level: string; msg: string }> = []
    const log = {
      info: (_o: object, msg: string) => {
        logged.push({ level: 'info', msg })
      },
      warn: () => {},
      error: (_o: object, msg: string) => {
        logged.push({ level: 'error', msg })
      }
    }
    const recorder = await openRecorder({ dir, flushDelayMs: 60_000, lockWaitMs: 300, log })
    writeFileSync(join(dir, `.${RECORD_FILE}.lock`), 'another writer, alive') // fresh: not taken over
    recorder.record('10.1/x', [str(1, 'URL', 'https://example.org/new')])
    recorder.record('10.1/y', [str(1, 'URL', 'https://example.org/y')])
    await recorder.close()
    const aside = readdirSync(dir).filter((f) => f !== RECORD_FILE && !f.startsWith('.'))
    expect(aside).toHaveLength(1)
    expect(aside[0]).toMatch(/^recorded\.unwritten-\d+-[0-9a-f]+\.ndjson$/)
    const last = logged.at(-1)
    expect(last?.level).toBe('error')
    expect(last?.msg).toContain(`2 records recorded since are in ${join(dir, aside[0]!)}`)
    expect(logged.map((l) => l.msg).join('\n')).not.toMatch(/stopped recording; \d+ records in \S+$/m)
    // A replay from the directory answers what was recorded, the newer answer winning.
    const replay = await start({
      ...buildConfig(undefined, {}),
      offline: true,
      cacheFile: undefined,
      localStoreDir: dir,
      maxEventLoopDelayMs: 0
    })
    onTestFinished(async () => {
      await replay.close()
    })
    expect((await replay.inject({ url: '/10.1/x' })).headers.location).toBe('https://example.org/new')
    expect((await replay.inject({ url: '/10.1/y' })).headers.location).toBe('https://example.org/y')
    expect((await replay.inject({ url: '/10.1/kept' })).headers.location).toBe('https://example.org/kept')
  })

  it('a record the local store answers while recording is recorded too, with its metadata', async () => {
    const { upstream } = await registry()
    const store = tempDir()
    const dir = tempDir()
    writeFileSync(
      join(store, 'held.ndjson'),
      JSON.stringify({
        handle: '10.7777/held',
        values: [str(1, 'URL', 'https://held.example/')],
        metadata: { 'application/x-bibtex': { contentType: 'application/x-bibtex', body: '@misc{held}' } }
      }) +
        '\n' +
        urlRecord('10.7777/unasked', 'https://unasked.example/') +
        '\n'
    )
    const base: Config = { ...buildConfig(undefined, {}), upstreamUrl: upstream.url, cacheFile: undefined, maxEventLoopDelayMs: 0 }
    const online = await start({ ...base, localStoreDir: store, recordTo: dir })
    expect((await online.inject({ url: '/10.7777/held' })).headers.location).toBe('https://held.example/')
    await online.close()
    const offline = await start({ ...base, offline: true, localStoreDir: dir })
    onTestFinished(async () => {
      await offline.close()
    })
    expect((await offline.inject({ url: '/10.7777/held' })).headers.location).toBe('https://held.example/')
    expect(JSON.parse(readFileSync(join(dir, RECORD_FILE), 'utf8'))).toMatchObject({
      handle: '10.7777/held',
      metadata: { 'application/x-bibtex': { body: '@misc{held}' } }
    })
    // Only what was answered is recorded, not the whole local store.
    expect((await offline.inject({ url: '/10.7777/unasked' })).statusCode).toBe(404)
  })

  it('the log names the directory at start, each write with its count, and the last at shutdown', async () => {
    const { upstream } = await registry()
    const dir = tempDir()
    const server = await startServer({ UPSTREAM_URL: upstream.url, RECORD_TO: dir, DRAIN_DELAY_MS: '0' })
    expect(server.output()).toContain(`RECORD_TO: recording what is fetched into ${join(dir, RECORD_FILE)} (0 records there already)`)
    await fetch(`http://127.0.0.1:${server.port}/10.9999/paper`, { redirect: 'manual' })
    await vi.waitFor(
      () => {
        expect(server.output()).toContain(`RECORD_TO: wrote 3 records to ${join(dir, RECORD_FILE)}`)
      },
      { timeout: 10_000, interval: 50 }
    )
    server.child.kill('SIGTERM')
    expect(await exitOf(server.child)).toBe(0)
    expect(server.output()).toContain(`RECORD_TO: stopped recording; 3 records in ${join(dir, RECORD_FILE)}`)
  }, 60_000)

  it('a recording server whose upstream cannot be reached warns that nothing is being recorded', async () => {
    const dir = tempDir()
    const server = await startServer({ UPSTREAM_URL: 'http://127.0.0.1:9/api/handles', RECORD_TO: dir })
    await vi.waitFor(
      () => {
        expect(server.output()).toContain('RECORD_TO: the upstream cannot be reached, so nothing new is being recorded')
      },
      { timeout: 10_000, interval: 50 }
    )
  }, 60_000)

  it('RECORD_TO with WORKERS other than 1 is refused at start, naming both', () => {
    expect(() => buildConfig(undefined, { RECORD_TO: 'records', WORKERS: '2' })).toThrow(
      /recordTo: RECORD_TO needs WORKERS=1.*got workers 2/
    )
  })
})

/** Two recorders on one directory, each recording and writing `rounds` records at once; the errors they logged. */
async function twoRecordersAtOnce(dir: string, rounds: number): Promise<unknown[]> {
  const errors: unknown[] = []
  const log = {
    info: () => {},
    warn: () => {},
    error: (o: object) => {
      errors.push(o)
    }
  }
  const [a, b] = await Promise.all([openRecorder({ dir, flushDelayMs: 1, log }), openRecorder({ dir, flushDelayMs: 1, log })])
  await Promise.all(
    [a, b].map(async (r, n) => {
      for (let i = 0; i < rounds; i++) {
        r.record(`10.1/${n}-${i}`, [str(1, 'URL', `https://example.org/${n}-${i}`)])
        await r.flush()
      }
    })
  )
  await Promise.all([a.close(), b.close()])
  return errors
}

/** `doi-proxy record` as a user runs it, from the repository. */
async function record(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/command/cli.ts', 'record', '--delay-ms', '0', ...args], {
    cwd: join(import.meta.dirname, '../..'),
    env: { ...process.env, ...env }
  })
  return await ranToEnd(child)
}

describe('doi-proxy record --dois FILE: mirror with the metadata citation tools ask for', () => {
  it('a line that is not a DOI is named with its line number, never asked for, and the exit status is 1', async () => {
    const { upstream } = await registry()
    const dir = tempDir()
    writeFileSync(join(dir, 'dois.txt'), '10.9999/paper\nnot-a-doi\n# a comment\n20.500.1234/handle\n')
    const run = await record([
      '--dois',
      join(dir, 'dois.txt'),
      '--out',
      join(dir, 'out.ndjson'),
      '--upstream',
      upstream.url,
      '--accept',
      'application/x-bibtex'
    ])
    expect(run.stderr).toContain(
      'not a DOI name, line 2: does not start with 10. and a prefix (10.1000/x) or 10/ (a shortDOI) ("not-a-doi"); not asked for'
    )
    expect(run.stderr).toContain('not a DOI name, line 4:')
    expect(run.stdout).toContain('  not DOIs:   2 (refused, not asked for: see above)')
    expect(upstream.count('not-a-doi') + upstream.count('20.500.1234/handle')).toBe(0)
    expect(upstream.count('10.9999/paper')).toBe(1)
    expect(run.code).toBe(1)
  }, 60_000)

  it('records a list of DOIs with their CSL-JSON, BibTeX and citation, and an offline server answers them', async () => {
    const { agency, upstream } = await registry()
    const dir = tempDir()
    const list = join(dir, 'dois.txt')
    writeFileSync(list, '# what the suite cites\n10.9999/paper\n')
    const out = join(dir, 'records', 'list.ndjson')
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/command/cli.ts', 'record', '--dois', list, '--out', out, '--upstream', upstream.url, '--delay-ms', '0'],
      { cwd: join(import.meta.dirname, '../..'), env: { ...process.env, METADATA_HOSTS: agency.host } }
    )
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
    })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(stdout).toMatch(/Metadata \(application\/vnd\.citationstyles\.csl\+json, application\/x-bibtex, text\/x-bibliography\)/)
    expect(code).toBe(0)
    const offline = await start({
      ...buildConfig(undefined, {}),
      offline: true,
      cacheFile: undefined,
      localStoreDir: join(dir, 'records'),
      maxEventLoopDelayMs: 0
    })
    onTestFinished(async () => {
      await offline.close()
    })
    const csl = await offline.inject({ url: '/10.9999/paper', headers: { accept: 'application/vnd.citationstyles.csl+json' } })
    expect(csl.statusCode).toBe(200)
    expect(csl.body).toBe(CSL)
    expect((await offline.inject({ url: '/10.9999/paper', headers: { accept: 'application/x-bibtex' } })).body).toBe(BIBTEX)
  })
})
