#!/usr/bin/env node
/**
 * The `doi-proxy` command: `mirror`, which copies the records of a reading list of DOIs into an NDJSON
 * file for the local store (src/command/mirror.ts), `record`, the same with the metadata citation tools ask for,
 * and `check`, which finds the DOIs in files and asks a doi-proxy whether they are registered, and with --verify
 * whether each names the work cited, was retracted, and has a live landing page (src/command/check/), and `health`,
 * which checks once that the DOIs a repository owns still lead to their pages (src/command/health.ts), and
 * `import`, which loads the agencies' public data files into a registry copy (src/command/import/).
 * An entry point: it reads
 * process.env (the same UPSTREAM_URL, USER_AGENT, CONTACT_EMAIL and METADATA_HOSTS as the server) and exits.
 */
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { OPTIONS, upstreamUserAgent } from '../config/schema.js'
import type { Config } from '../config/schema.js'
import { mirrorExitCode, parseReadingList, runMirror } from './mirror.js'
import type { MirrorProgress, MirrorSummary, ReadingList } from './mirror.js'
import { runMetadataMirror } from './mirror-metadata.js'
import { DEFAULT_METADATA_HOSTS, parseAllowedHosts } from '../handle/metadata-hosts.js'
import { normaliseMediaType } from '../handle/metadata-types.js'
import { createMetadataFetcher } from '../resolve/metadata/agencies.js'
import { createReachability, PROBE_HANDLE, REASON_WORDS } from '../resolve/upstream/reachability.js'
import type { Reachability, UnreachableReason } from '../resolve/upstream/reachability.js'
import { createUpstreamClient } from '../resolve/upstream/client.js'
import { runCheck } from './check/command.js'
import { runHealth } from './health.js'
import { runImportCommand } from './import/command.js'
import { EXIT_INTERRUPTED, onInterrupt } from './interrupt.js'
import type { UpstreamClient } from '../resolve/upstream/client.js'

const EXIT_USAGE = 2
const EXIT_UNAVAILABLE = 69 // sysexits.h EX_UNAVAILABLE: the upstream cannot be reached

/** `record`: the types citation tools ask agencies for (citation.js, Zotero, manubot, R's rcrossref). */
const RECORD_ACCEPT = ['application/vnd.citationstyles.csl+json', 'application/x-bibtex', 'text/x-bibliography']

const HELP = `doi-proxy: a self-hosted DOI resolver

Usage:
  doi-proxy mirror [options]     copy the records of a list of DOIs into an NDJSON file the
                                 server can load as local records (see docs/local-records.md)
  doi-proxy record --dois FILE   the same with the metadata a citation tool asks for (mirror
                                 with --accept of the types below by default), for a test suite
                                 to replay offline (see docs/testing-with-doi-proxy.md)
  doi-proxy check [options] PATH...
                                 are the DOIs in these files registered? asks a running
                                 doi-proxy's batch API; --verify metadata,retraction,landing
                                 also checks the works they name (see docs/checking-dois.md
                                 and doi-proxy check --help)
  doi-proxy health --watch PREFIX | --list FILE
                                 do the DOIs we own still reach their pages? checks each
                                 one's landing page now, confirms failures, exit 1 when one
                                 is broken (see docs/health.md and doi-proxy health --help)
  doi-proxy import [options] PATH...
                                 the agencies' public data files (Crossref, DataCite) into a
                                 registry copy the server answers from (REGISTRY_COPY; see
                                 docs/registry-copy.md and doi-proxy import --help)
  doi-proxy --help               this help

Start the server with \`npm start\` (or \`node dist/main.js\`).

mirror options:
  -i, --input FILE|-       reading list: one DOI per line; blank lines and # comments are
                           skipped; doi:, https://doi.org/ and similar prefixes are accepted
                           (default: - , standard input)
  -o, --out FILE           NDJSON file to append to; handles already in it are skipped, so
                           running again resumes (default: mirror.ndjson)
  -c, --concurrency N      requests at once, 1 to 64 (default: 4)
      --retries N          extra attempts after a timeout, connection error, 5xx or 429,
                           with exponential backoff, 0 to 10 (default: 3)
      --delay-ms MS        each worker pauses this long between requests, to be polite to
                           the upstream, 0 to 60000 (default: 100)
      --upstream URL       Handle REST API base (default: $UPSTREAM_URL or
                           https://doi.org/api/handles)
      --user-agent UA      User-Agent sent upstream (default: $USER_AGENT, with
                           $CONTACT_EMAIL as mailto: when set)
      --accept TYPES       also copy each DOI's metadata in these media types, comma-
                           separated (application/x-bibtex,application/vnd.citationstyles.csl+json),
                           from its agency's content-negotiation service, into its record, so
                           an offline server answers content negotiation; only from hosts on
                           $METADATA_HOSTS (default: the agencies' services). See docs/metadata.md

record options: those of mirror, with
      --dois FILE          the list of DOIs (the same as --input); a line that is not a DOI
                           (10.prefix/suffix, or a shortDOI 10/abc) is named and not asked for
  -o, --out FILE           default: doi-records/list.ndjson
      --accept TYPES       default: ${RECORD_ACCEPT.join(',')}

Exit status: 0 when every DOI was fetched, skipped or not found; 1 when some failed or an
input line is not a DOI name; 2 for a usage error; 130 when interrupted (run again to resume).

Example:
  doi-proxy mirror --input reading-list.txt --out records/reading-list.ndjson
  doi-proxy record --dois test/dois.txt --out test/doi-records/list.ndjson
  doi-proxy mirror -i list.txt -o records/list.ndjson --accept application/x-bibtex
`

class UsageError extends Error {}

interface MirrorCommand {
  /** `record`: a list of DOIs, where a line that is not one is refused. */
  record: boolean
  input: string
  out: string
  concurrency: number
  retries: number
  delayMs: number
  upstream: string
  userAgent: string
  /** Media types of metadata to copy too (normalised); empty: records only. */
  accept: string[]
  /** METADATA_HOSTS' entries, as parseAllowedHosts writes them. */
  metadataHosts: string[]
}

function defaultOf<K extends keyof Config>(key: K): Config[K] {
  return OPTIONS[key].default
}

/** `mirror`'s options; `record` is mirror with the metadata citation tools ask for, by default, and --dois. */
function parseMirrorArgs(args: string[], env: NodeJS.ProcessEnv, record = false): MirrorCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      input: { type: 'string', short: 'i', default: '-' },
      ...(record ? { dois: { type: 'string' } } : {}),
      out: { type: 'string', short: 'o', default: record ? 'doi-records/list.ndjson' : 'mirror.ndjson' },
      concurrency: { type: 'string', short: 'c', default: '4' },
      retries: { type: 'string', default: '3' },
      'delay-ms': { type: 'string', default: '100' },
      upstream: { type: 'string' },
      'user-agent': { type: 'string' },
      accept: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) return 'help'
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument "${positionals[0] ?? ''}" (the reading list is given with --input FILE)`)
  }
  if (values.out === '' || values.out === '-') throw new UsageError(`--out must be a file name, got ${JSON.stringify(values.out)}`)
  const userAgent =
    values['user-agent'] ??
    upstreamUserAgent({
      userAgent: nonEmpty(env.USER_AGENT) ?? String(defaultOf('userAgent')),
      contactEmail: nonEmpty(env.CONTACT_EMAIL)
    })
  // eslint-disable-next-line no-control-regex
  if (userAgent.trim() === '' || /[\u0000-\u001f\u007f]/.test(userAgent)) {
    throw new UsageError(`--user-agent must be non-empty text without control characters, got ${JSON.stringify(userAgent)}`)
  }
  const dois = (values as { dois?: string }).dois
  if (dois !== undefined && values.input !== '-') throw new UsageError('give the list once: --dois FILE or --input FILE')
  return {
    record,
    input: dois ?? values.input,
    out: values.out,
    concurrency: wholeNumber('--concurrency', values.concurrency, 1, 64),
    retries: wholeNumber('--retries', values.retries, 0, 10),
    delayMs: wholeNumber('--delay-ms', values['delay-ms'], 0, 60_000),
    upstream: httpUrl(
      values.upstream !== undefined ? '--upstream' : 'UPSTREAM_URL',
      values.upstream ?? nonEmpty(env.UPSTREAM_URL) ?? String(defaultOf('upstreamUrl'))
    ),
    userAgent,
    accept: mediaTypes(values.accept ?? (record ? RECORD_ACCEPT.join(',') : undefined)),
    metadataHosts: hostList(nonEmpty(env.METADATA_HOSTS))
  }
}

function mediaTypes(raw: string | undefined): string[] {
  if (raw === undefined) return []
  const out: string[] = []
  for (const item of raw
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '')) {
    const type = normaliseMediaType(item)
    if (type === undefined) {
      throw new UsageError(`--accept takes media types such as application/x-bibtex, comma-separated; ${JSON.stringify(item)} is not one`)
    }
    if (!out.includes(type)) out.push(type)
  }
  if (out.length === 0) throw new UsageError('--accept needs at least one media type, such as application/x-bibtex')
  return out
}

function hostList(raw: string | undefined): string[] {
  const hosts = parseAllowedHosts(raw ?? [...DEFAULT_METADATA_HOSTS])
  if (typeof hosts === 'string') throw new UsageError(`METADATA_HOSTS: ${hosts}`)
  return hosts
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s.trim() === '' ? undefined : s
}

function wholeNumber(option: string, raw: string, min: number, max: number): number {
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${option} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`)
  }
  return n
}

function httpUrl(option: string, raw: string): string {
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new UsageError(`${option} must be an http(s) URL such as https://doi.org/api/handles, got ${JSON.stringify(raw)}`)
  }
  return raw.replace(/\/+$/, '')
}

async function readInput(input: string): Promise<string> {
  if (input === '-') {
    if (process.stdin.isTTY === true) throw new UsageError('no reading list: give --input FILE, or pipe DOIs into standard input')
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  }
  try {
    return await readFile(input, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read --input ${JSON.stringify(input)} (${(err as { code?: string }).code ?? String(err)})`)
  }
}

/** A one-line progress bar on a terminal, redrawn in place at most ten times a second. */
function createProgressLine(stream: NodeJS.WriteStream): { update(p: MirrorProgress): void; end(): void } {
  if (stream.isTTY !== true) return { update() {}, end() {} }
  let last = 0
  let drawn = false
  const draw = (p: MirrorProgress): void => {
    const width = 24
    const filled = p.total === 0 ? width : Math.round((p.done / p.total) * width)
    const bar = '#'.repeat(filled) + '.'.repeat(width - filled)
    stream.write(
      `\r\x1b[K[${bar}] ${p.done}/${p.total}  fetched ${p.fetched}  skipped ${p.skipped}  not found ${p.notFound}  failed ${p.failed}  related ${p.related.fetched}`
    )
    drawn = true
  }
  return {
    update(p) {
      const now = Date.now()
      if (now - last < 100 && p.done < p.total) return
      last = now
      draw(p)
    },
    end() {
      if (drawn) stream.write('\r\x1b[K')
    }
  }
}

function printSummary(summary: MirrorSummary, out: string): void {
  const lines = [
    `Mirrored ${summary.total} DOI${summary.total === 1 ? '' : 's'} into ${out}${summary.interrupted ? ' (interrupted: run the same command again to resume)' : ''}`,
    `  fetched:    ${summary.fetched}`,
    `  skipped:    ${summary.skipped} (already there)`,
    `  not found:  ${summary.notFound}`,
    `  failed:     ${summary.failed}`,
    ...(summary.invalidLines.length === 0 ? [] : [`  not DOIs:   ${summary.invalidLines.length} (refused, not asked for: see above)`]),
    `  related records (prefixes, <locs> handles, alias targets): ${summary.related.fetched} fetched, ` +
      `${summary.related.notFound} not found, ${summary.related.failed} failed`
  ]
  process.stdout.write(lines.join('\n') + '\n')
  if (summary.repairedPartialLine) {
    process.stderr.write(`note: the last line of ${out} was incomplete (an interrupted run) and was mended\n`)
  }
  for (const f of summary.failures) {
    process.stderr.write(`failed: ${f.handle}${f.neededBy === undefined ? '' : ` (${f.neededBy})`}: ${f.message}\n`)
  }
}

/**
 * Ask the upstream once before the list: when it cannot be reached at all (its host name does not
 * resolve, the connection is refused, no route), the run stops with that reason instead of failing
 * every DOI with it after its retries. Undefined when it answered (whatever it answered).
 */
async function cannotReach(
  upstream: UpstreamClient,
  reachability: Reachability
): Promise<{ reason: UnreachableReason; detail: string } | undefined> {
  await upstream.fetchRecord(PROBE_HANDLE).catch(() => {})
  const state = reachability.state()
  return state.state === 'unreachable' ? state : undefined
}

async function mirror(cmd: MirrorCommand): Promise<number> {
  const list = parseReadingList(await readInput(cmd.input), { doisOnly: cmd.record })
  // Named before any request: a mistyped list is seen at once, not after the run.
  for (const f of list.invalidLines) {
    process.stderr.write(`not a DOI name, line ${f.line}: ${f.message} (${JSON.stringify(f.text)}); not asked for\n`)
  }
  const reachability = createReachability()
  const upstream = createUpstreamClient({
    reachability,
    baseUrl: cmd.upstream,
    userAgent: cmd.userAgent,
    timeoutMs: Number(defaultOf('upstreamTimeoutMs')),
    connectTimeoutMs: Number(defaultOf('upstreamConnectTimeoutMs')),
    connections: cmd.concurrency,
    maxBodyBytes: Number(defaultOf('upstreamMaxBodyBytes'))
  })
  const unreachable = await cannotReach(upstream, reachability)
  if (unreachable !== undefined) {
    await upstream.close()
    process.stderr.write(
      `doi-proxy: cannot reach the upstream ${cmd.upstream}: ${REASON_WORDS[unreachable.reason]} (${unreachable.detail}). ` +
        'Nothing was fetched or written; check the network and --upstream (or UPSTREAM_URL), then run the same command again.\n'
    )
    return EXIT_UNAVAILABLE
  }
  const stop = onInterrupt((text) => process.stderr.write(text), 'finishing the requests in flight')
  const progress = createProgressLine(process.stderr)
  try {
    const summary = await runMirror({
      upstream,
      list,
      outPath: cmd.out,
      options: { concurrency: cmd.concurrency, retries: cmd.retries, delayMs: cmd.delayMs, signal: stop.signal },
      onProgress: (p) => progress.update(p)
    })
    progress.end()
    printSummary(summary, cmd.out)
    if (summary.interrupted) return EXIT_INTERRUPTED
    const code = mirrorExitCode(summary)
    if (cmd.accept.length === 0) return code
    const metadata = await mirrorMetadata(cmd, list, stop.signal)
    return metadata === EXIT_INTERRUPTED ? metadata : Math.max(code, metadata)
  } finally {
    stop.dispose()
    await upstream.close()
  }
}

/** The second pass: each DOI's metadata in the --accept types (src/command/mirror-metadata.ts). */
async function mirrorMetadata(cmd: MirrorCommand, list: ReadingList, signal: AbortSignal): Promise<number> {
  const timeoutMs = Number(defaultOf('metadataTimeoutMs'))
  const fetcher = createMetadataFetcher({
    hosts: cmd.metadataHosts,
    userAgent: cmd.userAgent,
    timeoutMs,
    connectTimeoutMs: Number(defaultOf('upstreamConnectTimeoutMs')),
    maxBodyBytes: Number(defaultOf('metadataMaxBodyBytes')),
    connectionsPerHost: cmd.concurrency,
    maxRedirects: Number(defaultOf('metadataMaxRedirects')),
    retry: { retries: 0, baseMs: 0, maxMs: 0 }
  })
  try {
    const s = await runMetadataMirror({
      fetcher,
      hosts: cmd.metadataHosts,
      list,
      outPath: cmd.out,
      types: cmd.accept,
      options: { concurrency: cmd.concurrency, retries: cmd.retries, delayMs: cmd.delayMs, timeoutMs, signal }
    })
    process.stdout.write(
      [
        `Metadata (${cmd.accept.join(', ')}) for ${s.wanted} DOI × type pair${s.wanted === 1 ? '' : 's'}${s.interrupted ? ' (interrupted: run the same command again to resume)' : ''}`,
        `  fetched:      ${s.fetched}`,
        `  skipped:      ${s.skipped} (already there)`,
        `  unavailable:  ${s.unavailable.length} (the agency has none of that type, or the DOI does not negotiate)`,
        `  failed:       ${s.failed.length}`
      ].join('\n') + '\n'
    )
    for (const u of s.unavailable) process.stderr.write(`unavailable: ${u.handle} ${u.type}: ${u.reason}\n`)
    for (const f of s.failed) process.stderr.write(`failed: ${f.handle} ${f.type}: ${f.message}\n`)
    return s.interrupted ? EXIT_INTERRUPTED : s.failed.length > 0 ? 1 : 0
  } finally {
    await fetcher.close()
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(HELP)
    return command === undefined ? EXIT_USAGE : 0
  }
  if (command === 'check') {
    return await runCheck(rest, { cwd: process.cwd(), env: process.env, stdout: process.stdout, stderr: process.stderr })
  }
  if (command === 'health') {
    return await runHealth(rest, { cwd: process.cwd(), env: process.env, stdout: process.stdout, stderr: process.stderr })
  }
  if (command === 'import') {
    // A second Ctrl-C leaves at once: the copy is whole after every committed batch.
    const stop = onInterrupt((text) => process.stderr.write(text), 'committing the batch being read')
    try {
      return await runImportCommand(rest, {
        cwd: process.cwd(),
        env: process.env,
        stdout: process.stdout,
        stderr: process.stderr,
        signal: stop.signal
      })
    } finally {
      stop.dispose()
    }
  }
  if (command !== 'mirror' && command !== 'record') {
    throw new UsageError(`unknown command ${JSON.stringify(command)} (the commands are: mirror, record, check, health, import)`)
  }
  const cmd = parseMirrorArgs(rest, process.env, command === 'record')
  if (cmd === 'help') {
    process.stdout.write(HELP)
    return 0
  }
  return await mirror(cmd)
}

// A command whose work stopped waiting on something that can never come (the event loop empty, the
// promise unsettled) would otherwise exit 0 as if it had finished.
let finished = false
process.on('beforeExit', () => {
  if (finished) return
  finished = true
  process.stderr.write('doi-proxy: stopped before finishing (nothing left to wait for): this is a bug; run the same command again\n')
  process.exitCode = 70 // sysexits.h EX_SOFTWARE
})

main(process.argv.slice(2)).then(
  (code) => {
    finished = true
    process.exitCode = code
  },
  (err: unknown) => {
    finished = true
    const e = err as { code?: string; message?: string }
    if (err instanceof UsageError || e?.code?.startsWith('ERR_PARSE_ARGS') === true) {
      // parseArgs explains at length how to pass a value starting with '-'; its first sentence names the problem.
      const message = err instanceof UsageError ? err.message : ((e.message ?? '').split(/\.\s/)[0] ?? '')
      process.stderr.write(`doi-proxy: ${message}\nRun "doi-proxy --help" for the options.\n`)
      process.exitCode = EXIT_USAGE
      return
    }
    process.stderr.write(`doi-proxy: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exitCode = 1
  }
)
