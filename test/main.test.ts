import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parse } from 'yaml'
import { FakeUpstream } from './support/fake-upstream.js'
import { evaluate, parseScrape } from './support/promql.js'
import type { Scrape } from './support/promql.js'
import { PROBE_RECORDS } from './support/records.js'
import { findOnPath } from './support/test-tools.js'
import { exitOf, startServer, workersListening } from './support/server-process.js'

// src/main.ts as users run it: a real process, its environment, its signals.

// Real processes: a loaded machine can take several times the seconds they take here.
describe('the server process', { timeout: 60_000 }, () => {
  it('starts, resolves, logs JSON with a request id, and on SIGTERM finishes the in-flight request before exiting 0', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url, LOG_REQUESTS: 'true' })
    upstream.mode = { kind: 'slow', delayMs: 400 }
    const inflight = fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual', headers: { 'x-request-id': 'trace-42' } })
    // In flight: the upstream has it (and holds it 400 ms). A fixed sleep could signal before the server took it.
    for (let i = 0; i < 200 && upstream.count('10.5555/plain') === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(upstream.count('10.5555/plain')).toBe(1)
    child.kill('SIGTERM')
    const res = await inflight
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('http://example.org/plain')
    expect(await exitOf(child)).toBe(0)
    const lines = output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.some((l) => l.reqId === 'trace-42' && l.msg === 'request' && l.status === 302)).toBe(true)
    expect(lines.some((l) => l.msg === 'shutting down: finishing in-flight requests')).toBe(true)
  })

  // A terminal's Ctrl-C signals the whole process group, and `npm start` passes it on to the server again.
  it('the same SIGINT twice within a moment (Ctrl-C under npm) is one: the in-flight request is answered and the exit is 0', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url })
    upstream.mode = { kind: 'slow', delayMs: 600 }
    const inflight = fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual' })
    for (let i = 0; i < 200 && upstream.count('10.5555/plain') === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    // The terminal's, then npm's a moment later (both at once, the kernel would deliver one).
    child.kill('SIGINT')
    await new Promise((resolve) => setTimeout(resolve, 50))
    child.kill('SIGINT')
    expect((await inflight).status).toBe(302)
    expect(await exitOf(child)).toBe(0)
    expect(output()).toContain('"signal":"SIGINT","msg":"shutting down: finishing in-flight requests"')
  })

  it('a second signal well after the first exits at once, without waiting for the drain', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({
      UPSTREAM_URL: upstream.url,
      SHUTDOWN_GRACE_MS: '30000',
      UPSTREAM_TIMEOUT_MS: '30000'
    })
    upstream.mode = { kind: 'slow', delayMs: 20_000 }
    fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual' }).catch(() => {})
    for (let i = 0; i < 200 && upstream.count('10.5555/plain') === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const second = performance.now()
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(1)
    expect(performance.now() - second).toBeLessThan(5000)
    expect(output()).toContain('a second signal: exiting at once')
  })

  it('with WORKERS=2 two worker processes serve the same port and all stop on SIGTERM', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url, WORKERS: '2' })
    const res = await fetch(`http://127.0.0.1:${port}/10.5555/plain`, { redirect: 'manual' })
    expect(res.status).toBe(302)
    // Let the second worker start too (slower on a busy machine).
    await workersListening({ output }, 2)
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
  })

  it('with WORKERS=2 the host keeps to UPSTREAM_MAX_CONCURRENT: each worker has half', async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    // Loopback is one client: trusted, so only the upstream bound holds the misses back.
    const { child, port, output } = await startServer({
      UPSTREAM_URL: upstream.url,
      WORKERS: '2',
      UPSTREAM_MAX_CONCURRENT: '4',
      TRUSTED_NETWORKS: '127.0.0.0/8'
    })
    await workersListening({ output }, 2)
    // Each worker's probe of the upstream at start is not a lookup: both done before counting starts.
    for (let i = 0; i < 600 && upstream.count('0.NA/10') < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(upstream.count('0.NA/10')).toBe(2)
    upstream.peakInFlight = 0
    upstream.mode = { kind: 'slow', delayMs: 300 }
    // Sixteen misses at once, each on a connection of its own: the cluster hands them to both workers.
    const statuses = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const res = await fetch(`http://127.0.0.1:${port}/10.5555/absent-${i}`, { redirect: 'manual', headers: { connection: 'close' } })
        await res.arrayBuffer()
        return res.status
      })
    )
    expect(statuses).toEqual(Array(16).fill(404))
    expect(upstream.peakInFlight).toBeGreaterThan(1)
    expect(upstream.peakInFlight).toBeLessThanOrEqual(4)
    const started = output()
      .split('\n')
      .find((l) => l.includes('started the workers'))
    expect(JSON.parse(started ?? '{}')).toMatchObject({ workers: 2, each: { upstreamMaxConcurrent: 2 } })
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
  })

  it("with WORKERS=2 every scrape of /metrics holds every worker's series, whichever worker answers it", async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({ UPSTREAM_URL: upstream.url, WORKERS: '2' })
    await workersListening({ output }, 2)
    // Each request on a connection of its own: the cluster hands them to both workers in turn.
    const get = async (path: string): Promise<Response> =>
      await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual', headers: { connection: 'close' } })
    for (let i = 0; i < 10; i++) expect((await get('/10.5555/plain')).status).toBe(302)
    // Each worker's own series, by its number: the host's count is their sum (Prometheus: sum by …).
    const redirects = async (): Promise<Record<string, number>> => {
      const text = await (await get('/metrics')).text()
      return Object.fromEntries(
        [...text.matchAll(/^doi_proxy_resolutions_total\{outcome="redirect",worker="(\d+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])])
      )
    }
    for (let scrape = 0; scrape < 4; scrape++) {
      const byWorker = await redirects()
      expect(Object.keys(byWorker).sort()).toEqual(['1', '2'])
      expect(Object.values(byWorker).reduce((a, b) => a + b, 0)).toBe(10)
    }
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
  })

  it("with WORKERS=2 and the upstream unreachable, each worker's scrape reads 1 (not their sum), DoiProxyUpstreamUnreachable holds, and /status says whose figures it shows", async () => {
    // A closed port: every connection refused.
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const upstreamPort = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const { child, port, output } = await startServer({
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      WORKERS: '2',
      UPSTREAM_RETRIES: '0'
    })
    await workersListening({ output }, 2)
    const get = async (path: string): Promise<Response> =>
      await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual', headers: { connection: 'close' } })
    const scrape = async (): Promise<Scrape> => parseScrape(await (await get('/metrics')).text(), Date.now())
    const unreachable = (s: Scrape): Array<{ labels: Record<string, string>; value: number }> =>
      s.series.get('doi_proxy_upstream_unreachable') ?? []
    let seen = await scrape()
    // Lookups, each on a connection of its own, until both workers have found the upstream unreachable.
    for (let n = 0; unreachable(seen).filter((s) => s.value !== 0).length < 2 && n < 200; n++) {
      await (await get(`/10.5555/lost-${n}`)).arrayBuffer()
      seen = await scrape()
    }
    expect(
      unreachable(seen)
        .map((s) => [s.labels.worker, s.value])
        .sort()
    ).toEqual([
      ['1', 1],
      ['2', 1]
    ])
    const rules = (
      parse(readFileSync(new URL('../deploy/prometheus/alerts.yml', import.meta.url), 'utf8')) as {
        groups: Array<{ rules: Array<{ alert: string; expr: string }> }>
      }
    ).groups.flatMap((g) => g.rules)
    const rule = rules.find((r) => r.alert === 'DoiProxyUpstreamUnreachable')
    expect(evaluate(rule?.expr ?? '', seen, seen)).toEqual([{ labels: {}, value: 1 }])
    // /status is the answering worker's own figures, and says so.
    const status = (await (await get('/status.json')).json()) as { worker: { index: number; of: number } | null }
    expect([1, 2]).toContain(status.worker?.index)
    expect(status.worker?.of).toBe(2)
    expect(await (await get('/status')).text()).toMatch(
      /These are the figures of worker [12] of 2 \(WORKERS\), the process that answered this request/
    )
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
  })

  it('refuses a bad setting at start with a message naming it, exit code 78', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, PORT: 'eighty' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let err = ''
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString()
    })
    expect(await exitOf(child)).toBe(78)
    expect(err).toContain('invalid setting port (env PORT): expected an integer, got "eighty"')
  })

  it('refuses a missing local store directory at start, exit code 78', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, PORT: '0', LOCAL_STORE_DIR: '/nonexistent/store' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let err = ''
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString()
    })
    expect(await exitOf(child)).toBe(78)
    expect(err).toContain('localStoreDir')
  })

  it("never logs the client's cookies or authorization, on the access line nor on the failure line", async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { child, port, output } = await startServer({
      UPSTREAM_URL: upstream.url,
      LOG_LEVEL: 'info',
      LOG_REQUESTS: 'true',
      UPSTREAM_RETRIES: '0'
    })
    const secrets = { cookie: 'session=s3cret', authorization: 'Bearer t0ken' }
    const ok = await fetch(`http://127.0.0.1:${port}/10.5555/plain`, {
      redirect: 'manual',
      headers: { ...secrets, 'x-request-id': 'secret-ok' }
    })
    expect(ok.status).toBe(302)
    // An upstream failure: logged as a warning or an error with the request id, whatever else it carries.
    upstream.mode = { kind: 'status', status: 500 }
    const failed = await fetch(`http://127.0.0.1:${port}/10.5555/multi`, {
      redirect: 'manual',
      headers: { ...secrets, 'x-request-id': 'secret-failed' }
    })
    expect(failed.status).toBeGreaterThanOrEqual(500)
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
    const lines = output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    // The requests that carried the secrets were logged: an access line for each, a warning or error for the failure.
    expect(lines.filter((l) => l.msg === 'request').map((l) => l.reqId)).toEqual(['secret-ok', 'secret-failed'])
    expect(lines.some((l) => l.reqId === 'secret-failed' && l.msg !== 'request' && Number(l.level) >= 40)).toBe(true)
    expect(output()).not.toContain('s3cret')
    expect(output()).not.toContain('t0ken')
  })

  it('LOG_FORMAT=pretty writes readable lines for a person at a terminal, not JSON', async () => {
    const { child, output } = await startServer({ LOG_FORMAT: 'pretty' })
    child.kill('SIGTERM')
    expect(await exitOf(child)).toBe(0)
    const lines = output()
      .split('\n')
      .filter((l) => l !== '')
    expect(lines.some((l) => /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: doi-proxy is ready$/.test(l))).toBe(true)
    expect(lines.filter((l) => l.startsWith('{'))).toEqual([])
  })

  // util-linux's `script` gives the process a terminal, as a person running `npm start` has.
  it.runIf(findOnPath(['script']) !== undefined)(
    'by default, on a terminal, the lines are readable; through a pipe they are JSON (the tests above)',
    async () => {
      // The server runs in a session of its own that `script` makes, so killing `script` leaves it running
      // (on a terminal that is gone): it says its pid first, and is killed by it.
      const command = `echo "server pid $$"; exec ${process.execPath} --import tsx src/main.ts`
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        env: {
          ...withoutLogFormat(process.env),
          HOST: '127.0.0.1',
          PORT: '0',
          LOCAL_STORE_DIR: '',
          CACHE_FILE: '',
          CONTACT_EMAIL: 'ops@example.org'
        },
        stdio: ['pipe', 'pipe', 'pipe']
      })
      let output = ''
      onTestFinished(() => {
        const pid = /server pid (\d+)/.exec(output)?.[1]
        if (pid !== undefined) {
          try {
            process.kill(Number(pid), 'SIGKILL')
          } catch {}
        }
        child.kill('SIGKILL')
      })
      child.stdout.on('data', (c: Buffer) => {
        output += c.toString()
      })
      for (let i = 0; i < 600 && !output.includes('doi-proxy is ready'); i++) await new Promise((resolve) => setTimeout(resolve, 50))
      // Colours on a terminal; without them the line reads "[hh:mm:ss.mmm] INFO: doi-proxy is ready".
      const plain = output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
      expect(plain).toMatch(/\[\d\d:\d\d:\d\d\.\d{3}\] INFO: doi-proxy is ready/)
      expect(plain).not.toContain('{"level"')
    },
    40_000
  )

  describe('a server that cannot listen says why in one line naming HOST and PORT, exit code 78', () => {
    /** src/main.ts with `env` (and `uid`), run until it exits: its exit code and everything it wrote. */
    async function failedStart(env: Record<string, string>, uid?: number): Promise<{ code: number | null; output: string }> {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        env: { ...process.env, LOCAL_STORE_DIR: '', CACHE_FILE: '', CONTACT_EMAIL: 'ops@example.org', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(uid === undefined ? {} : { uid, gid: uid })
      })
      onTestFinished(() => {
        child.kill('SIGKILL')
      })
      let output = ''
      child.stdout.on('data', (c: Buffer) => {
        output += c.toString()
      })
      child.stderr.on('data', (c: Buffer) => {
        output += c.toString()
      })
      return { code: await exitOf(child), output }
    }
    const lines = (output: string): string[] => output.split('\n').filter((l) => l !== '')

    it('a port another program uses already (EADDRINUSE)', async () => {
      const other = createServer()
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
      onTestFinished(() => {
        other.close()
      })
      const { port } = other.address() as AddressInfo
      const { code, output } = await failedStart({ HOST: '127.0.0.1', PORT: String(port) })
      expect(code).toBe(78)
      expect(lines(output)).toEqual([
        `doi-proxy: cannot listen on HOST=127.0.0.1 PORT=${port}: another program uses this port already (EADDRINUSE); stop it or choose another PORT`
      ])
    })

    it('a HOST that is no address and no name (999.1.1.1)', async () => {
      const { code, output } = await failedStart({ HOST: '999.1.1.1', PORT: '0' })
      expect(code).toBe(78)
      expect(lines(output)).toHaveLength(1)
      expect(output).toMatch(
        /^doi-proxy: cannot listen on HOST=999\.1\.1\.1 PORT=0: HOST is neither an IP address nor a name that resolves here \((ENOTFOUND|EAI_AGAIN)\)/
      )
    })

    it('a HOST that is not an address of this machine (EADDRNOTAVAIL)', async () => {
      const { code, output } = await failedStart({ HOST: '192.0.2.1', PORT: '0' }) // TEST-NET-1: never ours
      expect(code).toBe(78)
      expect(lines(output)).toEqual([
        'doi-proxy: cannot listen on HOST=192.0.2.1 PORT=0: HOST is not an address of this machine (EADDRNOTAVAIL); use one of its addresses, 0.0.0.0 (all) or 127.0.0.1 (this machine only)'
      ])
    })

    // Only root can start a process as another user; as any other user a low port is refused anyway,
    // unless the kernel lets everyone bind low ports (Docker sets ip_unprivileged_port_start to 0).
    it.skipIf(unprivilegedPortStart() <= 1023)('a port below 1024 without the right to bind it (EACCES)', async () => {
      const asRoot = process.getuid?.() === 0
      const { code, output } = await failedStart({ HOST: '127.0.0.1', PORT: '1023' }, asRoot ? 65534 : undefined)
      expect(code).toBe(78)
      expect(lines(output)).toEqual([
        'doi-proxy: cannot listen on HOST=127.0.0.1 PORT=1023: permission denied (EACCES); a PORT below 1024 needs root or CAP_NET_BIND_SERVICE: use 1024 or above behind a reverse proxy'
      ])
    })

    it('with WORKERS=2 too: the same one line, from the primary, which starts no worker', async () => {
      const other = createServer()
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
      onTestFinished(() => {
        other.close()
      })
      const { port } = other.address() as AddressInfo
      const { code, output } = await failedStart({ HOST: '127.0.0.1', PORT: String(port), WORKERS: '2' })
      expect(code).toBe(78)
      expect(lines(output)).toEqual([
        `doi-proxy: cannot listen on HOST=127.0.0.1 PORT=${port}: another program uses this port already (EADDRINUSE); stop it or choose another PORT`
      ])
    }, 45_000) // three processes on a busy machine
  })
})

/** The lowest port any user may bind (Linux); 1024 where the file is missing. */
function unprivilegedPortStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim())
  } catch {
    return 1024
  }
}

/** The environment without LOG_FORMAT, so its default applies. */
function withoutLogFormat(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { LOG_FORMAT: _ignored, ...rest } = env
  return rest
}
