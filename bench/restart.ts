/**
 * Restart at scale: how long `node dist/main.js` takes to answer /readyz 200 when CACHE_FILE holds
 * 1,000,000 records, and its RSS then.
 *
 *   npm run bench:restart                      1,000,000 records
 *   npm run bench:restart -- --records 200000
 *
 * The snapshot is made by the server itself, then scaled: our server (the work tree's build) resolves a
 * few hundred DOIs through the fake upstream and writes CACHE_FILE at shutdown (src/resolve/cache/cache-file.ts:
 * its header names the source, src/resolve/cache/source.ts, so the file is one the server will load);
 * its DOI lines are then repeated under new DOI names, each line's entry kept byte for byte, up to the
 * count. The server is started three times, each a fresh process: with no snapshot (the baseline), then
 * twice with the big one (the better of the two is reported, the other printed). Writes the restart section of bench/RESULTS.md.
 */
import { once } from 'node:events'
import { createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { forEachOption } from './lib/args.js'
import { ensureBuilt, startOurs, startUpstream, TMP } from './lib/processes.js'
import type { Target, UpstreamProcess } from './lib/processes.js'
import { machine, runBench, writeSection, RESULTS_PATH } from './lib/results.js'
import { codeVersion } from './lib/children.js'

const HELP = `Usage: npm run bench:restart [-- options]
  --records N   records in the snapshot (default 1000000)
  --seed N      DOIs resolved to make the seed snapshot (default 500)`

const TARGET_S = 10

function log(line: string): void {
  process.stdout.write(`${line}\n`)
}

/** Resolve `seed` DOIs with a snapshot file configured, stop the server: it writes the file at shutdown. */
async function seedSnapshot(upstream: UpstreamProcess, file: string, seed: number): Promise<void> {
  const server = await startOurs({ upstream, env: { CACHE_FILE: file, CACHE_SNAPSHOT_INTERVAL_SECONDS: '0', LOG_LEVEL: 'warn' } })
  try {
    for (let i = 0; i < seed; i++) {
      const res = await fetch(`${server.baseUrl}/10.${1000 + (i % 50)}/restart.seed.${i}`, { redirect: 'manual' })
      await res.arrayBuffer()
      if (res.status !== 302) throw new Error(`seeding: /10.${1000 + (i % 50)}/restart.seed.${i} answered ${res.status}`)
    }
  } finally {
    await server.stop()
  }
}

/** The seed file scaled to `records` entries: its DOI lines repeated under new names, the rest kept once. */
async function scaleSnapshot(seedFile: string, file: string, records: number): Promise<number> {
  const lines = readFileSync(seedFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
  const header = lines[0]
  const body = lines.slice(1, -1)
  if (header === undefined || !header.includes('"doi-proxy-cache"') || !(lines[lines.length - 1] ?? '').startsWith('{"end":true')) {
    throw new Error(`${seedFile} is not a complete snapshot`)
  }
  // Keys are stored as the server normalises them (upper case).
  const seedPrefix = /^\["10\.\d+\/restart\.seed\.\d+",/i
  const dois = body.filter((l) => seedPrefix.test(l)).map((l) => l.slice(l.indexOf('",') + 1))
  const others = body.filter((l) => !seedPrefix.test(l))
  if (dois.length === 0) throw new Error(`${seedFile} holds no seeded DOI`)
  const out = createWriteStream(file)
  const write = async (text: string): Promise<void> => {
    if (!out.write(text)) await once(out, 'drain')
  }
  await write(header + '\n')
  // Prefix and namespace records first (least recently used first, as the server writes them).
  for (const l of others) await write(l + '\n')
  const wanted = Math.max(0, records - others.length)
  let chunk = ''
  for (let i = 0; i < wanted; i++) {
    // Realistic DOI names (~25 characters) over 500 prefixes, as bench/memory.ts makes them.
    chunk += `["10.${1000 + (i % 500)}/RESTART.${2000 + (i % 25)}.${i.toString(36).padStart(6, '0').toUpperCase()}"${dois[i % dois.length] ?? ''}\n`
    if (chunk.length > 1 << 20) {
      await write(chunk)
      chunk = ''
    }
  }
  await write(chunk + JSON.stringify({ end: true, entries: others.length + wanted }) + '\n')
  out.end()
  await once(out, 'finish')
  return others.length + wanted
}

async function metric(t: Target, name: string): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
  return Number(line?.split(' ').pop() ?? NaN)
}

interface Start {
  readyS: number
  rssMiB: number
  entries: number
  hit: string
  stopS: number
}

/** Start a fresh server with `file` (or none), time it until /readyz is 200, read its RSS and cache size. */
async function timedStart(upstream: UpstreamProcess, file: string, records: number): Promise<Start> {
  const started = performance.now()
  const server = await startOurs({
    upstream,
    // A long grace: the stop writes the snapshot again, and is timed too.
    env: {
      CACHE_FILE: file,
      CACHE_SNAPSHOT_INTERVAL_SECONDS: '0',
      SHUTDOWN_GRACE_MS: '60000',
      CACHE_MAX_ENTRIES: String(Math.max(200_000, records * 2)),
      CACHE_MAX_BYTES: String(16 * 2 ** 30),
      LOG_LEVEL: 'warn'
    },
    readyTimeoutMs: 300_000,
    stopGraceMs: 70_000
  })
  const readyS = (performance.now() - started) / 1000
  let result: Omit<Start, 'stopS'>
  let stopS = NaN
  try {
    const rssMiB = (await metric(server, 'doi_proxy_process_resident_memory_bytes')) / 2 ** 20
    const entries = await metric(server, 'doi_proxy_cache_entries')
    // A record from the end of the file answers from the cache, without asking the upstream.
    const before = await upstream.requests()
    const res = await fetch(`${server.baseUrl}/10.1000/restart.2000.${'0'.padStart(6, '0')}`, { redirect: 'manual' })
    await res.arrayBuffer()
    const hit = `${res.status} ${res.headers.get('x-cache') ?? '-'}${(await upstream.requests()) > before ? ' (asked the upstream)' : ''}`
    result = { readyS, rssMiB, entries, hit }
  } finally {
    // SIGTERM until the process is gone: it writes CACHE_FILE at shutdown (killed if not gone in 70 s).
    const stopping = performance.now()
    await server.stop()
    stopS = (performance.now() - stopping) / 1000
  }
  return { ...result, stopS }
}

/** A server that has not exited 70 s after SIGTERM is killed (SHUTDOWN_GRACE_MS is 60 s here). */
function stopText(s: number): string {
  return s >= 69.9 ? `${s.toFixed(1)} (killed: not done in 70 s)` : s.toFixed(2)
}

async function main(): Promise<void> {
  let records = 1_000_000
  let seed = 500
  forEachOption(process.argv.slice(2), HELP, (arg, value) => {
    if (arg === '--records') records = Number(value())
    else if (arg === '--seed') seed = Number(value())
    else return false
    return true
  })
  if (!Number.isInteger(records) || records < 1 || !Number.isInteger(seed) || seed < 1) {
    throw new Error('--records and --seed want positive integers')
  }
  ensureBuilt(log)
  const loadAtStart = loadavg()[0] ?? NaN
  const dir = join(TMP, 'restart')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const upstream = await startUpstream(0)
  try {
    const seedFile = join(dir, 'seed.snapshot')
    await seedSnapshot(upstream, seedFile, seed)
    const file = join(dir, 'big.snapshot')
    const t0 = performance.now()
    const written = await scaleSnapshot(seedFile, file, records)
    const mib = statSync(file).size / 2 ** 20
    log(`snapshot: ${written} records, ${mib.toFixed(0)} MiB, written in ${((performance.now() - t0) / 1000).toFixed(1)} s (${file})`)
    const empty = await timedStart(upstream, join(dir, 'none.snapshot'), records)
    log(`no snapshot: ready in ${empty.readyS.toFixed(2)} s, RSS ${empty.rssMiB.toFixed(0)} MiB`)
    const runs: Start[] = []
    for (let i = 0; i < 2; i++) {
      // The server renames nothing it loads cleanly, but a stop writes the file again (at shutdown): start from the same bytes.
      const copy = join(dir, `run-${i}.snapshot`)
      rmSync(copy, { force: true })
      await (await import('node:fs/promises')).copyFile(file, copy)
      const run = await timedStart(upstream, copy, records)
      log(
        `${written} records: ready in ${run.readyS.toFixed(2)} s, RSS ${run.rssMiB.toFixed(0)} MiB, cache entries ${run.entries}, a loaded DOI answered ${run.hit}; stop (writing the snapshot) took ${run.stopS.toFixed(2)} s`
      )
      runs.push(run)
      if (i > 0) rmSync(copy, { force: true })
    }
    // The next restart of a real deployment: CACHE_FILE as start 1 left it, beside one file per worker
    // (WORKERS>1 writes CACHE_FILE.<n>; every worker reads them all, src/services/cache-tiers.ts).
    const family = readdirSync(dir).filter((n) => n.startsWith('run-0.snapshot')).length
    const again = await timedStart(upstream, join(dir, 'run-0.snapshot'), records)
    log(
      `restarted from what start 1 wrote (${family} files): ready in ${again.readyS.toFixed(2)} s, RSS ${again.rssMiB.toFixed(0)} MiB, cache entries ${again.entries}, a loaded DOI answered ${again.hit}; stop took ${again.stopS.toFixed(2)} s`
    )
    const best = runs.reduce((a, b) => (b.readyS < a.readyS ? b : a))
    const perRecord = ((best.rssMiB - empty.rssMiB) * 2 ** 20) / written
    const verdict = best.readyS <= TARGET_S ? `within the ${TARGET_S} s target` : `OVER the ${TARGET_S} s target`
    writeSection(
      'restart',
      [
        '## Restart with a large snapshot',
        '',
        `Machine: ${machine()}  `,
        `Date: ${new Date().toISOString()}  `,
        `Code: doi-proxy is ${codeVersion()}  `,
        `Load average (1 min): ${loadAtStart.toFixed(2)} at the start, ${(loadavg()[0] ?? NaN).toFixed(2)} at the end (2 cores: above 1, the times are inflated by other work)  `,
        `Method (\`npm run bench:restart\`, bench/restart.ts): the server resolves ${seed} DOIs through the fake upstream and writes CACHE_FILE at shutdown; its DOI lines are repeated under new DOI names (each entry byte for byte, header and prefix records as written) up to ${written.toLocaleString('en')} records (${mib.toFixed(0)} MiB). Then \`node dist/main.js\` is started fresh with that CACHE_FILE (CACHE_MAX_ENTRIES ${Math.max(200_000, records * 2).toLocaleString('en')}, CACHE_MAX_BYTES 16 GiB), timed from spawn until \`/readyz\` answers 200 (the snapshot is loaded before the server listens), RSS from \`/metrics\` right after. Two starts with the snapshot, the faster reported; one with none for comparison; and the next restart, from the files the first start wrote when it stopped (each worker writes its own, and reads them all).`,
        '',
        '| Snapshot | Ready after (s) | RSS MiB | Cache entries | A loaded DOI answered | Stop, writing the snapshot (s) |',
        '|---|--:|--:|--:|---|--:|',
        `| none | ${empty.readyS.toFixed(2)} | ${empty.rssMiB.toFixed(0)} | ${empty.entries} | — | ${stopText(empty.stopS)} |`,
        ...runs.map(
          (r, i) =>
            `| ${written.toLocaleString('en')} records, start ${i + 1} | ${r.readyS.toFixed(2)} | ${r.rssMiB.toFixed(0)} | ${r.entries} | ${r.hit} | ${stopText(r.stopS)} |`
        ),
        `| the next restart: what start 1 wrote (${family === 1 ? 'CACHE_FILE alone: WORKERS=1' : `${family} files: CACHE_FILE and one per worker`}) | ${again.readyS.toFixed(2)} | ${again.rssMiB.toFixed(0)} | ${again.entries} | ${again.hit} | ${stopText(again.stopS)} |`,
        '',
        `**${best.readyS.toFixed(1)} s** to ready with ${written.toLocaleString('en')} records, ${verdict}; RSS ${best.rssMiB.toFixed(0)} MiB, ${perRecord.toFixed(0)} B per record over the empty start (compare the memory table: RSS per record there is measured after filling through requests).`,
        ''
      ].join('\n')
    )
    log(`wrote ${RESULTS_PATH}`)
  } finally {
    await upstream.stop()
    if (process.env.KEEP_RESTART_FILES !== '1') rmSync(dir, { recursive: true, force: true })
  }
}

runBench(main)
