/**
 * The fault matrix: what a reader gets while the upstream, a client or Redis misbehaves, as the code
 * is today (it reports, it does not judge: no exit code for an answer we would rather not give).
 *
 * Our server runs as a process (`node dist/main.js`) in front of bench/lib/fault-upstream.ts, all on
 * 127.0.0.1. Records expire after 1 s (CACHE_MAX_TTL_SECONDS=1), so each upstream fault is met by two
 * readers at once: one asking a DOI cached earlier and now expired (is the stale copy served?), one asking
 * a DOI never seen. Per fault: status, X-Cache, Retry-After, time, and the upstream requests each made.
 * Then the client faults (headers dripped a byte every 200 ms, CONNECT, an unknown method) and Redis
 * paused with SIGSTOP (a second server with REDIS_URL), when redis-server is installed.
 *
 * The breaker is set never to open (BREAKER_VOLUME_THRESHOLD=1000000) and load shedding is off
 * (MAX_EVENT_LOOP_DELAY_MS=0), so each row shows the fault itself, whatever came before it or the
 * machine's load. Timeouts are short so the run is bounded (about a minute):
 * UPSTREAM_TIMEOUT_MS=2000, REQUEST_DEADLINE_MS=4000, REQUEST_TIMEOUT_MS=5000; retries as by default.
 *
 * Writes the faults section of bench/RESULTS.md. `npm run bench:faults`, `… -- --output -` (stdout only).
 */
import { connect } from 'node:net'
import { forEachOption } from './lib/args.js'
import { codeVersion } from './lib/children.js'
import { FaultUpstream } from './lib/fault-upstream.js'
import type { FaultMode } from './lib/fault-upstream.js'
import { ensureBuilt, startOurs } from './lib/processes.js'
import type { Target, UpstreamProcess } from './lib/processes.js'
import { redisInstalled, startRedis } from './lib/redis.js'
import { machine, writeSection } from './lib/results.js'

const HELP = `Usage: node --import tsx bench/faults.ts [options]     (npm run bench:faults -- [options])
  --output FILE   "-" to print the section instead of writing bench/RESULTS.md`

const SERVER_ENV = {
  CACHE_MIN_TTL_SECONDS: '1',
  CACHE_MAX_TTL_SECONDS: '1',
  UPSTREAM_TIMEOUT_MS: '2000',
  REQUEST_DEADLINE_MS: '4000',
  REQUEST_TIMEOUT_MS: '5000',
  BREAKER_VOLUME_THRESHOLD: '1000000',
  // No load shedding: on a busy machine the event loop lags past 1 s and upstream work would get 503s.
  MAX_EVENT_LOOP_DELAY_MS: '0',
  LOCAL_STORE_DIR: '',
  LOG_LEVEL: 'fatal',
  LOG_FORMAT: 'json'
}

interface UpstreamFault {
  mode: FaultMode
  name: string
}

const UPSTREAM_FAULTS: readonly UpstreamFault[] = [
  { mode: 'drip', name: 'answer dripped a byte every 200 ms' },
  { mode: 'hang', name: 'connection accepted, no answer' },
  { mode: 'huge', name: '50 MB body' },
  { mode: 'html-200', name: '200 text/html (captive portal)' },
  { mode: 'invalid-json', name: '200 with invalid JSON' },
  { mode: 'gzip', name: '200 JSON with Content-Encoding: gzip' },
  { mode: 'status-500', name: '500' },
  { mode: 'status-503', name: '503 HTML' },
  { mode: 'reset', name: 'connection reset before an answer' },
  { mode: 'refused', name: 'connection refused (nothing listens)' },
  // Last: after a 429 no lookup goes upstream until its Retry-After is over (docs/operations.md), so any
  // row after it would measure that wait instead of its own fault.
  { mode: 'rate-limited', name: '429 with Retry-After: 30' }
]

interface Reading {
  status: number
  cache: string
  retryAfter: string
  ms: number
  upstreamRequests: number
}

async function read(baseUrl: string, path: string, upstream?: FaultUpstream): Promise<Reading> {
  const handle = path.slice(1)
  const before = upstream?.requestsFor(handle) ?? 0
  const started = performance.now()
  try {
    const res = await fetch(`${baseUrl}${path}`, { redirect: 'manual', signal: AbortSignal.timeout(15_000) })
    await res.arrayBuffer()
    return {
      status: res.status,
      cache: res.headers.get('x-cache') ?? '—',
      retryAfter: res.headers.get('retry-after') ?? '—',
      ms: performance.now() - started,
      upstreamRequests: (upstream?.requestsFor(handle) ?? 0) - before
    }
  } catch (err) {
    return {
      status: 0,
      cache: `no answer (${(err as Error).name})`,
      retryAfter: '—',
      ms: performance.now() - started,
      upstreamRequests: (upstream?.requestsFor(handle) ?? 0) - before
    }
  }
}

const ms = (n: number): string => (n < 10 ? n.toFixed(1) : n.toFixed(0))
const answer = (r: Reading): string => (r.status === 0 ? r.cache : `${r.status} ${r.cache}`)

async function upstreamRows(target: Target, upstream: FaultUpstream): Promise<string[]> {
  const doi = (fault: UpstreamFault, kind: string): string => `/10.5555/fault-${fault.mode}-${kind}`
  // Every expired DOI is cached first, at once, then left to expire.
  for (const fault of UPSTREAM_FAULTS) {
    const primed = await read(target.baseUrl, doi(fault, 'cached'), upstream)
    if (primed.status !== 302) throw new Error(`priming ${doi(fault, 'cached')} answered ${primed.status} ${primed.cache}`)
  }
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  const rows: string[] = []
  for (const fault of UPSTREAM_FAULTS) {
    await upstream.setMode(fault.mode)
    const [cached, fresh] = await Promise.all([
      read(target.baseUrl, doi(fault, 'cached'), upstream),
      read(target.baseUrl, doi(fault, 'new'), upstream)
    ])
    await upstream.setMode('ok')
    process.stderr.write(
      `[faults] ${fault.name}: expired ${answer(cached)} in ${ms(cached.ms)} ms; new ${answer(fresh)} in ${ms(fresh.ms)} ms\n`
    )
    rows.push(
      `| ${fault.name} | ${answer(cached)} | ${ms(cached.ms)} | ${cached.cache === 'STALE' ? 'yes' : 'no'} | ${cached.upstreamRequests} | ${answer(fresh)} | ${ms(fresh.ms)} | ${fresh.upstreamRequests} | ${fresh.retryAfter} |`
    )
  }
  return rows
}

/** One request over a raw socket: the status it got and when the socket closed (ms); dripped a byte every `dripMs` when set. */
async function rawClient(port: number, request: string, dripMs?: number): Promise<{ status: number; ms: number }> {
  const started = performance.now()
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      if (dripMs === undefined) socket.write(request)
    })
    let text = ''
    let i = 0
    const timer =
      dripMs === undefined
        ? undefined
        : setInterval(() => {
            if (socket.writable) socket.write(request[i++ % request.length] ?? '')
          }, dripMs)
    const giveUp = setTimeout(() => socket.destroy(), 90_000)
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1')
    })
    socket.on('error', () => {
      /* the close says it */
    })
    socket.on('close', () => {
      clearInterval(timer)
      clearTimeout(giveUp)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), ms: performance.now() - started })
    })
  })
}

async function clientRows(target: Target): Promise<string[]> {
  const host = `Host: 127.0.0.1:${target.port}\r\n`
  const cases: Array<{ name: string; request: string; dripMs?: number }> = [
    {
      name: 'request headers dripped a byte every 200 ms (REQUEST_TIMEOUT_MS=5000)',
      request: `GET /10.5555/slow HTTP/1.1\r\n${host}X-Slow: ${'a'.repeat(500)}`,
      dripMs: 200
    },
    { name: 'CONNECT example.org:443', request: `CONNECT example.org:443 HTTP/1.1\r\n${host}\r\n` },
    { name: 'an unknown method (FOO)', request: `FOO /10.5555/x HTTP/1.1\r\n${host}Connection: close\r\n\r\n` },
    { name: 'PROPFIND', request: `PROPFIND /10.5555/x HTTP/1.1\r\n${host}Connection: close\r\n\r\n` },
    { name: 'TLS hello on the http port', request: '\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u00fc\u0003\u0003' }
  ]
  const rows: string[] = []
  for (const c of cases) {
    const r = await rawClient(target.port, c.request, c.dripMs)
    process.stderr.write(`[faults] ${c.name}: ${r.status === 0 ? 'closed, no answer' : r.status} after ${ms(r.ms)} ms\n`)
    rows.push(`| ${c.name} | ${r.status === 0 ? 'closed with no answer' : String(r.status)} | ${ms(r.ms)} |`)
  }
  return rows
}

async function redisRows(upstream: FaultUpstream, upstreamProcess: UpstreamProcess): Promise<string[]> {
  if (!redisInstalled()) return ['| Redis paused (SIGSTOP) | not measured: redis-server is not installed | | | | | | | |']
  const redis = await startRedis()
  let target: Target
  try {
    target = await startOurs({
      upstream: upstreamProcess,
      env: { ...SERVER_ENV, CACHE_MAX_TTL_SECONDS: '3600', CACHE_MIN_TTL_SECONDS: '3600', REDIS_URL: redis.url },
      name: 'doi-proxy with Redis'
    })
  } catch (err) {
    // A busy machine can take longer than the start allows: the other rows still count.
    await redis.stop()
    return [`| Redis paused (SIGSTOP) | not measured: ${(err as Error).message.replace(/\|/g, '/')} | | | | | | | |`]
  }
  try {
    const primed = await read(target.baseUrl, '/10.5555/redis-cached', upstream)
    if (primed.status !== 302) throw new Error(`priming with Redis answered ${primed.status}`)
    redis.child.kill('SIGSTOP')
    const [cached, fresh] = await Promise.all([
      read(target.baseUrl, '/10.5555/redis-cached', upstream),
      read(target.baseUrl, '/10.5555/redis-new', upstream)
    ])
    redis.child.kill('SIGCONT')
    process.stderr.write(
      `[faults] Redis paused: cached ${answer(cached)} in ${ms(cached.ms)} ms; new ${answer(fresh)} in ${ms(fresh.ms)} ms\n`
    )
    return [
      `| Redis paused (SIGSTOP; the DOI cached and fresh in memory) | ${answer(cached)} | ${ms(cached.ms)} | — | ${cached.upstreamRequests} | ${answer(fresh)} | ${ms(fresh.ms)} | ${fresh.upstreamRequests} | ${fresh.retryAfter} |`
    ]
  } finally {
    await target.stop()
    await redis.stop()
  }
}

async function main(): Promise<void> {
  let output: string | undefined
  forEachOption(process.argv.slice(2), HELP, (arg, value) => {
    if (arg === '--output') output = value()
    else return false
    return true
  })
  const started = Date.now()
  ensureBuilt((line) => process.stderr.write(`[faults] ${line}\n`))
  const upstream = await FaultUpstream.start()
  const upstreamProcess: UpstreamProcess = {
    port: 0,
    origin: '',
    apiUrl: upstream.apiUrl,
    latencyMs: 0,
    requests: async () => 0,
    reset: async () => {},
    stop: async () => await upstream.close()
  }
  const target = await startOurs({ upstream: upstreamProcess, env: SERVER_ENV })
  let upstreamTable: string[]
  let clientTable: string[]
  try {
    upstreamTable = await upstreamRows(target, upstream)
    clientTable = await clientRows(target)
  } finally {
    await target.stop()
  }
  const redisTable = await redisRows(upstream, upstreamProcess)
  await upstream.close()
  const section = [
    '## Fault matrix',
    '',
    `Machine: ${machine()} (shared and busy: times are indicative)  `,
    `Date: ${new Date().toISOString()}  `,
    `Code: ${codeVersion()}  `,
    `Mode: \`npm run bench:faults\`, ${Math.round((Date.now() - started) / 1000)} s. Our server (dist/) on loopback in front of bench/lib/fault-upstream.ts, with ${Object.entries(
      SERVER_ENV
    )
      .filter(([k]) => !k.startsWith('LOG') && k !== 'LOCAL_STORE_DIR')
      .map(([k, v]) => `${k}=${v}`)
      .join(
        ', '
      )}; retries as by default. Two readers per fault at once: a DOI cached earlier and expired, and a DOI never seen. This table says what the code does, not what it should; see bench/README.md.`,
    '',
    '| Upstream fault | Expired DOI: answer | ms | Stale copy served | Upstream requests | New DOI: answer | ms | Upstream requests | Retry-After |',
    '|---|---|--:|---|--:|---|--:|--:|---|',
    ...upstreamTable,
    ...redisTable,
    '',
    '| Client fault | Answer | Connection closed after ms |',
    '|---|---|--:|',
    ...clientTable,
    ''
  ].join('\n')
  if (output === '-') process.stdout.write(section)
  else {
    writeSection('faults', section)
    process.stderr.write('[faults] wrote the faults section of bench/RESULTS.md\n')
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`[faults] ${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
