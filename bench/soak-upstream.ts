/**
 * A fake Handle REST API that fails on a schedule, for the soak (bench/soak.ts) only.
 *
 * It answers like bench/fake-upstream.ts (the same realistic 2–4 value records, `missing-…` is a
 * 404, prefixes carry the conneg namespace), but what it does depends on the phase:
 *
 * - `healthy`: answers after `latencyMs`;
 * - `down`: the listener is closed and every open socket destroyed, so connections are refused;
 * - `slow`: answers after 2–5 s (past a short UPSTREAM_TIMEOUT_MS);
 * - `429`: `429 Too Many Requests` with `Retry-After: 1`;
 * - `500`: `500 Internal Server Error`.
 *
 * The schedule (`--schedule healthy:20,down:12,…`, seconds) cycles. It starts when the soak asks
 * `GET /__start` (so the phases line up with the load); before that the upstream is healthy.
 * Every phase change is printed on stdout as one JSON line:
 * `{"phase":"down","index":1,"at":<epoch ms>,"ended":{"phase":"healthy","requests":1234}}`
 * (requests = handle requests that reached it in the phase that ended).
 *
 * Run standalone: `node --import tsx bench/soak-upstream.ts --port 8100 --latency 30 --schedule healthy:10,down:5`
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { answerFor } from './fake-upstream.js'
import { seededRandom } from './lib/random.js'

export const PHASES = ['healthy', 'down', 'slow', '429', '500'] as const
export type Phase = (typeof PHASES)[number]

export interface ScheduleStep {
  phase: Phase
  seconds: number
}

/** `healthy:20,down:12` → steps; throws on an unknown phase or a non-positive length. */
export function parseSchedule(text: string): ScheduleStep[] {
  return text.split(',').map((part) => {
    const [phase = '', seconds = ''] = part.trim().split(':')
    if (!(PHASES as readonly string[]).includes(phase)) throw new Error(`unknown phase "${phase}"; known: ${PHASES.join(', ')}`)
    const s = Number(seconds)
    if (!Number.isFinite(s) || s <= 0) throw new Error(`phase "${phase}" needs a length in seconds > 0, got "${seconds}"`)
    return { phase: phase as Phase, seconds: s }
  })
}

/** Which step of a cycling schedule is current `elapsedMs` after its start. */
export function stepAt(steps: readonly ScheduleStep[], elapsedMs: number): number {
  const cycleMs = steps.reduce((sum, s) => sum + s.seconds * 1000, 0)
  let t = elapsedMs % cycleMs
  for (let i = 0; i < steps.length; i++) {
    const len = (steps[i]?.seconds ?? 0) * 1000
    if (t < len) return i
    t -= len
  }
  return 0
}

interface Options {
  port: number
  host: string
  latencyMs: number
  steps: ScheduleStep[]
}

async function main(opts: Options): Promise<void> {
  const random = seededRandom(0x50a4)
  const sockets = new Set<Socket>()
  let phase: Phase = 'healthy'
  let step = -1
  let requests = 0
  let startedAt: number | undefined

  function sendJson(res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
    // The socket may have been destroyed by a `down` phase while this answer waited.
    if (res.destroyed || res.writableEnded) return
    const text = JSON.stringify(body)
    res.writeHead(status, {
      ...headers,
      'content-type': 'application/json;charset=utf-8',
      'content-length': String(Buffer.byteLength(text))
    })
    res.end(text)
  }

  function answerHandle(res: ServerResponse, handle: string | undefined): void {
    if (handle === undefined) return sendJson(res, 400, {}, { responseCode: 2, message: 'bad handle encoding' })
    const answer = answerFor(handle)
    sendJson(res, answer.status, {}, answer.body)
  }

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/'
    const path = url.split('?')[0] ?? '/'
    if (path === '/__stats') return sendJson(res, 200, {}, { phase, requests })
    if (path === '/__start') {
      startedAt ??= Date.now()
      tick().catch(reportTickError)
      return sendJson(res, 200, {}, { phase })
    }
    if (!path.startsWith('/api/handles/')) return sendJson(res, 404, {}, { responseCode: 2, message: 'not a fake upstream path' })
    requests++
    let handle: string | undefined
    try {
      handle = decodeURIComponent(path.slice('/api/handles/'.length))
    } catch {
      handle = undefined
    }
    if (phase === '429') return sendJson(res, 429, { 'retry-after': '1' }, { responseCode: 2, message: 'Too many requests' })
    if (phase === '500') return sendJson(res, 500, {}, { responseCode: 2, message: 'Internal error' })
    const waitMs = phase === 'slow' ? 2000 + random() * 3000 : opts.latencyMs
    setTimeout(() => answerHandle(res, handle), waitMs)
  }

  const server = createServer(onRequest)
  server.keepAliveTimeout = 60_000
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })

  const listen = async (): Promise<void> =>
    await new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(opts.port, opts.host, () => {
        server.off('error', reject)
        resolve()
      })
    })

  /** Connection refused from now on: no listener, and no socket left half-open. */
  function goDown(): void {
    server.close()
    for (const socket of sockets) socket.destroy()
  }

  function announce(next: Phase, index: number): void {
    const line = { phase: next, index, at: Date.now(), ended: { phase, requests } }
    process.stdout.write(JSON.stringify(line) + '\n')
  }

  let changing = false
  async function tick(): Promise<void> {
    if (startedAt === undefined || changing) return
    const next = stepAt(opts.steps, Date.now() - startedAt)
    if (next === step) return
    changing = true
    const nextPhase = opts.steps[next]?.phase ?? 'healthy'
    announce(nextPhase, next)
    const wasDown = phase === 'down'
    phase = nextPhase
    step = next
    requests = 0
    try {
      if (nextPhase === 'down' && !wasDown) goDown()
      else if (nextPhase !== 'down' && wasDown) await listen()
    } finally {
      changing = false
    }
  }

  await listen()
  const timer = setInterval(() => {
    tick().catch(reportTickError)
  }, 100)
  process.stdout.write(JSON.stringify({ listening: opts.port }) + '\n')
  const stop = (): void => {
    clearInterval(timer)
    goDown()
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

function reportTickError(err: unknown): void {
  process.stderr.write(`soak-upstream: ${String(err)}\n`)
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main({
    port: Number(argValue('--port') ?? 8100),
    host: argValue('--host') ?? '127.0.0.1',
    latencyMs: Number(argValue('--latency') ?? 30),
    steps: parseSchedule(argValue('--schedule') ?? 'healthy:20,down:12,healthy:12,slow:12,429:12,500:12')
  })
}
