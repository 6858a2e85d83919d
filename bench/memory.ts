/**
 * Memory per cached record: fill the cache through the real code path (buildApp → router →
 * resolver → undici → the fake upstream in its own process, latency 0), then compare heap and RSS
 * after a full GC with what they were before the fill.
 *
 *   npm run bench:memory                       100k and 1M records
 *   npm run bench:memory -- --counts 100000    only 100k
 *
 * Writes the memory section of bench/RESULTS.md.
 */
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import { answerFor } from './fake-upstream.js'
import { startUpstream } from './lib/processes.js'
import { machine, writeSection, RESULTS_PATH } from './lib/results.js'

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) {
  process.stderr.write('run with --expose-gc: npm run bench:memory\n')
  process.exit(2)
}

function parseCounts(argv: string[]): number[] {
  const i = argv.indexOf('--counts')
  const raw = i === -1 ? '100000,1000000' : (argv[i + 1] ?? '')
  const counts = raw
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0)
    .sort((a, b) => a - b)
  if (counts.length === 0) throw new Error('--counts wants positive integers, e.g. 100000,1000000')
  return counts
}

/** Realistic DOI names (~25 characters) over 500 prefixes. */
function doi(kind: string, i: number): string {
  return `10.${1000 + (i % 500)}/${kind}.${2000 + (i % 25)}.${i.toString(36).padStart(6, '0')}`
}

function measure(): { heap: number; rss: number } {
  for (let i = 0; i < 3; i++) gc?.()
  const m = process.memoryUsage()
  return { heap: m.heapUsed, rss: m.rss }
}

interface Sample {
  records: number
  heapPerRecord: number
  rssPerRecord: number
  heapDelta: number
  rssDelta: number
  fillSeconds: number
}

const MB = 2 ** 20

async function main(): Promise<void> {
  const counts = parseCounts(process.argv.slice(2))
  const upstream = await startUpstream(0)
  const config = buildConfig(
    {
      upstreamUrl: upstream.apiUrl,
      cacheMaxEntries: 2_000_000,
      cacheMaxBytes: 8 * 2 ** 30,
      upstreamConnections: 64,
      // The fill is a deliberate flood: no answer may be a 503 from the upstream guard's queue.
      upstreamMaxConcurrent: 64,
      upstreamQueueTimeoutMs: 120_000,
      // One client (inject) asks 64 at once: a trusted network is not held to one reader's share of the upstream.
      trustedNetworks: ['127.0.0.0/8'],
      // Full GCs of a multi-GB heap pause the loop for seconds; load shedding would turn the fill into 503s.
      maxEventLoopDelayMs: 0,
      cacheFile: '', // a fresh cache each run, and no 1M-record file at the end
      logLevel: 'silent'
    },
    {}
  )
  const app = await buildApp(config)
  await app.ready()
  const statuses: Record<string, number> = {}

  async function resolveAll(kind: string, from: number, to: number): Promise<void> {
    const concurrency = 64
    let next = from
    async function worker(): Promise<void> {
      while (next < to) {
        const res = await app.inject({ method: 'GET', url: `/${doi(kind, next++)}` })
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
  }

  const samples: Sample[] = []
  try {
    // Warm: JIT, connections, and every prefix record (and the namespace handle) cached before the baseline.
    await resolveAll('warm', 0, 2_000)
    const before = measure()
    process.stdout.write(`baseline after warm-up: heap ${(before.heap / MB).toFixed(1)} MiB, RSS ${(before.rss / MB).toFixed(1)} MiB\n`)
    const started = performance.now()
    let filled = 0
    for (const target of counts) {
      const t0 = performance.now()
      for (let from = filled; from < target; from += 50_000) {
        await resolveAll('rec', from, Math.min(target, from + 50_000))
        process.stdout.write(`  ${Math.min(target, from + 50_000)} records (${((performance.now() - t0) / 1000).toFixed(0)} s)\r`)
      }
      filled = target
      const after = measure()
      const sample: Sample = {
        records: target,
        heapDelta: after.heap - before.heap,
        rssDelta: after.rss - before.rss,
        heapPerRecord: (after.heap - before.heap) / target,
        rssPerRecord: (after.rss - before.rss) / target,
        fillSeconds: (performance.now() - started) / 1000
      }
      samples.push(sample)
      process.stdout.write(
        `\n${target} records: heap +${(sample.heapDelta / MB).toFixed(1)} MiB (${sample.heapPerRecord.toFixed(0)} B/record), RSS +${(sample.rssDelta / MB).toFixed(1)} MiB (${sample.rssPerRecord.toFixed(0)} B/record), answers ${JSON.stringify(statuses)}\n`
      )
    }
  } finally {
    await app.close()
    await upstream.stop()
  }

  // What the records weigh as upstream JSON, for scale (same handles, same fake records).
  let jsonBytes = 0
  let values = 0
  const sampleSize = 10_000
  for (let i = 0; i < sampleSize; i++) {
    const answer = answerFor(doi('rec', i))
    jsonBytes += Buffer.byteLength(JSON.stringify(answer.body))
    values += answer.status === 200 ? answer.body.values.length : 0
  }
  const table = [
    '| Records | Heap Δ MiB | Heap B/record | RSS Δ MiB | RSS B/record | Fill time s |',
    '|--:|--:|--:|--:|--:|--:|',
    ...samples.map(
      (s) =>
        `| ${s.records.toLocaleString('en-US')} | ${(s.heapDelta / MB).toFixed(1)} | ${s.heapPerRecord.toFixed(0)} | ${(s.rssDelta / MB).toFixed(1)} | ${s.rssPerRecord.toFixed(0)} | ${s.fillSeconds.toFixed(0)} |`
    )
  ].join('\n')
  writeSection(
    'memory',
    [
      '## Memory per cached record',
      '',
      `Machine: ${machine()}  `,
      `Date: ${new Date().toISOString()}  `,
      'Method: buildApp in-process (cacheMaxEntries 2,000,000, cacheMaxBytes 8 GiB), N DOIs resolved with app.inject through the fake upstream (latency 0, own process); heap and RSS after 3× global.gc(), minus the same after a 2,000-DOI warm-up (which also caches the 500 prefix records). ' +
        `Records hold ${(values / sampleSize).toFixed(2)} values on average (2–4), ${(jsonBytes / sampleSize).toFixed(0)} bytes of upstream JSON; DOIs are ~25 characters. Answers: ${JSON.stringify(statuses)}.`,
      '',
      table,
      ''
    ].join('\n')
  )
  process.stdout.write(`wrote ${RESULTS_PATH}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:memory failed: ${(err as Error)?.stack ?? String(err)}\n`)
  process.exit(1)
})
