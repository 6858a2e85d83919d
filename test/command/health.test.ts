import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeLandingSite, pages } from '../support/fake-landing.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { urlRecord } from '../support/local-records.js'
import { admin, str } from '../support/records.js'
import { closedPort, doiProxy, ranToEnd, startDoiProxy } from '../support/server-process.js'
import type { Run } from '../support/server-process.js'

// `doi-proxy health` (issue 42, plan §7) run as a user runs it: the real command through tsx, resolving through a
// real fake registry on 127.0.0.1 and looking at real fake landing pages on 127.0.0.2.

describe('doi-proxy health: usage', { timeout: 60_000 }, () => {
  it('with nothing to check, says what to give and exits 2', async () => {
    const r = await doiProxy(['health'], tmpdir())
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('doi-proxy health: nothing to check: give --watch PREFIX')
    expect(r.stdout).toBe('')
  })

  it('is listed by doi-proxy --help', async () => {
    const r = await doiProxy(['--help'], tmpdir())
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('doi-proxy health --watch PREFIX | --list FILE')
  })
})

describe('doi-proxy health: end to end', { timeout: 120_000 }, () => {
  let dir: string
  let site: FakeLandingSite
  let upstream: FakeUpstream
  let env: Record<string, string>

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-health-'))
    site = await FakeLandingSite.start({
      pages: {
        '/alive': pages.citationDoi('10.5555/alive'),
        '/gone': pages.status(404),
        '/local': pages.status(410),
        '/slow': pages.slow(30_000, pages.citationDoi('10.5555/slow'))
      }
    })
    upstream = await FakeUpstream.start({
      '10.5555/alive': [str(1, 'URL', `${site.origin()}/alive`), admin()],
      '10.5555/gone': [str(1, 'URL', `${site.origin()}/gone`), admin()],
      '10.5555/slow': [str(1, 'URL', `${site.origin()}/slow`), admin()]
    })
    env = {
      UPSTREAM_URL: upstream.url,
      // The fake pages are on loopback; no pause between requests to one host, so the test waits for nothing.
      LANDING_ALLOW_PRIVATE: '127.0.0.0/8',
      LANDING_HOST_DELAY_MS: '0',
      LOCAL_STORE_DIR: '',
      HEALTH_CONFIRM: '3'
    }
    await writeFile(join(dir, 'alive.txt'), '# ours\n10.5555/alive\n')
    await writeFile(join(dir, 'both.txt'), 'doi:10.5555/alive\nhttps://doi.org/10.5555/gone\n')
  })
  afterEach(async () => {
    await site.close()
    await upstream.close()
    await rm(dir, { recursive: true, force: true })
  })

  const visits = (path: string): number => site.paths.filter((p) => p === path).length

  it('Ctrl-C drops the checks in flight and says so: exit 130, not a minute later', async () => {
    await writeFile(join(dir, 'slow.txt'), '10.5555/slow\n')
    const child = startDoiProxy(['health', '--list', 'slow.txt'], dir, env)
    const started = performance.now()
    while (visits('/slow') === 0) {
      if (performance.now() - started > 30_000) throw new Error('the slow page was never asked for')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    child.kill('SIGINT')
    const r = await ranToEnd(child)
    expect(r.stderr).toContain('stopping: the checks in flight are dropped (Ctrl-C again to quit now)')
    expect(r.code).toBe(130)
    expect(performance.now() - started).toBeLessThan(25_000)
  })

  it('every DOI alive: one line per prefix, exit 0', async () => {
    const r = await doiProxy(['health', '--list', 'alive.txt'], dir, env)
    expect(r.stderr).toContain('doi-proxy health: 1 DOI, 0 confirmed broken')
    expect(r.code).toBe(0)
    expect(r.stdout).toBe('10.5555  1 DOI: 1 alive (0 newly broken this week)\n')
    expect(visits('/alive')).toBe(1)
  })

  it('a dead page is checked HEALTH_CONFIRM times (--confirm-gap 0), then reported broken: exit 1', async () => {
    const r = await doiProxy(['health', '--list', 'both.txt', '--confirm-gap', '0'], dir, env)
    expect(r.code).toBe(1)
    const today = new Date().toISOString().slice(0, 10)
    const [line, summary, ...rest] = r.stdout.split('\n')
    expect(line).toMatch(new RegExp(`^10\\.5555/gone  dead since ${today}: HTTP 404 at ${site.origin().replace(/\./g, '\\.')}/gone\\b`))
    expect(summary).toBe('10.5555  2 DOIs: 1 alive, 1 dead (1 newly broken this week)')
    expect(rest).toEqual([''])
    expect(r.stderr).toContain('2 DOIs, 1 confirmed broken')
    expect(visits('/gone')).toBe(3)
    expect(visits('/alive')).toBe(1)
  })

  it('--confirm-gap spaces the confirming checks', async () => {
    const r = await doiProxy(['health', '--list', 'both.txt', '--confirm-gap', '1'], dir, { ...env, HEALTH_CONFIRM: '2' })
    expect(r.code).toBe(1)
    const times = site.seen.filter((s) => s.path === '/gone').map((s) => s.at)
    expect(times).toHaveLength(2)
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(1000)
  })

  it('--format csv --out FILE: the CSV of /health.csv in the file, nothing on standard output', async () => {
    const r = await doiProxy(['health', '--list', 'both.txt', '--confirm-gap', '0', '--format', 'csv', '--out', 'broken.csv'], dir, env)
    expect(r.code).toBe(1)
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain(`the report is in ${join(dir, 'broken.csv')}`)
    const csv = await readFile(join(dir, 'broken.csv'), 'utf8')
    expect(csv).toMatch(
      new RegExp(
        `^doi,verdict,since,url,evidence\\r\\n10\\.5555/gone,dead,\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z,${site.origin().replace(/\./g, '\\.')}/gone,[^\\r\\n]*\\r\\n$`
      )
    )
  })

  it('--format json: the shape of /health.json', async () => {
    const r = await doiProxy(['health', '--list', 'both.txt', '--confirm-gap', '0', '--format', 'json'], dir, env)
    expect(r.code).toBe(1)
    const json = JSON.parse(r.stdout) as {
      settings: Record<string, number>
      prefixes: Array<{ prefix: string; counts: Record<string, number> }>
      broken: Array<Record<string, unknown>>
    }
    expect(json.settings).toMatchObject({ confirm: 3, confirmGapSeconds: 0 })
    expect(json.prefixes).toEqual([expect.objectContaining({ prefix: '10.5555', counts: expect.objectContaining({ alive: 1, dead: 1 }) })])
    expect(json.broken).toEqual([
      expect.objectContaining({
        doi: '10.5555/gone',
        verdict: 'dead',
        status: 404,
        url: `${site.origin()}/gone`,
        registeredUrl: `${site.origin()}/gone`
      })
    ])
  })

  it('--format html: the /health page, no script, its links to the server at PUBLIC_BASE_URL', async () => {
    const r = await doiProxy(['health', '--list', 'both.txt', '--confirm-gap', '0', '--format', 'html'], dir, {
      ...env,
      PUBLIC_BASE_URL: 'https://doi.example.org'
    })
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^<!doctype html>/)
    expect(r.stdout).toContain('<h1>DOI health</h1>')
    expect(r.stdout).toContain('href="https://doi.example.org/health?doi=10.5555%2Fgone"')
    expect(r.stdout).not.toContain('<script')
  })

  it('--watch: the local store’s DOIs of that prefix, answered by the store (the registry never asked), other prefixes left out', async () => {
    await mkdir(join(dir, 'store'))
    await writeFile(
      join(dir, 'store', 'ours.ndjson'),
      `${urlRecord('10.5555/local', `${site.origin()}/local`)}\n${urlRecord('10.6666/theirs', `${site.origin()}/alive`)}\n`
    )
    const r = await doiProxy(['health', '--watch', '10.5555', '--confirm-gap', '0'], dir, { ...env, LOCAL_STORE_DIR: 'store' })
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^10\.5555\/local {2}dead since .*: HTTP 410 at /)
    expect(r.stdout).not.toContain('10.6666')
    expect(upstream.count('10.5555/local')).toBe(0)
    expect(visits('/local')).toBe(3)
  })

  it('--watch finding no DOI names where it looked, exit 2', async () => {
    await mkdir(join(dir, 'store'))
    await writeFile(join(dir, 'store', 'ours.ndjson'), `${urlRecord('10.5555/local', `${site.origin()}/local`)}\n`)
    const r = await doiProxy(['health', '--watch', '10.9999', '--db', 'h.sqlite'], dir, { ...env, LOCAL_STORE_DIR: 'store' })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(
      `doi-proxy health: no DOI to check: none of 10.9999 in the local store (LOCAL_STORE_DIR ${JSON.stringify(join(dir, 'store'))}), nor in --db ${JSON.stringify(join(dir, 'h.sqlite'))}`
    )
    expect(site.seen).toEqual([])
  })

  it('--db keeps the history: a second run finds the DOI still broken since the first', async () => {
    const args = ['health', '--list', 'both.txt', '--confirm-gap', '0', '--format', 'json', '--db', 'health.sqlite']
    const first = await doiProxy(args, dir, env)
    expect(first.code).toBe(1)
    const second = await doiProxy(args, dir, env)
    expect(second.code).toBe(1)
    const since = (r: Run): unknown => (JSON.parse(r.stdout) as { broken: Array<{ since: string }> }).broken[0]?.since
    expect(since(second)).toBe(since(first))
    // Three to confirm it, then one: a DOI already confirmed broken needs no confirming again.
    expect(visits('/gone')).toBe(4)
  })

  it('an upstream that cannot be reached: said with why, exit 69', async () => {
    const port = await closedPort()
    const r = await doiProxy(['health', '--list', 'both.txt', '--confirm-gap', '0'], dir, {
      ...env,
      UPSTREAM_URL: `http://127.0.0.1:${port}/api/handles`
    })
    expect(r.code).toBe(69)
    expect(r.stderr).toContain(`doi-proxy health: cannot reach the upstream http://127.0.0.1:${port}/api/handles: connection refused`)
    expect(site.seen).toEqual([])
  })
})
