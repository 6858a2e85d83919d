/**
 * Load for the hostile benchmark (bench/hostile.ts): an open-loop, paced request generator bound to
 * one source address, the readers' and the attacker's request mixes, and the attacker as a process
 * of its own (so its work does not delay the readers' clocks).
 *
 * Paced, not closed-loop: each client sends at a fixed rate whatever the answers take, as real
 * users do, with a bound on requests in flight (beyond it a request is counted as skipped, not sent).
 * Latency is measured from the moment each request is handed to undici (its pool queue included).
 *
 * As the attacker: `node --import tsx bench/lib/hostile-load.ts --attacker '<json AttackerConfig>'`;
 * it waits for `startAt`, runs `durationMs`, prints one JSON line (AttackerReport) and exits.
 */
import { fileURLToPath } from 'node:url'
import { Pool } from 'undici'
import { seededRandom } from './random.js'

export interface Planned {
  kind: string
  path: string
  headers?: Record<string, string>
}

export interface Answer {
  kind: string
  /** 0 when there was no answer (see error). */
  status: number
  error?: string
  ms: number
  /** Start of an error answer's body (5xx only), to tell upstream-caused from ours. */
  body?: string
}

export interface PacedOptions {
  origin: string
  localAddress: string
  connections: number
  ratePerS: number
  maxInFlight: number
  startAt: number
  durationMs: number
  timeoutMs: number
  next: () => Planned
  /** Called for each answer or failure. */
  onAnswer: (answer: Answer, sentAt: number) => void
}

export interface PacedResult {
  sent: number
  skipped: number
}

/** Send `next()` requests at `ratePerS` from `startAt` for `durationMs`; resolves when every one has been answered or timed out. */
export async function runPaced(opts: PacedOptions): Promise<PacedResult> {
  const pool = new Pool(opts.origin, {
    connections: opts.connections,
    localAddress: opts.localAddress,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connectTimeout: Math.min(opts.timeoutMs, 5_000)
  })
  let sent = 0
  let skipped = 0
  let inFlight = 0
  const pending = new Set<Promise<void>>()
  const endAt = opts.startAt + opts.durationMs

  async function one(planned: Planned): Promise<void> {
    const signal = AbortSignal.timeout(opts.timeoutMs)
    const sentAt = Date.now()
    const t0 = performance.now()
    let answer: Answer
    try {
      const res = await pool.request({
        path: planned.path,
        method: 'GET',
        headers: { 'user-agent': 'doi-proxy-bench-hostile', ...planned.headers },
        signal
      })
      const body = res.statusCode >= 500 ? pageText(await res.body.text()) : (await res.body.dump(), undefined)
      answer = { kind: planned.kind, status: res.statusCode, ms: performance.now() - t0, ...(body === undefined ? {} : { body }) }
    } catch (err) {
      answer = { kind: planned.kind, status: 0, error: describe(err, signal.aborted), ms: performance.now() - t0 }
    }
    opts.onAnswer(answer, sentAt)
  }

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, opts.startAt - Date.now())))
  // One tick every 5 ms sends what is due; after a stall at most 50 ms worth is caught up.
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = Date.now()
      const due = Math.floor(((Math.min(now, endAt) - opts.startAt) * opts.ratePerS) / 1000)
      let owed = due - sent - skipped
      if (owed > opts.ratePerS / 20) {
        skipped += owed - Math.ceil(opts.ratePerS / 20)
        owed = Math.ceil(opts.ratePerS / 20)
      }
      for (; owed > 0; owed--) {
        if (inFlight >= opts.maxInFlight) {
          skipped++
          continue
        }
        sent++
        inFlight++
        const p = one(opts.next()).finally(() => {
          inFlight--
          pending.delete(p)
        })
        pending.add(p)
      }
      if (now >= endAt) {
        clearInterval(timer)
        resolve()
      }
    }, 5)
  })
  await Promise.all([...pending])
  await pool.destroy()
  return { sent, skipped }
}

/** What a page says: title and text without styles, scripts and tags, shortened. */
export function pageText(html: string): string {
  return html
    .replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&[a-z#0-9]+;/gi, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300)
}

function describe(err: unknown, timedOut: boolean): string {
  if (timedOut) return 'client timeout'
  const e = err as { code?: string; cause?: { code?: string }; message?: string }
  const code = e?.code ?? e?.cause?.code ?? ''
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'client timeout'
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset'
  if (code === 'ECONNREFUSED') return 'connection refused'
  return `client error ${code === '' ? String(e?.message ?? err) : code}`
}

// ------------------------------------------------------------------ request mixes

/** Readers' cached DOIs: `count` DOIs over 20 prefixes, asked for before the measured phases. */
export function cachedDoi(i: number): string {
  return `/10.${6000 + (i % 20)}/hot.${i}`
}

export interface ReaderMix {
  cached: number
  api: number
  uncached: number
}
export const READER_MIX: ReaderMix = { cached: 85, api: 5, uncached: 10 }

/** A reader: mostly cached DOIs, some through the REST API, some never seen before (a real miss). */
export function readerPlanner(
  reader: number,
  phase: string,
  cachedCount: number,
  seed: number,
  mix: ReaderMix = READER_MIX
): () => Planned {
  const random = seededRandom(seed + reader * 7919)
  const total = mix.cached + mix.api + mix.uncached
  let fresh = 0
  return () => {
    const u = random() * total
    const rank = Math.floor(random() * cachedCount)
    if (u < mix.cached) return { kind: 'cached', path: cachedDoi(rank) }
    if (u < mix.cached + mix.api) return { kind: 'cached', path: `/api/handles${cachedDoi(rank)}` }
    return { kind: 'uncached', path: `/10.${6000 + (fresh % 20)}/cold.${reader}.${phase}.${fresh++}` }
  }
}

export const ATTACK_KINDS = ['miss', 'dotdot', 'long', 'huge', 'auth'] as const
export type AttackKind = (typeof ATTACK_KINDS)[number]

/** Share of each attack kind, in percent (any positive weights). */
export const DEFAULT_ATTACK_MIX: Record<AttackKind, number> = { miss: 30, dotdot: 35, long: 10, huge: 5, auth: 20 }

/** `miss:30,dotdot:35,…` → weights; throws on an unknown kind. */
export function parseAttackMix(text: string): Record<AttackKind, number> {
  const mix: Record<AttackKind, number> = { miss: 0, dotdot: 0, long: 0, huge: 0, auth: 0 }
  for (const part of text.split(',')) {
    const [kind = '', weight = ''] = part.trim().split(':')
    if (!(ATTACK_KINDS as readonly string[]).includes(kind)) {
      throw new Error(`unknown attack kind "${kind}"; known: ${ATTACK_KINDS.join(', ')}`)
    }
    const w = Number(weight)
    if (!Number.isFinite(w) || w < 0) throw new Error(`attack kind "${kind}" needs a weight >= 0`)
    mix[kind as AttackKind] = w
  }
  return mix
}

const E_ACUTE = '%C3%A9'

/**
 * The attacker's requests:
 * - miss: a unique random DOI (a cache miss and an upstream request each);
 * - dotdot: a DOI with `..` segments (raw or as %2F-encoded slashes), which we send upstream as
 *   written and a CDN refuses with an HTML 400;
 * - long: a DOI of 2,000 'é' (12 KB encoded): under our limits, over the edge's URL limit (HTML 414);
 * - huge: a DOI of 3,900 'é' (23 KB encoded), under MAX_HANDLE_LENGTH but over our MAX_HEADER_BYTES;
 * - auth: `?auth` on a cached DOI (bypasses the cache; limited by AUTH_RATE_LIMIT_MAX).
 */
export function attackerPlanner(seed: number, mix: Record<AttackKind, number>, cachedCount: number): () => Planned {
  const random = seededRandom(seed)
  const total = ATTACK_KINDS.reduce((sum, k) => sum + mix[k], 0)
  const token = (): string => Math.floor(random() * 2 ** 48).toString(36)
  const long = E_ACUTE.repeat(2000)
  const huge = E_ACUTE.repeat(3900)
  return () => {
    let u = random() * total
    let kind: AttackKind = 'miss'
    for (const k of ATTACK_KINDS) {
      if ((u -= mix[k]) < 0) {
        kind = k
        break
      }
    }
    const prefix = 7000 + Math.floor(random() * 100)
    switch (kind) {
      case 'miss':
        return { kind, path: `/10.${prefix}/flood-${token()}` }
      case 'dotdot':
        return { kind, path: random() < 0.5 ? `/10.${prefix}/${token()}/../../${token()}` : `/10.${prefix}/..%2F..%2F${token()}` }
      // Unique names: identical lookups in flight would be coalesced into one upstream request.
      case 'long':
        return { kind, path: `/10.${prefix}/${token()}${long}` }
      case 'huge':
        return { kind, path: `/10.${prefix}/${token()}${huge}` }
      case 'auth':
        return { kind, path: `${cachedDoi(Math.floor(random() * cachedCount))}?auth` }
    }
  }
}

// ------------------------------------------------------------------ the attacker process

export interface AttackerConfig {
  origin: string
  localAddress: string
  connections: number
  ratePerS: number
  maxInFlight: number
  startAt: number
  durationMs: number
  timeoutMs: number
  seed: number
  mix: Record<AttackKind, number>
  cachedCount: number
}

export interface AttackerReport {
  sent: number
  skipped: number
  answered: number
  /** kind → status (or error) → count */
  byKind: Record<string, Record<string, number>>
  p50: number
  p99: number
}

export async function runAttacker(config: AttackerConfig): Promise<AttackerReport> {
  const byKind: Record<string, Record<string, number>> = {}
  const times: number[] = []
  let answered = 0
  const result = await runPaced({
    origin: config.origin,
    localAddress: config.localAddress,
    connections: config.connections,
    ratePerS: config.ratePerS,
    maxInFlight: config.maxInFlight,
    startAt: config.startAt,
    durationMs: config.durationMs,
    timeoutMs: config.timeoutMs,
    next: attackerPlanner(config.seed, config.mix, config.cachedCount),
    onAnswer: (a) => {
      const key = a.status === 0 ? (a.error ?? 'error') : String(a.status)
      const counts = (byKind[a.kind] ??= {})
      counts[key] = (counts[key] ?? 0) + 1
      if (a.status !== 0) answered++
      times.push(a.ms)
    }
  })
  const sorted = Float64Array.from(times).sort()
  const pct = (p: number): number =>
    sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN)
  return { ...result, answered, byKind, p50: pct(50), p99: pct(99) }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--attacker')
  const config = JSON.parse(process.argv[i + 1] ?? '{}') as Omit<AttackerConfig, 'startAt'>
  // Loaded and waiting: the benchmark sends one line `{"startAt": <epoch ms>}` on stdin when the flood
  // phase is scheduled. When stdin closes (the benchmark ended or died), we exit.
  process.stdout.write('ready\n')
  const startAt = await new Promise<number>((resolve) => {
    let buffered = ''
    process.stdin.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      const nl = buffered.indexOf('\n')
      if (nl >= 0) resolve(Number((JSON.parse(buffered.slice(0, nl)) as { startAt: number }).startAt))
    })
    process.stdin.on('close', () => process.exit(0))
  })
  // Never outlive our own schedule, whatever happens to the server.
  setTimeout(() => process.exit(3), Math.max(0, startAt - Date.now()) + config.durationMs + config.timeoutMs + 30_000).unref()
  const report = await runAttacker({ ...config, startAt })
  process.stdout.write(JSON.stringify(report) + '\n')
  process.exit(0)
}
