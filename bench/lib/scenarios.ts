/**
 * The benchmark scenarios. Each starts the servers it needs fresh (so "cold" really is cold),
 * drives them with the same request sequence, stops them, and returns one row per server.
 *
 * The steady scenarios (hot, not-found, api, conneg, metadata) start every server of their lineup
 * at once, warm each, then measure in alternating rounds: round r runs each server in turn for
 * roundS seconds, in an order of its own each round, and a server's row merges all its rounds (total
 * requests ÷ total time, percentiles over every latency of every round). The machine is noisy: a
 * slow stretch now hits every server a little instead of one server entirely, so the ratios between
 * servers hold from run to run. Their floor writes the same bytes as our answer (captured from our
 * server once, checked before measuring). cold alternates rounds too, ours against the fake upstream
 * asked directly. zipf and storm are sequence- or cold-start-based and run one server after the
 * other, each started fresh. The load is driven by wrk (bench/lib/wrk.ts) unless it could not be installed.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Pool } from 'undici'
import type { LoadResult } from './load.js'
import { mergeLoads, probe, Samples, warm, zipfSampler } from './load.js'
import { seededRandom } from './random.js'
import type { Target } from './processes.js'
import { NGINX_MISSING, TWIN_FLOOR, cpuMs, oursWorkers, startFloor, startMissFloor, startNginx, startOurs } from './processes.js'
import { drive } from './wrk.js'
import type { DriveOptions, GeneratorName } from './wrk.js'
import { answerBytes, captureAnswer, describeAnswer, writeAnswerFile, writeAnswersFile } from './floor-answer.js'
import type { CapturedAnswer } from './floor-answer.js'
import { startBenchAgency } from './bench-agency.js'
import { BEFORE_PREFIX } from './before.js'
import { batchSection } from './batch.js'
import { writeSection } from './results.js'
import type { Context, Row, ScenarioName } from './scenario-context.js'

type Starter = () => Promise<Target>

/** Our server, and the --before build when there is one, each with the same environment. */
function oursStarters(ctx: Context, env: Record<string, string> = ctx.serverEnv): Starter[] {
  const out: Starter[] = [async () => await startOurs({ upstream: ctx.upstream, profile: ctx.profile, env })]
  const before = ctx.before
  if (before !== undefined && !ctx.profile) {
    out.push(async () => await startOurs({ upstream: ctx.upstream, env, dir: before.dir, name: before.name }))
  }
  return out
}

/**
 * Servers to compare in a scenario: ours (and the --before build), then nginx where it makes sense.
 * The floor is not in it: steady() starts it once our answer is known, to write the same bytes.
 */
function lineup(ctx: Context, withNginx: boolean, env?: Record<string, string>): Starter[] {
  const out = oursStarters(ctx, env)
  if (ctx.profile) return out
  if (withNginx && ctx.nginx) out.push(async () => await startNginx(ctx.upstream))
  return out
}

/** Most paths whose answers the same-bytes floor captures one by one (more: each path beyond gets the first path's answer). */
const MAX_FLOOR_PATHS = 5_000

/** A same-bytes floor, with the file of answers it writes (a second process of it reads the same). */
interface SameBytesFloor {
  floor: Target
  answersFile: string
  checkPaths: string[]
}

/**
 * The same-bytes floor for a steady scenario: our server's cached answer for each of the scenario's paths
 * (asked so it is cached, then captured), written by bare node:http for the requests of that path. Each
 * path's own answer, as ours writes: a floor writing one answer for every path keeps one buffer in the
 * CPU's cache where ours writes a thousand (measured 2026-11-25: 53.6 against 55.4 µs per answer).
 */
async function sameBytesFloor(
  ctx: Context,
  ours: Target,
  paths: readonly string[],
  headers?: Record<string, string>
): Promise<SameBytesFloor> {
  const captured = paths.length === 0 ? ['/'] : paths.slice(0, MAX_FLOOR_PATHS)
  const opts = headers === undefined ? {} : { headers }
  // Asked a few times first: the first hits of a DOI may be answered before its prepared answer is
  // built (headers in another order); the floor copies the answer every later hit gets.
  for (let i = 0; i < 5; i++) await warm(ours.baseUrl, captured, { concurrency: 8, ...opts })
  const answers: Array<[string, CapturedAnswer]> = []
  for (const path of captured) answers.push([path, await captureAnswer(ours.baseUrl, path, headers)])
  const answersFile = writeAnswersFile(answers)
  const first = answers[0]?.[1]
  const described = first === undefined ? '' : describeAnswer(first)
  // As many processes as ours (WORKERS, node:cluster): the same layout on the same cores.
  const floor = await startFloor({ answersFile, name: 'floor (node:http, same bytes)', workers: oursWorkers(ctx.serverEnv) })
  // Checked, not assumed, on the first, a middle and the last path: both asked again, every header but Date
  // compared in order and case, and the body.
  const checkPaths = [...new Set([captured[0], captured[Math.floor(captured.length / 2)], captured[captured.length - 1]])].filter(
    (p) => p !== undefined
  )
  const asked =
    headers === undefined
      ? ''
      : ` (${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')})`
  const checked = await confirmFloor(ctx, floor, {
    ours: await bytesOf(ours, checkPaths, headers),
    floor: await bytesOf(floor, checkPaths, headers),
    but: 'Date',
    says: `the same bytes as ${ours.name}'s answers for ${captured.length} paths (${captured[0] ?? '/'}: ${described})`,
    note: `writes ${ours.name}'s answer for each of ${captured.length} paths, looked up by the request's path${asked} (${captured[0] ?? '/'}: ${described})`
  })
  return { floor: checked, answersFile, checkPaths }
}

/** The answers of a server for some paths, every header but Date, for confirmFloor. */
async function bytesOf(t: Target, paths: readonly string[], headers?: Record<string, string>): Promise<string> {
  const all: string[] = []
  for (const path of paths) all.push(await answerBytes(t.baseUrl, path, headers))
  return all.join('\n')
}

/**
 * A floor is measured only once it answers as ours did: `ours` and `floor` are the two answers (answerBytes,
 * with what may differ, `but`, already left out), compared whole. Its row's note says it was checked;
 * a floor that differs is stopped, and the run with it.
 */
async function confirmFloor(
  ctx: Context,
  floor: Target,
  check: { ours: string; floor: string; but: string; says: string; note: string }
): Promise<Target> {
  const same = check.ours === check.floor
  ctx.log(`  ${floor.name}: ${check.says}: ${same ? `checked, identical but for ${check.but}` : 'WARNING: the answers differ'}`)
  floor.note = `${check.note}; checked before measuring, identical but for ${check.but}`
  if (!same) {
    await floor.stop()
    throw new Error(`${floor.name} does not answer as ours did:\n${check.ours.slice(0, 600)}\n${check.floor.slice(0, 600)}`)
  }
  return floor
}

/** A path sequence drawn uniformly (seeded) from `paths`: every server gets the same sequence. */
function uniformSequence(paths: readonly string[], seed: number, length = 50_000): string[] {
  const random = seededRandom(seed)
  return Array.from({ length }, () => paths[Math.floor(random() * paths.length)] ?? '/')
}

/** A build of our server (the current one or the --before one), as opposed to a baseline. */
function isOurs(t: { name: string }): boolean {
  return t.name === 'doi-proxy' || t.name.startsWith(BEFORE_PREFIX)
}

async function withTarget<T>(startTarget: Starter, fn: (t: Target) => Promise<T>): Promise<T> {
  const target = await startTarget()
  try {
    return await fn(target)
  } finally {
    await target.stop()
  }
}

/** Start every server at once, run `fn` with all of them, stop them all (also when one fails to start). */
async function withTargets<T>(starts: readonly Starter[], fn: (targets: Target[]) => Promise<T>): Promise<T> {
  const settled = await Promise.allSettled(starts.map(async (start) => await start()))
  const targets = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
  try {
    for (const r of settled) if (r.status === 'rejected') throw r.reason
    return await fn(targets)
  } finally {
    await Promise.all(targets.map(async (t) => await t.stop()))
  }
}

function statusNote(result: LoadResult): string {
  const parts = Object.entries(result.statuses).map(([code, n]) => `${code}×${n}`)
  if (result.errors > 0) parts.push(`errors ${result.errors}`)
  if (result.timeouts > 0) parts.push(`timeouts ${result.timeouts}`)
  return parts.join(' ')
}

/** Prefixes spread over several registrants, so prefix-level lookups are realistic too. */
export function doiPath(kind: string, i: number, prefixBase: number, prefixes = 20): string {
  return `/10.${prefixBase + (i % prefixes)}/${kind}.${i}`
}

interface SteadyOptions {
  headers?: Record<string, string> | undefined
  /** Drive this target with another generator than the run's (the client-ceiling check compares both). */
  generatorOf?: (t: Target) => GeneratorName
  /** Another counter (the metadata agency's requests), summed per build of ours over its warm-up and rounds and noted in its row. */
  extra?: { count: () => number; note: (n: number) => string }
  /** A second same-bytes floor process beside the first, measured in the same rounds: what noise alone makes of one server (A/A). */
  twin?: boolean
}

/**
 * `rounds` rounds over the servers: each round runs every server in turn (`measure`), in an order of its
 * own (shuffled, seeded by the round: the same in every run); each part is kept with its server, each
 * round's req/s printed. Not rotated: a rotation keeps who follows whom, so whatever one server leaves
 * on the core when its turn ends (closing connections, garbage) would always fall on the same next one.
 */
async function inRounds<S extends { t: Target; parts: LoadResult[] }>(
  ctx: Context,
  servers: readonly S[],
  measure: (a: S, round: number) => Promise<LoadResult>
): Promise<void> {
  for (let r = 0; r < ctx.settings.rounds; r++) {
    const line: string[] = []
    for (const a of roundOrder(servers, r)) {
      const part = await measure(a, r)
      a.parts.push(part)
      line.push(`${a.t.name} ${part.rps.toFixed(0)}`)
    }
    if (servers.length > 1) ctx.log(`  round ${r + 1}/${ctx.settings.rounds}: ${line.join(', ')} req/s`)
  }
}

/** The servers in round r's order: a Fisher–Yates shuffle seeded by r, the first round as listed. */
function roundOrder<T>(servers: readonly T[], r: number): T[] {
  const order = [...servers]
  if (r === 0) return order
  const random = seededRandom(1000 + r)
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const swap = order[i] as T
    order[i] = order[j] as T
    order[j] = swap
  }
  return order
}

/**
 * The steady measurement, over servers already started: warm each (every path once, then a
 * discarded warm-up run: JIT, connections), then `rounds` rounds of `roundS` seconds, each round
 * running every server in turn, in an order of its own (roundOrder).
 * A server's row merges its rounds: total requests ÷ total time, percentiles over all its latencies.
 */
async function alternate(
  ctx: Context,
  scenario: ScenarioName,
  targets: readonly Target[],
  paths: string[],
  opts: SteadyOptions = {}
): Promise<Row[]> {
  const { settings: s } = ctx
  const h = opts.headers === undefined ? {} : { headers: opts.headers }
  const extraCount = opts.extra?.count ?? (() => 0)
  const gen = (t: Target): GeneratorName => opts.generatorOf?.(t) ?? ctx.generator
  const run = async (t: Target, o: Omit<DriveOptions, 'baseUrl' | 'connections'>): Promise<LoadResult> =>
    await drive(gen(t), { baseUrl: t.baseUrl, connections: s.connections, ...h, ...o })
  const warmSequence = uniformSequence(paths, 7)
  const roundSequences = Array.from({ length: s.rounds }, (_, r) => uniformSequence(paths, 1 + r))
  const servers = targets.map((t) => ({
    t,
    parts: [] as LoadResult[],
    samples: new Samples(),
    upstream: 0,
    extra: 0,
    cpuMs: 0 as number | undefined,
    cpuRounds: [] as Array<number | undefined>,
    warmStatuses: {} as Record<string, number>
  }))
  for (const a of servers) {
    const extraBefore = extraCount()
    a.warmStatuses = await warm(a.t.baseUrl, paths, h)
    await run(a.t, { durationS: s.warmupS, paths: warmSequence })
    a.extra += extraCount() - extraBefore
  }
  await inRounds(ctx, servers, async (a, r) => {
    const upstreamBefore = await ctx.upstream.requests()
    const extraBefore = extraCount()
    // Every server gets the same sequence in a round; each round its own.
    const cpuBefore = cpuMs(a.t.pid)
    const part = await run(a.t, { durationS: s.roundS, paths: roundSequences[r] ?? warmSequence, samples: a.samples })
    const cpuAfter = cpuMs(a.t.pid)
    a.cpuMs = a.cpuMs === undefined || cpuBefore === undefined || cpuAfter === undefined ? undefined : a.cpuMs + cpuAfter - cpuBefore
    a.cpuRounds[r] = cpuBefore === undefined || cpuAfter === undefined ? undefined : (cpuAfter - cpuBefore) / Math.max(1, part.requests)
    a.extra += extraCount() - extraBefore
    a.upstream += (await ctx.upstream.requests()) - upstreamBefore
    return part
  })
  const floor = servers.find((a) => a.t.name.startsWith('floor'))
  return servers.map((a) => {
    const result = mergeLoads(a.parts, a.samples)
    const paired = floor === undefined || a === floor ? undefined : pairedRatios(a, floor)
    const pairedNote =
      paired === undefined
        ? ''
        : `; paired rounds, the median of each round's ratio to the floor's: req/s ${paired.rps.toFixed(2)}×, p99 ${paired.p99.toFixed(2)}×${paired.cpu === undefined ? '' : `, CPU per answer ${paired.cpu.toFixed(2)}×`}`
    const extraNote = (opts.extra !== undefined && isOurs(a.t) ? `; ${opts.extra.note(a.extra)}` : '') + pairedNote
    const targetNote = a.t.note === undefined ? '' : `; ${a.t.note}`
    ctx.log(
      `  ${a.t.name}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms (${statusNote(result)}; warm-up answers ${JSON.stringify(a.warmStatuses)})`
    )
    const cpuPerAnswerUs = a.cpuMs === undefined ? undefined : (a.cpuMs * 1000) / Math.max(1, result.requests)
    return {
      scenario,
      server: a.t.name,
      result,
      upstreamPerRequest: a.upstream / Math.max(1, result.requests),
      ...(cpuPerAnswerUs === undefined ? {} : { cpuPerAnswerUs }),
      ...(paired === undefined ? {} : { paired }),
      note: statusNote(result) + extraNote + targetNote
    }
  })
}

/** Each round's req/s, p99 and CPU per answer divided by the floor's of the same round; the median of each over the rounds. */
function pairedRatios(
  a: { parts: LoadResult[]; cpuRounds: Array<number | undefined> },
  floor: { parts: LoadResult[]; cpuRounds: Array<number | undefined> }
): Row['paired'] {
  const rounds = a.parts.map((part, r) => ({ part, base: floor.parts[r], cpu: a.cpuRounds[r], baseCpu: floor.cpuRounds[r] }))
  const median = (xs: number[]): number => {
    const sorted = [...xs].sort((x, y) => x - y)
    const mid = Math.floor(sorted.length / 2)
    return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2
  }
  const withBase = rounds.filter((x) => x.base !== undefined)
  if (withBase.length === 0) return undefined
  const cpus = withBase.flatMap((x) => (x.cpu === undefined || x.baseCpu === undefined || x.baseCpu <= 0 ? [] : [x.cpu / x.baseCpu]))
  return {
    rps: median(withBase.map((x) => x.part.rps / (x.base?.rps ?? NaN))),
    p99: median(withBase.map((x) => x.part.p99 / (x.base?.p99 ?? NaN))),
    cpu: cpus.length === withBase.length ? median(cpus) : undefined
  }
}

/**
 * Ask each build of ours whether it has what the scenario measures (`check` returns why not, or
 * undefined). A build without it gets a skipped row; when no build has it, nothing is measured
 * (a floor alone compares with nothing).
 */
async function probeOurs(
  ctx: Context,
  scenario: ScenarioName,
  targets: readonly Target[],
  check: (t: Target) => Promise<string | undefined>
): Promise<{ measure: Target[]; skipped: Map<Target, Row> }> {
  const skipped = new Map<Target, Row>()
  for (const t of targets) {
    if (!isOurs(t)) continue
    const why = await check(t)
    if (why === undefined) continue
    skipped.set(t, { scenario, server: t.name, skipped: why })
    ctx.log(`  ${t.name}: ${why}`)
  }
  if (targets.every((t) => !isOurs(t) || skipped.has(t))) return { measure: [], skipped }
  return { measure: targets.filter((t) => !skipped.has(t)), skipped }
}

/**
 * Start the lineup at once, probe ours, start the same-bytes floor from our answer, measure in
 * alternating rounds; rows in lineup order, the floor after ours.
 */
async function steady(
  ctx: Context,
  scenario: ScenarioName,
  starts: readonly Starter[],
  paths: string[],
  opts: SteadyOptions & { check?: (t: Target) => Promise<string | undefined> } = {}
): Promise<Row[]> {
  return await withTargets(starts, async (started) => {
    const { measure: probed, skipped } =
      opts.check === undefined
        ? { measure: [...started], skipped: new Map<Target, Row>() }
        : await probeOurs(ctx, scenario, started, opts.check)
    const current = probed.find((t) => t.name === 'doi-proxy') ?? probed.find(isOurs)
    let floor: Target | undefined
    let twin: Target | undefined
    try {
      const sameBytes = !ctx.profile && current !== undefined ? await sameBytesFloor(ctx, current, paths, opts.headers) : undefined
      floor = sameBytes?.floor
      if (sameBytes !== undefined && opts.twin === true) twin = await twinFloor(ctx, sameBytes, opts.headers)
      const floors = [floor, twin].filter((t) => t !== undefined)
      const oursCount = started.filter(isOurs).length
      const targets = [...started.slice(0, oursCount), ...floors, ...started.slice(oursCount)]
      const measure = floor === undefined ? probed : [...probed.filter(isOurs), ...floors, ...probed.filter((t) => !isOurs(t))]
      const measured = measure.length === 0 ? [] : await alternate(ctx, scenario, measure, paths, opts)
      return targets.flatMap((t) => {
        const row = skipped.get(t) ?? measured[measure.indexOf(t)]
        return row === undefined ? [] : [row]
      })
    } finally {
      await twin?.stop()
      await floor?.stop()
    }
  })
}

/**
 * A second process of the same floor, writing the first one's answers: the same server, so its ratio to the
 * floor is what this run's noise alone makes of one server (four identical processes measured 0.87–1.02×
 * apart in 2 s rounds on 2026-11-25); a difference between ours and the floor smaller than that is not shown.
 */
async function twinFloor(ctx: Context, first: SameBytesFloor, headers?: Record<string, string>): Promise<Target> {
  const twin = await startFloor({ answersFile: first.answersFile, name: TWIN_FLOOR, workers: oursWorkers(ctx.serverEnv) })
  return await confirmFloor(ctx, twin, {
    ours: await bytesOf(first.floor, first.checkPaths, headers),
    floor: await bytesOf(twin, first.checkPaths, headers),
    but: 'Date',
    says: "the first floor's answers",
    note: "a second process of the same floor, writing the same answers: its ratio to the floor is the run's own noise"
  })
}

// ------------------------------------------------------------------ client: the load generator's own ceiling

/**
 * What the load generator can send: a trivial server at full speed (nginx `return 204` from one
 * worker, a C server doing nothing; and node:http answering an empty 204), driven by the run's
 * generator and, beside it, by autocannon in this process, in the same alternating rounds. A row of
 * another scenario near the ceiling was limited by the client, not by the server.
 */
async function client(ctx: Context): Promise<Row[]> {
  const starts: Starter[] = []
  if (ctx.nginx) starts.push(async () => await startNginx('return-204'))
  starts.push(async () => await startFloor({ empty: true, name: 'node:http return 204' }))
  return await withTargets(starts, async (servers) => {
    const generators: GeneratorName[] = ctx.generator === 'wrk' ? ['wrk', 'autocannon'] : ['autocannon']
    const generatorOf = new Map<Target, GeneratorName>()
    const targets: Target[] = []
    for (const g of generators) {
      for (const t of servers) {
        const named: Target = { ...t, name: `${t.name}, driven by ${g === 'wrk' ? 'wrk -t1' : 'autocannon (in-process)'}` }
        generatorOf.set(named, g)
        targets.push(named)
      }
    }
    const rows = await alternate(ctx, 'client', targets, ['/'], { generatorOf: (t) => generatorOf.get(t) ?? ctx.generator })
    if (!ctx.nginx) rows.push({ scenario: 'client', server: 'nginx return 204', skipped: NGINX_MISSING })
    return rows
  })
}

// ------------------------------------------------------------------ hot

async function hot(ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => doiPath('hot', i, 1000))
  const rows = await steady(ctx, 'hot', lineup(ctx, true), paths, { twin: true })
  if (!ctx.nginx && !ctx.profile) rows.push({ scenario: 'hot', server: 'nginx proxy_cache', skipped: NGINX_MISSING })
  return rows
}

// ------------------------------------------------------------------ zipf

/**
 * nginx's upstream concurrency as configured in bench/lib/nginx.ts: no `max_conns` on the upstream
 * (`keepalive 32` only bounds the idle connections it keeps), and proxy_cache_lock only merges misses
 * for the same key, so distinct misses go upstream at once, as many as the client has connections.
 * (Open-source nginx cannot queue at a max_conns: it answers 502, so nginx cannot be held to our 16.)
 */
const NGINX_UPSTREAM_NOTE = 'upstream concurrency unbounded in its config (no max_conns), so up to the 64 client connections'

async function zipf(ctx: Context): Promise<Row[]> {
  const s = ctx.settings
  // A few extra: the generator may send a little more than `amount` before it stops.
  const listLength = s.zipfWarmupRequests + s.zipfMeasureRequests + 10_000
  const sample = zipfSampler(s.zipfDois, 1.0, seededRandom(42))
  const sequence = Array.from({ length: listLength }, () => doiPath('zipf', sample(), 2000, 50))
  ctx.log(`  zipf: ${s.zipfDois} DOIs, ${listLength} precomputed requests`)
  // Twice for ours: on its defaults (UPSTREAM_MAX_CONCURRENT=16, polite to doi.org), and at nginx's
  // upstream concurrency (as many as the client's connections), so the two compare like for like.
  const same = String(s.connections)
  const sameEnv = { ...ctx.serverEnv, UPSTREAM_MAX_CONCURRENT: same, UPSTREAM_CONNECTIONS: same }
  const ours = oursStarters(ctx)
  const starts: Array<{ start: Starter; note: string }> = [
    ...ours.map((start) => ({ start, note: 'upstream concurrency: UPSTREAM_MAX_CONCURRENT=16 (our default, polite to doi.org)' }))
  ]
  if (!ctx.profile) {
    starts.push({
      start: async () => await startOurs({ upstream: ctx.upstream, env: sameEnv, name: `doi-proxy, upstream ${same} (= nginx)` }),
      note: `upstream concurrency: UPSTREAM_MAX_CONCURRENT=${same} UPSTREAM_CONNECTIONS=${same}, the same as nginx's here`
    })
    starts.push({
      start: async () => await startFloor({ name: 'floor (node:http, fixed 302)' }),
      note: 'a fixed 302 for every request: not a same-bytes floor'
    })
    if (ctx.nginx) starts.push({ start: async () => await startNginx(ctx.upstream), note: NGINX_UPSTREAM_NOTE })
  }
  const rows: Row[] = []
  for (const { start, note } of starts) {
    rows.push(
      await withTarget(start, async (t) => {
        await drive(ctx.generator, { baseUrl: t.baseUrl, connections: s.connections, amount: s.zipfWarmupRequests, paths: sequence })
        // Every server starts measuring at the same point of the sequence.
        const before = await ctx.upstream.requests()
        const result = await drive(ctx.generator, {
          baseUrl: t.baseUrl,
          connections: s.connections,
          amount: s.zipfMeasureRequests,
          paths: sequence,
          startAt: s.zipfWarmupRequests,
          countCache: true
        })
        const upstream = (await ctx.upstream.requests()) - before
        const hitRatio = result.cacheAnswers > 0 ? result.cacheHits / result.cacheAnswers : undefined
        ctx.log(
          `  ${t.name}: ${result.rps.toFixed(0)} req/s, p99 ${result.p99.toFixed(2)} ms, hit ratio ${hitRatio?.toFixed(3) ?? '—'}, upstream/request ${(upstream / Math.max(1, result.requests)).toFixed(3)}`
        )
        return {
          scenario: 'zipf',
          server: t.name,
          result,
          upstreamPerRequest: upstream / Math.max(1, result.requests),
          ...(hitRatio === undefined ? {} : { hitRatio }),
          note: `${statusNote(result)}; requests ${s.zipfWarmupRequests + 1}–${s.zipfWarmupRequests + s.zipfMeasureRequests} of the sequence; ${note}`
        }
      })
    )
  }
  if (!ctx.nginx && !ctx.profile) rows.push({ scenario: 'zipf', server: 'nginx proxy_cache', skipped: NGINX_MISSING })
  return rows
}

// ------------------------------------------------------------------ cold

/**
 * The miss floor for cold (bench/baselines/miss-floor.mjs): bare node:http + undici writing our redirect
 * around each record's URL. Its template is our answer to a miss, captured; checked, not assumed: ours
 * and the floor are each asked for a DOI neither has seen, and their answers compared (every header in
 * order and case, and the body; Date and Expires left out: both are clock readings).
 */
async function missFloor(ctx: Context, ours: Target, path: (name: string) => string): Promise<Target> {
  const answer = await captureAnswer(ours.baseUrl, path('template'))
  const url = answer.headers.find(([name]) => name.toLowerCase() === 'location')?.[1]
  if (url === undefined) throw new Error(`${ours.name} answered a miss with ${answer.status} and no Location: no miss floor`)
  const floor = await startMissFloor(ctx.upstream, writeAnswerFile({ ...answer, url }))
  const clockless = (bytes: string): string => bytes.replace(/\["expires","[^"]*"\]/i, '["expires",""]')
  return await confirmFloor(ctx, floor, {
    ours: clockless(await answerBytes(ours.baseUrl, path('check'))),
    floor: clockless(await answerBytes(floor.baseUrl, path('check'))),
    but: 'Date and Expires',
    says: `${ours.name}'s answer to a miss around each record's URL (${describeAnswer(answer)})`,
    note: `asks the upstream with undici and writes ${ours.name}'s answer to a miss around the record's URL (${describeAnswer(answer)})`
  })
}

/**
 * Misses: every request a new DOI, on 8 connections. Ours (and the --before build), the miss floor and
 * the fake upstream asked directly, by the same client at the same concurrency, in alternating rounds
 * of the same run; a row's "added latency" is its p50 / p99 minus the direct row's: what it adds to a
 * miss. The miss floor's is the least any server in Node adds here.
 */
async function cold(ctx: Context): Promise<Row[]> {
  const s = ctx.settings
  const latency = ctx.upstream.latencyMs
  const run = Date.now().toString(36)
  // More new DOIs than a round can ask for (at most connections ÷ latency per second), never one twice.
  const perRound = Math.ceil((s.coldConnections * Math.max(s.roundS, s.warmupS) * 1000) / Math.max(1, latency)) * 4 + 2_000
  const sequence = (kind: string, round: string): string[] => Array.from({ length: perRound }, (_, i) => `${kind}.${run}.${round}.${i}`)
  const oursPath = (name: string): string => `/10.3000/cold.${name}`
  const directPath = (name: string): string => `/api/handles/10.3000/direct.${name}`
  return await withTargets(oursStarters(ctx), async (ours) => {
    const direct: Target = { name: 'fake upstream (direct)', baseUrl: ctx.upstream.origin, port: ctx.upstream.port, stop: async () => {} }
    const floor = ctx.profile || ours[0] === undefined ? undefined : await missFloor(ctx, ours[0], (name) => oursPath(`${run}.${name}`))
    try {
      const servers = [...ours, ...(floor === undefined ? [] : [floor]), ...(ctx.profile ? [] : [direct])].map((t) => ({
        t,
        parts: [] as LoadResult[],
        samples: new Samples(),
        upstream: 0,
        cpuMs: 0 as number | undefined
      }))
      const pathsFor = (t: Target, round: string): string[] =>
        sequence(t === floor ? 'f' : 'x', round).map(t === direct ? directPath : oursPath)
      for (const a of servers) {
        await drive(ctx.generator, {
          baseUrl: a.t.baseUrl,
          connections: s.coldConnections,
          durationS: s.warmupS,
          paths: pathsFor(a.t, 'warm')
        })
      }
      await inRounds(ctx, servers, async (a, r) => {
        const before = await ctx.upstream.requests()
        const cpuBefore = cpuMs(a.t.pid)
        const part = await drive(ctx.generator, {
          baseUrl: a.t.baseUrl,
          connections: s.coldConnections,
          durationS: s.roundS,
          paths: pathsFor(a.t, String(r)),
          samples: a.samples
        })
        const cpuAfter = cpuMs(a.t.pid)
        a.cpuMs = a.cpuMs === undefined || cpuBefore === undefined || cpuAfter === undefined ? undefined : a.cpuMs + cpuAfter - cpuBefore
        a.upstream += (await ctx.upstream.requests()) - before
        return part
      })
      const results = servers.map((a) => ({ a, result: mergeLoads(a.parts, a.samples) }))
      const base = results.find((x) => x.a.t === direct)?.result
      const floorResult = results.find((x) => x.a.t === floor)?.result
      return results.map(({ a, result }) => {
        const isDirect = a.t === direct
        const cpuPerAnswerUs = a.cpuMs === undefined ? undefined : (a.cpuMs * 1000) / Math.max(1, result.requests)
        // Ours against the upstream asked directly; the direct row against the configured latency.
        const addedP50 = isDirect || base === undefined ? result.p50 - latency : result.p50 - base.p50
        const addedP99 = isDirect || base === undefined ? result.p99 - latency : result.p99 - base.p99
        const against =
          isDirect || base === undefined
            ? `minus the configured ${latency} ms`
            : a.t === floor
              ? 'minus the fake upstream asked directly in this run: the least a server in Node adds to a miss here'
              : 'minus the fake upstream asked directly in this run (target ≤ 1 ms p50, ≤ 3 ms p99)' +
                (floorResult === undefined
                  ? ''
                  : `; minus the miss floor: ${(result.p50 - floorResult.p50).toFixed(2)} / ${(result.p99 - floorResult.p99).toFixed(2)} ms`)
        ctx.log(
          `  ${a.t.name}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms; added p50 ${addedP50.toFixed(2)} ms, p99 ${addedP99.toFixed(2)} ms (${against})`
        )
        return {
          scenario: 'cold',
          server: a.t.name,
          result,
          upstreamPerRequest: a.upstream / Math.max(1, result.requests),
          addedP50,
          addedP99,
          ...(cpuPerAnswerUs === undefined ? {} : { cpuPerAnswerUs }),
          note: `${statusNote(result)}; ${s.coldConnections} connections; upstream latency ${latency} ms; added latency = ${against}${a.t.note === undefined ? '' : `; ${a.t.note}`}`
        }
      })
    } finally {
      await floor?.stop()
    }
  })
}

// ------------------------------------------------------------------ storm

async function storm(ctx: Context): Promise<Row[]> {
  const rows: Row[] = []
  for (const start of oursStarters(ctx)) rows.push(await withTarget(start, async (t) => await stormOne(ctx, t)))
  return rows
}

async function stormOne(ctx: Context, t: Target): Promise<Row> {
  const n = ctx.settings.stormSize
  // The prefix's own records (prefix, namespace locations) are fetched first, so the storm counts the DOI alone.
  await warm(t.baseUrl, ['/10.4000/storm-primer'])
  const pool = new Pool(t.baseUrl, { connections: n, pipelining: 1 })
  try {
    // Open every connection before the storm, so the requests really arrive together.
    await Promise.all(
      Array.from({ length: n }, async () => {
        await (await pool.request({ path: '/healthz', method: 'GET' })).body.dump()
      })
    )
    const path = `/10.4000/storm.${Date.now().toString(36)}`
    const before = await ctx.upstream.requests()
    const started = performance.now()
    const latencies: number[] = []
    const statuses: Record<string, number> = {}
    await Promise.all(
      Array.from({ length: n }, async () => {
        const t0 = performance.now()
        const res = await pool.request({ path, method: 'GET' })
        await res.body.dump()
        latencies.push(performance.now() - t0)
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
      })
    )
    const wallMs = performance.now() - started
    const upstream = (await ctx.upstream.requests()) - before
    latencies.sort((a, b) => a - b)
    const pct = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN
    const result: LoadResult = {
      requests: n,
      durationS: wallMs / 1000,
      rps: n / (wallMs / 1000),
      p50: pct(50),
      p90: pct(90),
      p99: pct(99),
      max: pct(100),
      statuses,
      errors: 0,
      timeouts: 0,
      cacheHits: 0,
      cacheAnswers: 0
    }
    const verdict = upstream === 1 ? 'OK: exactly 1 upstream request' : `FAIL: ${upstream} upstream requests (must be 1)`
    ctx.log(
      `  ${t.name}: ${n} concurrent requests for one cold DOI → ${upstream} upstream request(s), p99 ${result.p99.toFixed(1)} ms (${statusNote(result)})`
    )
    return {
      scenario: 'storm',
      server: t.name,
      result,
      upstreamPerRequest: upstream / n,
      note: `${verdict}; ${statusNote(result)}; ${n} requests in ${wallMs.toFixed(0)} ms`
    }
  } finally {
    await pool.close()
  }
}

// ------------------------------------------------------------------ not-found

async function notFound(ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.notFoundDois }, (_, i) => `/10.5000/missing-${i}`)
  return await steady(ctx, 'not-found', lineup(ctx, false), paths)
}

// ------------------------------------------------------------------ api and conneg: only once the server has them

async function api(ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => `/api/handles${doiPath('api', i, 1000)}`)
  return await steady(ctx, 'api', lineup(ctx, false), paths, {
    check: async (t) => {
      const res = await probe(t.baseUrl + (paths[0] ?? '/'))
      const ok = res.status === 200 && (res.headers.get('content-type') ?? '').includes('json') && res.body.includes('"responseCode":1')
      return ok ? undefined : `skipped: not available (GET ${paths[0]} answered ${res.status})`
    }
  })
}

const CONNEG_ACCEPT = { accept: 'application/x-bibtex' }

async function conneg(ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => doiPath('conneg', i, 1000))
  return await steady(ctx, 'conneg', lineup(ctx, false), paths, {
    headers: CONNEG_ACCEPT,
    check: async (t) => {
      const res = await probe(t.baseUrl + (paths[0] ?? '/'), CONNEG_ACCEPT)
      const location = res.headers.get('location') ?? ''
      const ok = res.status >= 300 && res.status <= 308 && location.startsWith('https://data.example/')
      return ok ? undefined : `skipped: conneg not available (answered ${res.status} ${location})`
    }
  })
}

// ------------------------------------------------------------------ metadata (docs/metadata.md)

/** A cached metadata answer (METADATA_MODE=fetch, BibTeX fetched once per DOI from a local fake agency) against the floor. */
async function metadata(ctx: Context): Promise<Row[]> {
  const agency = await startBenchAgency(ctx.settings.hotDois)
  try {
    const env = {
      ...ctx.serverEnv,
      LOCAL_STORE_DIR: agency.storeDir,
      LOCAL_STORE_WATCH: 'false',
      METADATA_MODE: 'fetch',
      METADATA_HOSTS: agency.host
    }
    return await steady(ctx, 'metadata', lineup(ctx, false, env), agency.paths, {
      headers: CONNEG_ACCEPT,
      check: async (t) => {
        const res = await probe(t.baseUrl + (agency.paths[0] ?? '/'), CONNEG_ACCEPT)
        return res.status === 200 && res.body.startsWith('@misc') ? undefined : `skipped: metadata not answered (${res.status})`
      },
      extra: { count: agency.requests, note: (n) => `agency requests ${n} for ${agency.paths.length} DOIs (records from a local store)` }
    })
  } finally {
    await agency.stop()
  }
}

// ------------------------------------------------------------------ linkout

/**
 * A cached link-out chain answer (docs/institutional.md §8) against a cached redirect, in the same
 * alternating rounds: ours plain (the hot path), ours with a local service that is not the reader's
 * (its redirects go through the router, private), ours with a catch-all chain whose open-access step
 * finds a copy (Unpaywall's data feed written for these DOIs: no call leaves the machine), the floor.
 */
async function linkout(ctx: Context): Promise<Row[]> {
  const paths = Array.from({ length: ctx.settings.hotDois }, (_, i) => doiPath('linkout', i, 1000))
  const dir = join(import.meta.dirname, '..', '.tmp')
  mkdirSync(dir, { recursive: true })
  const feed = join(dir, 'oa-feed.jsonl')
  writeFileSync(
    feed,
    paths
      .map((p) => JSON.stringify({ doi: p.slice(1), is_oa: true, best_oa_location: { url: `https://repository.example.org${p}.pdf` } }))
      .join('\n')
  )
  const env = ctx.serverEnv
  const service = JSON.stringify([
    { id: 'library', name: 'Library', url: 'https://sfx.example.edu/sfx?id=doi:{doi}', networks: ['192.0.2.0/24'] }
  ])
  const chain = JSON.stringify([
    { id: 'anywhere', name: 'Open access first', networks: ['0.0.0.0/0', '::/0'], linkout: ['open-access', 'registered'] }
  ])
  const starts: Starter[] = [
    async () => await startOurs({ upstream: ctx.upstream, env }),
    async () =>
      await startOurs({ upstream: ctx.upstream, env: { ...env, LOCAL_SERVICES: service }, name: "doi-proxy, a service not the reader's" }),
    async () =>
      await startOurs({
        upstream: ctx.upstream,
        env: { ...env, LOCAL_SERVICES: chain, OA_PROVIDER: 'file', OA_SNAPSHOT_FILE: feed },
        name: 'doi-proxy, chain: open copy'
      })
  ]
  // One after the other: four Node servers starting at once on a busy machine miss the 15 s start limit.
  const targets: Target[] = []
  try {
    for (const start of starts) targets.push(await start())
    const plain = targets[0]
    // The floor writes the plain server's answer (a cached redirect), byte for byte.
    if (plain !== undefined) targets.push((await sameBytesFloor(ctx, plain, paths)).floor)
    const chainTarget = targets[2]
    if (chainTarget !== undefined) {
      const res = await probe(`${chainTarget.baseUrl}${paths[0] ?? ''}`)
      const location = res.headers.get('location') ?? ''
      if (!location.startsWith('https://repository.example.org/')) {
        throw new Error(`the chain server did not answer with the open copy (${res.status} ${location})`)
      }
    }
    return await alternate(ctx, 'linkout', targets, paths)
  } finally {
    await Promise.all(targets.map(async (t) => await t.stop()))
  }
}

export const RUNNERS: Record<ScenarioName, (ctx: Context) => Promise<Row[]>> = {
  client,
  hot,
  zipf,
  cold,
  storm,
  'not-found': notFound,
  api,
  conneg,
  metadata,
  linkout,
  // Its figures are not requests per second against a floor: it writes its own section of RESULTS.md.
  batch: async (ctx) => {
    writeSection('batch', await batchSection(ctx))
    return []
  }
}
