import { spawn } from 'node:child_process'
import { describe, expect, it, onTestFinished } from 'vitest'
import { FakeUpstream } from './support/fake-upstream.js'
import { PROBE_RECORDS } from './support/records.js'
import { exitOf, startServer } from './support/server-process.js'

// src/main.ts as users run it: a real process, its environment, its signals.

describe('the server process', () => {
  it('starts, resolves, logs JSON with a request id, and on SIGTERM finishes the in-flight request before exiting 0', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url, LOG_REQUESTS: 'true' })
    upstream.mode = { kind: 'slow', delayMs: 400 }
    const inflight = fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual', headers: { 'x-request-id': 'trace-42' } })
    await new Promise((resolve) => setTimeout(resolve, 100))
    child.kill('SIGTERM')
    const res = await inflight
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('http://example.org/plain')
    expect(await exitOf(child)).toBe(0)
    const lines = output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.some((l) => l.reqId === 'trace-42' && l.msg === 'request' && l.status === 302)).toBe(true)
    expect(lines.some((l) => l.msg === 'shutting down: finishing in-flight requests')).toBe(true)
  })

  it('with WORKERS=2 two worker processes serve the same port and all stop on SIGTERM', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url, WORKERS: '2' })
    const res = await fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual' })
    expect(res.status).toBe(302)
    const listeners = (): Set<number> => new Set(output().split('\n').filter((l) => l.includes('listening at')).map((l) => (JSON.parse(l) as { pid: number }).pid))
    // Let the second worker start too (slower on a busy machine).
    for (let i = 0; i < 100 && listeners().size < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(listeners().size).toBe(2)
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
  })

  it('refuses a bad setting at start with a message naming it, exit code 78', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, PORT: 'eighty' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (c: Buffer) => { err += c.toString() })
    expect(await exitOf(child)).toBe(78)
    expect(err).toContain('invalid setting port (env PORT): expected an integer, got "eighty"')
  })

  it('refuses a missing local store directory at start, exit code 78', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, PORT: '0', LOCAL_STORE_DIR: '/nonexistent/store' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (c: Buffer) => { err += c.toString() })
    expect(await exitOf(child)).toBe(78)
    expect(err).toContain('localStoreDir')
  })

  it('never logs the client\'s cookies or authorization, on the access line nor on the failure line', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url, LOG_LEVEL: 'info', LOG_REQUESTS: 'true', UPSTREAM_RETRIES: '0' })
    const secrets = { cookie: 'session=s3cret', authorization: 'Bearer t0ken' }
    const ok = await fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual', headers: { ...secrets, 'x-request-id': 'secret-ok' } })
    expect(ok.status).toBe(302)
    // An upstream failure: logged as a warning or an error with the request id, whatever else it carries.
    upstream.mode = { kind: 'status', status: 500 }
    const failed = await fetch(`http://127.0.0.1:${port}/10.5555/multi`, { redirect: 'manual', headers: { ...secrets, 'x-request-id': 'secret-failed' } })
    expect(failed.status).toBeGreaterThanOrEqual(500)
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
    const lines = output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
    // The requests that carried the secrets were logged: an access line for each, a warning or error for the failure.
    expect(lines.filter((l) => l.msg === 'request').map((l) => l.reqId)).toEqual(['secret-ok', 'secret-failed'])
    expect(lines.some((l) => l.reqId === 'secret-failed' && l.msg !== 'request' && Number(l.level) >= 40)).toBe(true)
    expect(output()).not.toContain('s3cret')
    expect(output()).not.toContain('t0ken')
  })
})
