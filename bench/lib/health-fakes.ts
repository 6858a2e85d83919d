/**
 * The landing sites `npm run bench:health` checks (bench/health.ts), in a process of their own so their CPU is
 * not the measured process's: one site per host, each on its own loopback address (127.1.x.y: all of 127.0.0.0/8
 * is the loopback) and port, serving `/robots.txt` (allow all) and `/article/{n}` for the DOIs on it: a page of
 * `pageBytes` naming its DOI in `citation_doi`, or, seeded per DOI, one without the DOI (20 %: `unconfirmed`), a 404
 * (2 %: `dead`) or a page naming it after `slowMs` (1 %). Each request is recorded where it arrives (start, end, in
 * flight: verify-fakes.ts `Counter`), so per-host limits are measured at the fakes, not believed from the checker.
 *
 * The bench talks to this process over IPC: `{t:'start', options}` → `{t:'ready', sites, kinds}`; `{t:'report'}` →
 * `{t:'report', sites}`. It exits when the channel closes (the bench ended, however it ended).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { exited, spawnTracked } from './children.js'
import { stop } from './processes.js'
import { seededRandom } from './random.js'
import { close, Counter, listen, send } from './verify-fakes.js'
import type { Listening } from './verify-fakes.js'

export const PAGE_KINDS = ['alive', 'no-doi', 'dead', 'slow'] as const
export type PageKind = (typeof PAGE_KINDS)[number]

export interface HealthFakesOptions {
  /** DOI n is `${prefix}/health.${n}`, on host n mod hosts. */
  dois: number
  hosts: number
  prefix: string
  seed: number
  pageBytes: number
  slowMs: number
  /** LANDING_HOST_DELAY_MS: each site counts the gaps between two starts shorter than it. */
  delayMs: number
}

/** A site as the bench registers its DOIs' URLs: `http://{name}:{port}/article/{n}`, the name resolved to `address`. */
export interface FakeSite {
  name: string
  address: string
  port: number
}

/** What one site saw, as measured where the requests arrived. */
export interface SiteReport {
  name: string
  /** Requests, robots.txt included. */
  requests: number
  robots: number
  /** The most requests in flight at once. */
  peak: number
  /** The shortest time between the starts of two requests (ms; null under two requests). */
  minGapMs: number | null
  /** Gaps between two starts shorter than `delayMs`, by how much shorter: up to each of SHORT_BY ms, then more. */
  shortBy: number[]
  /** The mean time from a request's arrival to its answer's end (ms; null without one). */
  meanMs: number | null
}

/** What the sites saw, and how late their own event loop ran (a request's arrival is timed on it). */
export interface FakesReport {
  sites: SiteReport[]
  loopMs: { p99: number; max: number }
}

const MAX_HOSTS = 250 * 256
/** The bounds (ms) of how much shorter than the delay a short gap was, for the report's histogram. */
export const SHORT_BY = [10, 50, 100, 250] as const

/** DOI n's name. */
export function doiOf(prefix: string, n: number): string {
  return `${prefix}/health.${n}`
}

/** Host h's name and address: journal-h.test on 127.1.⌊h/250⌋.(h mod 250 + 1). */
export function siteOf(h: number): { name: string; address: string } {
  if (!Number.isInteger(h) || h < 0 || h >= MAX_HOSTS) throw new RangeError(`a host number from 0 to ${MAX_HOSTS - 1}, got ${h}`)
  return { name: `journal-${h}.test`, address: `127.1.${Math.floor(h / 250)}.${(h % 250) + 1}` }
}

/** Which page each DOI has, seeded: 20 % without the DOI, 2 % 404, 1 % slow, the rest naming it. */
function pageKinds(dois: number, seed: number): Uint8Array {
  const rnd = seededRandom(seed)
  const kinds = new Uint8Array(dois)
  for (let n = 0; n < dois; n++) {
    const r = rnd()
    kinds[n] = r < 0.2 ? 1 : r < 0.22 ? 2 : r < 0.23 ? 3 : 0
  }
  return kinds
}

function pageOf(doi: string | null, bytes: number): string {
  const title = 'An article of the benchmark'
  const named = doi === null ? '' : `<meta name="citation_doi" content="${doi}">`
  const head = `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>${named}</head><body><h1>${title}</h1>`
  const filler = '<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>\n'
  return `${head}${filler.repeat(Math.max(0, Math.ceil((bytes - head.length) / filler.length)))}</body></html>`
}

interface Started {
  sites: FakeSite[]
  kinds: Record<PageKind, number>
  report(): SiteReport[]
}

async function startSites(opts: HealthFakesOptions): Promise<{ started: Started; listening: Listening[] }> {
  const kinds = pageKinds(opts.dois, opts.seed)
  const counts: Record<PageKind, number> = { alive: 0, 'no-doi': 0, dead: 0, slow: 0 }
  for (const k of kinds) counts[PAGE_KINDS[k] as PageKind]++
  const counters = Array.from({ length: opts.hosts }, () => new Counter())
  const robots = new Array<number>(opts.hosts).fill(0)
  const listening: Listening[] = []
  const sites: FakeSite[] = []
  for (let h = 0; h < opts.hosts; h++) {
    const { name, address } = siteOf(h)
    const l = await listen(address, (req: IncomingMessage, res: ServerResponse) => {
      res.once('close', (counters[h] as Counter).begin(req.socket))
      const path = (req.url ?? '/').split('?')[0] ?? ''
      if (path === '/robots.txt') {
        robots[h] = (robots[h] ?? 0) + 1
        return send(res, 200, 'text/plain', 'User-agent: *\nAllow: /\n')
      }
      const m = /^\/article\/(\d+)$/.exec(path)
      const n = m === null ? NaN : Number(m[1])
      if (!(n < opts.dois) || n % opts.hosts !== h) return send(res, 404, 'text/html', '<h1>Not found</h1>')
      const kind = PAGE_KINDS[kinds[n] ?? 0]
      const doi = doiOf(opts.prefix, n)
      if (kind === 'dead') return send(res, 404, 'text/html', '<h1>Not found</h1>')
      if (kind === 'no-doi') return send(res, 200, 'text/html; charset=utf-8', pageOf(null, opts.pageBytes))
      if (kind === 'alive') return send(res, 200, 'text/html; charset=utf-8', pageOf(doi, opts.pageBytes))
      const timer = setTimeout(() => send(res, 200, 'text/html; charset=utf-8', pageOf(doi, opts.pageBytes)), opts.slowMs)
      res.once('close', () => clearTimeout(timer))
    })
    listening.push(l)
    sites.push({ name, address, port: Number(l.host.slice(l.host.lastIndexOf(':') + 1)) })
  }
  const report = (): SiteReport[] =>
    counters.map((c, h) => {
      const gap = c.minGapMs()
      const mean = c.meanMs()
      const shortBy = new Array<number>(SHORT_BY.length + 1).fill(0)
      for (let k = 1; k < c.starts.length; k++) {
        const short = opts.delayMs - ((c.starts[k] as number) - (c.starts[k - 1] as number))
        if (short <= 0) continue
        const bucket = SHORT_BY.findIndex((bound) => short <= bound)
        const at = bucket === -1 ? SHORT_BY.length : bucket
        shortBy[at] = (shortBy[at] ?? 0) + 1
      }
      return {
        name: (sites[h] as FakeSite).name,
        requests: c.requests,
        robots: robots[h] ?? 0,
        peak: c.peak,
        minGapMs: Number.isFinite(gap) ? gap : null,
        shortBy,
        meanMs: Number.isFinite(mean) ? mean : null
      }
    })
  return { started: { sites, kinds: counts, report }, listening }
}

type ToFakes = { t: 'start'; options: HealthFakesOptions } | { t: 'report' }
type FromFakes =
  { t: 'ready'; sites: FakeSite[]; kinds: Record<PageKind, number> } | ({ t: 'report' } & FakesReport) | { t: 'failed'; message: string }

export interface HealthFakes {
  sites: FakeSite[]
  /** How many DOIs have each kind of page. */
  kinds: Record<PageKind, number>
  /** The process's id (its CPU is not ours). */
  pid: number | undefined
  report(): Promise<FakesReport>
  stop(): Promise<void>
}

const SCRIPT = fileURLToPath(import.meta.url)

/** The sites, started in a child process. */
export async function startHealthFakes(opts: HealthFakesOptions): Promise<HealthFakes> {
  if (opts.hosts > MAX_HOSTS) throw new RangeError(`at most ${MAX_HOSTS} hosts, got ${opts.hosts}`)
  const { child, stderr } = spawnTracked('health fakes', SCRIPT, ['--serve'], { ipc: true })
  const next = async (): Promise<FromFakes> =>
    await new Promise<FromFakes>((resolve, reject) => {
      const onExit = (): void => reject(new Error(`the health fakes exited: ${stderr()}`))
      child.once('exit', onExit)
      child.once('message', (message) => {
        child.off('exit', onExit)
        resolve(message as FromFakes)
      })
    })
  const ask = async (message: ToFakes): Promise<FromFakes> => {
    const answer = next()
    child.send(message)
    const got = await answer
    if (got.t === 'failed') throw new Error(`the health fakes failed: ${got.message}`)
    return got
  }
  const ready = await ask({ t: 'start', options: opts })
  if (ready.t !== 'ready') throw new Error(`the health fakes answered ${ready.t} to start`)
  return {
    sites: ready.sites,
    kinds: ready.kinds,
    pid: child.pid,
    report: async () => {
      const got = await ask({ t: 'report' })
      if (got.t !== 'report') throw new Error(`the health fakes answered ${got.t} to report`)
      return { sites: got.sites, loopMs: got.loopMs }
    },
    stop: async () => {
      // Closing the channel ends it (exit 0); a child that does not go is stopped.
      if (child.connected) child.disconnect()
      await Promise.race([exited(child), sleep(5_000)])
      await stop(child)
    }
  }
}

async function serve(): Promise<void> {
  let started: Started | undefined
  let listening: Listening[] = []
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const reply = (message: FromFakes): void => {
    process.send?.(message)
  }
  process.on('message', (message: ToFakes) => {
    if (message.t === 'start') {
      startSites(message.options).then(
        (s) => {
          started = s.started
          listening = s.listening
          reply({ t: 'ready', sites: s.started.sites, kinds: s.started.kinds })
        },
        (err: unknown) => reply({ t: 'failed', message: (err as Error).message })
      )
    } else if (started === undefined) reply({ t: 'failed', message: 'not started' })
    else reply({ t: 'report', sites: started.report(), loopMs: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 } })
  })
  // The bench ended (or died): nothing here outlives it.
  process.once('disconnect', () => {
    Promise.all(listening.map(close)).finally(() => process.exit(0))
  })
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1] && process.argv.includes('--serve')) {
  serve().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
    process.exit(1)
  })
}
