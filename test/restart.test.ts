import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { defaultWorkers, cpusFromCgroup } from '../src/main/cpu-quota.js'
import { FakeUpstream } from './support/fake-upstream.js'
import { PROBE_RECORDS } from './support/records.js'
import { exitOf, startServer, workersListening } from './support/server-process.js'
import type { Started } from './support/server-process.js'
import { TestRedis } from './support/redis.js'

// src/main.ts as operators run it: kill -TERM, then a restart (behaviour.md §11), and its start-up choices.

// Real processes, two of them with WORKERS=2: a loaded machine can take several times the seconds they take here.
describe('a restart', { timeout: 60_000 }, () => {
  it('after kill -TERM and a restart with the upstream down, every DOI cached before still resolves', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-restart-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const env = { UPSTREAM_URL: upstream.url, CACHE_FILE: join(dir, 'cache.snapshot'), UPSTREAM_RETRIES: '0' }
    const dois = ['10.5555/plain', '10.5555/multi', '10.5555/UPPER']
    const first = await startServer(env)
    for (const doi of dois) expect((await fetch(`http://127.0.0.1:${first.port}/${doi}`, { redirect: 'manual' })).status).toBe(302)
    first.child.kill('SIGTERM')
    expect(await exitOf(first.child)).toBe(0)

    upstream.mode = { kind: 'status', status: 503 }
    const second = await startServer(env)
    for (const doi of dois) {
      const res = await fetch(`http://127.0.0.1:${second.port}/${doi}`, { redirect: 'manual' })
      expect(res.status).toBe(302)
      expect(res.headers.get('x-cache')).toBe('HIT')
    }
    expect((await fetch(`http://127.0.0.1:${second.port}/10.5555/never-seen`, { redirect: 'manual' })).status).toBe(502)
  })

  it('the cache is written at shutdown even when a request stuck on the upstream outlasts the grace period', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-restart-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const env = { UPSTREAM_URL: upstream.url, CACHE_FILE: join(dir, 'cache.snapshot'), UPSTREAM_RETRIES: '0', SHUTDOWN_GRACE_MS: '1000' }
    const first = await startServer(env)
    expect((await fetch(`http://127.0.0.1:${first.port}/10.5555/plain`, { redirect: 'manual' })).status).toBe(302)
    upstream.mode = { kind: 'hang' }
    fetch(`http://127.0.0.1:${first.port}/10.5555/stuck`).catch(() => {})
    await new Promise((resolve) => setTimeout(resolve, 100))
    first.child.kill('SIGTERM')
    await exitOf(first.child) // the grace period ends it, whatever its exit code

    upstream.mode = { kind: 'status', status: 503 }
    const second = await startServer(env)
    const res = await fetch(`http://127.0.0.1:${second.port}/10.5555/plain`, { redirect: 'manual' })
    expect(res.status).toBe(302)
    expect(res.headers.get('x-cache')).toBe('HIT')
  })

  /** Two workers with a cache file in a directory of their own, both listening. */
  async function twoWorkers(opts: { ownProcessGroup?: boolean } = {}): Promise<Started & { file: string }> {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-workers-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'cache.snapshot')
    const started = await startServer({ UPSTREAM_URL: upstream.url, CACHE_FILE: file, WORKERS: '2' }, opts)
    await workersListening(started, 2)
    return { ...started, file }
  }

  it('with WORKERS=2 each worker writes its own cache file at shutdown', async () => {
    const { child, port, file } = await twoWorkers()
    expect((await fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual' })).status).toBe(302)
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
    expect(existsSync(`${file}.1`)).toBe(true)
    expect(existsSync(`${file}.2`)).toBe(true)
    expect(existsSync(file)).toBe(false)
  })

  it("with WORKERS=2, a SIGTERM to every process at once (systemd's default, Ctrl-C) still drains: each worker writes its file", async () => {
    const { child, output, file } = await twoWorkers({ ownProcessGroup: true })
    onTestFinished(() => {
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL')
      } catch {}
    })
    process.kill(-(child.pid ?? 0), 'SIGTERM')
    expect(await exitOf(child)).toBe(0)
    expect(output()).not.toContain('second SIGTERM')
    expect(existsSync(`${file}.1`)).toBe(true)
    expect(existsSync(`${file}.2`)).toBe(true)
  })

  it('with WORKERS=2 and no Redis, after a restart with the upstream down, every worker answers what either had cached', async () => {
    // Two starts of two workers each, and a drain between: about 6 s on this 2-core machine when quiet.
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-restart-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const env = { UPSTREAM_URL: upstream.url, CACHE_FILE: join(dir, 'cache.snapshot'), WORKERS: '2', UPSTREAM_RETRIES: '0' }
    const first = await startServer(env)
    await workersListening(first, 2)
    expect(
      (await fetch(`http://127.0.0.1:${first.port}/10.5555/plain`, { redirect: 'manual', headers: { connection: 'close' } })).status
    ).toBe(302)
    first.child.kill('SIGTERM')
    expect(await exitOf(first.child)).toBe(0)

    upstream.mode = { kind: 'status', status: 503 }
    const second = await startServer(env)
    await workersListening(second, 2)
    for (let i = 0; i < 6; i++) {
      // A new connection each time, so the primary hands the requests to both workers in turn.
      const res = await fetch(`http://127.0.0.1:${second.port}/10.5555/plain`, { redirect: 'manual', headers: { connection: 'close' } })
      expect(res.status).toBe(302)
    }
  }, 60_000)

  it('with WORKERS=2 and REDIS_URL the workers share one cache: a DOI asked again and again is fetched once', async () => {
    const redis = await TestRedis.start()
    onTestFinished(() => redis.close())
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { port, output } = await startServer({ UPSTREAM_URL: upstream.url, CACHE_FILE: '', WORKERS: '2', REDIS_URL: redis.url })
    await workersListening({ output }, 2)
    for (let i = 0; i < 10; i++) {
      // A new connection each time, so the primary hands the requests to both workers in turn.
      const res = await fetch(`http://127.0.0.1:${port}/10.5555/multi`, { redirect: 'manual', headers: { connection: 'close' } })
      expect(res.status).toBe(302)
    }
    expect(upstream.count('10.5555/multi')).toBe(1)
  })

  it('warns at start when CONTACT_EMAIL is empty and the upstream is doi.org', async () => {
    const { output } = await startServer({ CONTACT_EMAIL: '', UPSTREAM_URL: 'https://doi.org/api/handles', CACHE_FILE: '' })
    await saidReady(output)
    expect(output()).toMatch(/"level":40[^\n]*CONTACT_EMAIL is empty/)
  })

  it('says nothing about CONTACT_EMAIL for another upstream', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { output } = await startServer({ CONTACT_EMAIL: '', UPSTREAM_URL: upstream.url, CACHE_FILE: '' })
    await saidReady(output)
    expect(output()).not.toContain('CONTACT_EMAIL')
  })
})

/** The warning comes once the server listens, before its "ready" line: wait for that line. */
async function saidReady(output: () => string): Promise<void> {
  for (let i = 0; i < 600 && !output().includes('doi-proxy is ready'); i++) await new Promise((resolve) => setTimeout(resolve, 20))
  expect(output()).toContain('doi-proxy is ready')
}

describe('WORKERS=0 in a container', () => {
  it("starts as many workers as the container's CPU quota allows, not the host's cores", () => {
    expect(defaultWorkers('200000 100000\n', 64)).toBe(2)
    expect(defaultWorkers('150000 100000\n', 64)).toBe(1)
    expect(defaultWorkers('50000 100000\n', 64)).toBe(1)
  })

  it('uses the cores when there is no quota or no cgroup v2 file', () => {
    expect(defaultWorkers('max 100000\n', 8)).toBe(8)
    expect(defaultWorkers(undefined, 8)).toBe(8)
    expect(defaultWorkers('garbage', 8)).toBe(8)
    expect(cpusFromCgroup('0 100000')).toBeUndefined()
  })

  it('never starts more workers than the cores it may run on', () => {
    expect(defaultWorkers('800000 100000', 2)).toBe(2)
  })
})
