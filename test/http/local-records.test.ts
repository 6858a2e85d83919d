import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { overloadEventLoop, setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import type { HandleValue } from '../../src/handle/types.js'

function storeDir(records: Record<string, HandleValue[]>): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-store-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  writeRecords(dir, 'records.ndjson', records)
  return dir
}

function writeRecords(dir: string, name: string, records: Record<string, HandleValue[]>): void {
  writeFileSync(
    join(dir, name),
    Object.entries(records)
      .map(([handle, values]) => JSON.stringify({ handle, values }))
      .join('\n') + '\n'
  )
}

const LOCAL = {
  10.9999: [admin(), str(2, 'HS_SERV', '10.SERV/DATACITE')],
  '10.9999/local': [str(1, 'URL', 'https://library.example/local')],
  '10.9999/loc': [
    str(
      1,
      '10320/loc',
      '<locations><location href="https://a.example/" weight="1"/><location id="uk" href="https://uk.example/" country="gb" weight="0"/></locations>'
    )
  ],
  '10.5555/override': [str(1, 'URL', 'https://library.example/override')]
}

describe('local records (issue 7)', () => {
  it('a local record answers without asking the upstream', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: storeDir(LOCAL), localAuthoritativePrefixes: ['10.9999'] } })
    const res = await app.inject({ url: '/10.9999/local' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://library.example/local')
    expect(upstream.seen).toHaveLength(0)
  })

  it('a local record overrides a DOI of another prefix, whose other DOIs still come from the upstream', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: storeDir(LOCAL), localAuthoritativePrefixes: ['10.9999'] } })
    expect((await app.inject({ url: '/10.5555/override' })).headers.location).toBe('https://library.example/override')
    expect(upstream.count('10.5555/override')).toBe(0)
    expect((await app.inject({ url: '/10.5555/plain' })).headers.location).toBe('http://example.org/plain')
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('a miss under an authoritative prefix is a 404 and never reaches the upstream', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: storeDir(LOCAL), localAuthoritativePrefixes: ['10.9999'] } })
    expect((await app.inject({ url: '/10.9999/absent' })).statusCode).toBe(404)
    expect((await app.inject({ url: '/api/handles/10.9999/absent' })).statusCode).toBe(404)
    expect(upstream.seen).toHaveLength(0)
  })

  it('every route uses the store: values page, 10320/loc, REST API, Which RA?', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: storeDir(LOCAL), localAuthoritativePrefixes: ['10.9999'] } })
    expect((await app.inject({ url: '/10.9999/local?noredirect' })).body).toContain('https://library.example/local')
    expect((await app.inject({ url: '/10.9999/loc?country=GB' })).headers.location).toBe('https://uk.example/')
    expect((await app.inject({ url: '/api/handles/10.9999/local' })).json().values[0].data.value).toBe('https://library.example/local')
    expect((await app.inject({ url: '/doiRA/10.9999/local' })).json()).toEqual([{ DOI: '10.9999/local', RA: 'DataCite' }])
    expect(upstream.seen).toHaveLength(0)
  })

  it('a file changed under the running server is picked up', async () => {
    const dir = storeDir(LOCAL)
    const { app } = await setup({ overrides: { localStoreDir: dir, localAuthoritativePrefixes: ['10.9999'] } })
    expect((await app.inject({ url: '/10.9999/local' })).headers.location).toBe('https://library.example/local')
    writeRecords(dir, 'records.ndjson', { ...LOCAL, '10.9999/local': [str(1, 'URL', 'https://library.example/moved')] })
    await vi.waitFor(
      async () => {
        expect((await app.inject({ url: '/10.9999/local' })).headers.location).toBe('https://library.example/moved')
      },
      { timeout: 5000, interval: 50 }
    )
  })

  it('a bad file does not stop the good ones, nor the server', async () => {
    const dir = storeDir(LOCAL)
    writeFileSync(join(dir, 'broken.json'), '{"handle": "10.9999/x", "values": [')
    const { app } = await setup({ overrides: { localStoreDir: dir, localAuthoritativePrefixes: ['10.9999'] } })
    expect((await app.inject({ url: '/10.9999/local' })).statusCode).toBe(302)
    expect((await app.inject({ url: '/metrics' })).body).toMatch(/doi_proxy_local_records 4/)
  })

  it('a missing store directory stops the start with a message naming the setting', async () => {
    await expect(setup({ overrides: { localStoreDir: '/nonexistent/doi-proxy-store' } })).rejects.toThrow(/localStoreDir/)
  })
})

describe('offline mode (issue 7)', () => {
  it('with the upstream unreachable, the sample store resolves and nothing is asked upstream', async () => {
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    await upstream.close()
    const res = await app.inject({ url: '/10.5555/sample' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://www.doi.org/')
    expect((await app.inject({ url: '/10.5555/sample-alias' })).statusCode).toBe(301)
    expect((await app.inject({ url: '/10.5555/sample-values' })).statusCode).toBe(200)
    expect((await app.inject({ url: '/10.1000/elsewhere' })).statusCode).toBe(404)
    expect(upstream.seen).toHaveLength(0)
  })

  it('a DOI not in the local records gets a page that says so (offline), never that the DOI is incorrect', async () => {
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    const res = await app.inject({ url: '/10.1000/elsewhere' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toMatch(/<h1>DOI Not in This Resolver(&#39;|&#x27;|')s Local Records<\/h1>/)
    expect(res.body).toContain('This resolver is offline')
    expect(res.body).toContain('href="https://doi.org/10.1000/elsewhere"')
    expect(res.body).not.toMatch(/incorrect|cannot be found in the DOI System/)
    expect(upstream.seen).toHaveLength(0)
  })

  it('offline, a busy machine still gives a DOI not in the records its 404, never a load-shedding 503', async () => {
    // Load shedding protects upstream work, and offline there is none: a replay answers the same under load.
    const { app } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records', maxEventLoopDelayMs: 50 } })
    await overloadEventLoop()
    expect(app.isUnderPressure()).toBe(true)
    expect((await app.inject({ url: '/10.1000/elsewhere' })).statusCode).toBe(404)
    expect((await app.inject({ url: '/api/handles/10.1000/elsewhere' })).statusCode).toBe(404)
    const batch = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.1000/elsewhere\n10.5555/sample-values\n'
    })
    expect(batch.statusCode).toBe(200)
    expect(batch.body.trim().split('\n')).toHaveLength(2)
  })

  it('on a busy machine, a batch of local records only is answered, not shed: it needs no upstream work', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: 'config/sample-records', maxEventLoopDelayMs: 50 } })
    await overloadEventLoop()
    expect(app.isUnderPressure()).toBe(true)
    const batch = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.5555/sample\n10.5555/sample-values\n'
    })
    expect(batch.statusCode).toBe(200)
    expect(
      batch.body
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { source: string }).source)
    ).toEqual(['local', 'local'])
    expect(upstream.seen).toHaveLength(0)
  })

  it('the batch API answers a DOI not in the local records registered: null (it may well exist), never registered: false', async () => {
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.1000/182\n10.5555/sample\n'
    })
    const [real, sample] = res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(real).toEqual({
      input: '10.1000/182',
      doi: null,
      registered: null,
      url: null,
      source: 'local',
      status: 404,
      error: expect.stringContaining("not in this resolver's records")
    })
    expect(sample).toEqual(expect.objectContaining({ registered: true, status: 302 }))
    expect((await app.inject({ url: '/metrics' })).body).toContain('doi_proxy_batch_lines_total{answer="unknown"} 1')
    expect(upstream.seen).toHaveLength(0)
  })

  it('a prefix served only locally (LOCAL_AUTHORITATIVE_PREFIXES) still answers registered: false offline: its absence is known', async () => {
    const { app } = await setup({
      overrides: { offline: true, localStoreDir: 'config/sample-records', localAuthoritativePrefixes: ['10.5555'] }
    })
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.5555/absent\n'
    })
    expect(JSON.parse(res.body)).toEqual({ input: '10.5555/absent', doi: null, registered: false, url: null, source: 'local', status: 404 })
  })

  it('Which RA? answers "Unknown" for a DOI not in the local records, as doi.org does for one it cannot look up, never "DOI does not exist"', async () => {
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    const res = await app.inject({ url: '/doiRA/10.1000/182,10.1000,10.5555/sample' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual([
      { DOI: '10.1000/182', status: 'Unknown' },
      { DOI: '10.1000', status: 'Unknown' },
      { DOI: '10.5555/sample', RA: 'Crossref' }
    ])
    expect(upstream.seen).toHaveLength(0)
  })

  it('the REST API says not in the local records with its own responseCode (301, not 100) and a 404', async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    const res = await app.inject({ url: '/api/handles/10.1000/elsewhere' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({
      responseCode: 301,
      message: "Not in this resolver's local records: it is offline and did not ask the DOI System",
      handle: '10.1000/elsewhere'
    })
  })

  it('online, a DOI the upstream does not know is still "DOI Not Found" with responseCode 100', async () => {
    const { app } = await setup({ overrides: { localStoreDir: 'config/sample-records' } })
    expect((await app.inject({ url: '/10.5555/absent' })).body).toContain('cannot be found in the DOI System')
    expect((await app.inject({ url: '/api/handles/10.5555/absent' })).json()).toEqual({ responseCode: 100, handle: '10.5555/absent' })
  })

  it('the default configuration loads the sample store', async () => {
    const { buildConfig } = await import('../../src/config/schema.js')
    const defaults = buildConfig(undefined, {})
    const { app, upstream } = await setup({
      overrides: { localStoreDir: defaults.localStoreDir, localAuthoritativePrefixes: defaults.localAuthoritativePrefixes }
    })
    expect((await app.inject({ url: '/10.5555/sample' })).headers.location).toBe('https://www.doi.org/')
    expect(upstream.seen).toHaveLength(0)
  })
})
