/**
 * `doi-proxy import [options] PATH…` (plan-43 §1.11, §3): the agencies' public data files (Crossref's annual
 * file, DataCite's, pages of their APIs, doi-proxy's own records) into the registry copy REGISTRY_COPY
 * serves from. Streamed, resumable after any stop, idempotent; `--update crossref|datacite` asks the
 * agency what changed since (update.ts).
 */
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../../config/load.js'
import type { Config } from '../../config/schema.js'
import { openCopy } from '../../resolve/copy/store.js'
import { MAX_UPDATE_PREFIXES, PREFIX_PATTERN } from '../../handle/copy/feeds.js'
import { noteScope } from '../../resolve/copy/updater.js'
import type { CopyStore } from '../../resolve/copy/store.js'
import { visible } from '../check/visible.js'
import { runImport } from './pipeline.js'
import { createProgressWriter } from './progress.js'
import { summaryJson, summaryText } from './report.js'
import { listInputs, PathError } from './sources.js'
import type { InputArg } from './sources.js'
import { importUpdate, UPDATE_AGENCIES } from './update.js'
import type { UpdateAgency } from './update.js'

export const IMPORT_HELP = `doi-proxy import: the agencies' data files into a registry copy

Usage:
  doi-proxy import [options] PATH...
  doi-proxy import --update crossref|datacite [--to DIR] [--prefix LIST] [--since DATE]

Reads each PATH (a file, or every file below a directory), whatever its name: the format
is told from its content. Crossref's annual public data file (a tar, or the directory of
*.json.gz the torrent gives), pages of Crossref's REST API /works, DataCite's data file
(JSON lines, gzipped or not, in a tar or not) and its DOI/state CSV, pages of DataCite's
REST API /dois, and doi-proxy's own records (mirror, local store: NDJSON or a JSON array).
A server started with REGISTRY_COPY=DIR answers from the copy (see docs/registry-copy.md).

Stopped at any point (Ctrl-C, a crash, the disk full), the same command goes on where it
stopped; run twice, it changes nothing. An item that is not a record is named and skipped.

options:
      --to DIR             the copy's directory, made when missing (default: $REGISTRY_COPY)
      --prefix LIST        only DOIs of these prefixes, comma-separated (10.1234,10.5555)
      --since DATE         only records the agency changed on or after DATE (2025-01-31)
      --jobs N             threads reading the files (gunzip, parse, map), 1 to 64, while
                           one more writes (default: the cores but one, at least 1)
      --again              read files imported whole before (default: they are passed over)
      --strict             exit 1 when an item was named and skipped
      --json               the summary as JSON on standard output
      --no-abstracts       leave the works' abstracts out (about 30 % less disk)
      --batch N            records written in one transaction, 1 to 100000 (default: 10000)
      --progress-seconds N when not on a terminal, a progress line this often (default: 30)
      --update AGENCY      ask crossref or datacite what changed since the copy's coverage;
                           with --prefix, only for those prefixes (at most ${MAX_UPDATE_PREFIXES}; by
                           default the ones the copy was imported with, if it was with --prefix);
                           with --since, from DATE when the copy has no coverage of the agency
                           (or earlier than its coverage)

Exit status: 0 done (items skipped are named, not failures); 1 with --strict when an item
was skipped; 2 usage; 70 a reading thread failed (the copy is whole: run it again); 73 the
copy cannot be written; 75 the disk is full (the copy is whole: free space and run the same
command); 130 interrupted (run it again to go on). With --update, also: 2 the copy has no
coverage of the agency (import its data file, or give --since), or --since is after it; 69
the agency gave no page; 75 another process is updating the copy (try again later).
`

const EXIT_USAGE = 2
const EXIT_STRICT = 1
const EXIT_CANT_CREATE = 73 // sysexits.h EX_CANTCREAT
const EXIT_TEMPFAIL = 75 // sysexits.h EX_TEMPFAIL: the disk is full, run again once there is room
const EXIT_INTERRUPTED = 130
const EXIT_SOFTWARE = 70 // sysexits.h EX_SOFTWARE: a reading thread failed (a bug); the copy is whole, run it again
const DEFAULT_BATCH = 10_000

export interface ImportIo {
  cwd: string
  env: NodeJS.ProcessEnv
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  /** Aborted by the caller on SIGINT. */
  signal?: AbortSignal
}

interface ImportCommand {
  paths: string[]
  to: string | undefined
  prefixes?: string[]
  since?: number
  jobs: number
  again: boolean
  strict: boolean
  json: boolean
  abstracts: boolean
  batch: number
  progressSeconds: number
  update?: UpdateAgency
}

class UsageError extends Error {}

export async function runImportCommand(args: string[], io: ImportIo): Promise<number> {
  let cmd: ImportCommand | 'help'
  let config: Config
  try {
    cmd = parseImportArgs(args)
    if (cmd === 'help') {
      io.stdout.write(IMPORT_HELP)
      return 0
    }
    config = loadConfig(io.env)
  } catch (err) {
    return usage(io, err)
  }
  const dir = cmd.to ?? config.registryCopy
  if (dir === undefined) return usage(io, new UsageError('no copy to write: give --to DIR, or set REGISTRY_COPY'))
  const copyDir = resolve(io.cwd, dir)
  if (cmd.update !== undefined) {
    if (cmd.paths.length > 0) return usage(io, new UsageError('--update reads no files: give no PATH with it'))
    if (cmd.prefixes !== undefined && cmd.prefixes.length > MAX_UPDATE_PREFIXES) {
      return usage(io, new UsageError(`--prefix with --update takes at most ${MAX_UPDATE_PREFIXES} prefixes, got ${cmd.prefixes.length}`))
    }
    const result = await importUpdate({
      agency: cmd.update,
      dir: copyDir,
      config,
      say: (line) => io.stderr.write(line + '\n'),
      ...(cmd.since === undefined ? {} : { since: cmd.since }),
      ...(cmd.prefixes === undefined ? {} : { prefixes: cmd.prefixes }),
      ...(io.signal === undefined ? {} : { signal: io.signal })
    })
    return result.exitCode
  }
  if (cmd.paths.length === 0) return usage(io, new UsageError('no PATH given: name the files or directories to import'))
  let inputs: InputArg[]
  try {
    inputs = await listInputs(cmd.paths, io.cwd, copyDir)
  } catch (err) {
    if (err instanceof PathError) return usage(io, err)
    throw err
  }
  let copy: CopyStore
  try {
    // The importer reads little of the store: read-ahead helps its appends more than it costs.
    copy = openCopy({ dir: copyDir, writable: true, noReadAhead: false })
  } catch (err) {
    io.stderr.write(`doi-proxy import: cannot write the copy in ${visible(copyDir)}: ${visible((err as Error).message)}\n`)
    return EXIT_CANT_CREATE
  }
  const progress = createProgressWriter({
    tty: io.stderr.isTTY === true,
    // A terminal of no size (a pty nobody sized): $COLUMNS, else 100.
    columns: () => ((io.stderr.columns ?? 0) > 0 ? (io.stderr.columns ?? 100) : Number(io.env.COLUMNS) || 100),
    write: (text) => io.stderr.write(text),
    logSeconds: cmd.progressSeconds
  })
  try {
    // What the copy may hold from now on: its updates ask for these prefixes only (updater.ts noteScope).
    try {
      noteScope(copy, cmd.prefixes)
    } catch {
      // A full disk: the import's writer meets it too and stops cleanly, saying so (a copy with records and no scope is any prefix).
    }
    const summary = await runImport({
      copy,
      inputs,
      ...(cmd.prefixes === undefined ? {} : { prefixes: cmd.prefixes }),
      ...(cmd.since === undefined ? {} : { since: cmd.since }),
      again: cmd.again,
      abstracts: cmd.abstracts,
      maxRecordBytes: config.registryCopyMaxRecordBytes,
      batchSize: cmd.batch,
      maxBytes: config.registryCopyMaxBytes,
      minFreeBytes: config.registryCopyMinFreeBytes,
      allowedSchemes: config.allowedSchemes,
      jobs: cmd.jobs,
      nowS: () => Math.floor(Date.now() / 1000),
      ...(io.signal === undefined ? {} : { signal: io.signal }),
      onProgress: (p) => progress.update(p)
    })
    progress.end()
    if (cmd.json) {
      io.stdout.write(summaryJson(summary))
      if (summary.stopped !== undefined) io.stderr.write(`doi-proxy import: ${visible(summary.stopped.message)}\n`)
    } else io.stdout.write(summaryText(summary))
    if (summary.stopped?.reason === 'disk_full') return EXIT_TEMPFAIL
    if (summary.stopped?.reason === 'interrupted') return EXIT_INTERRUPTED
    if (summary.stopped?.reason === 'failed') return EXIT_SOFTWARE
    return cmd.strict && summary.malformed > 0 ? EXIT_STRICT : 0
  } finally {
    progress.end()
    await copy.close()
  }
}

function parseImportArgs(args: string[]): ImportCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      to: { type: 'string' },
      prefix: { type: 'string', multiple: true },
      since: { type: 'string' },
      jobs: { type: 'string' },
      again: { type: 'boolean', default: false },
      strict: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'no-abstracts': { type: 'boolean', default: false },
      batch: { type: 'string', default: String(DEFAULT_BATCH) },
      'progress-seconds': { type: 'string', default: '30' },
      update: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) return 'help'
  if (values.to === '') throw new UsageError('--to must name a directory')
  let update: UpdateAgency | undefined
  if (values.update !== undefined) {
    if (!(UPDATE_AGENCIES as readonly string[]).includes(values.update)) {
      throw new UsageError(`--update must be one of ${UPDATE_AGENCIES.join(', ')}, got ${JSON.stringify(values.update)}`)
    }
    update = values.update as UpdateAgency
  }
  return {
    paths: positionals,
    to: values.to,
    ...(values.prefix === undefined ? {} : { prefixes: prefixList(values.prefix) }),
    ...(values.since === undefined ? {} : { since: sinceOf(values.since) }),
    jobs: values.jobs === undefined ? Math.max(1, availableParallelism() - 1) : wholeNumber('--jobs', values.jobs, 1, 64),
    again: values.again,
    strict: values.strict,
    json: values.json,
    abstracts: !values['no-abstracts'],
    batch: wholeNumber('--batch', values.batch, 1, 100_000),
    progressSeconds: wholeNumber('--progress-seconds', values['progress-seconds'], 1, 3600),
    ...(update === undefined ? {} : { update })
  }
}

function prefixList(raw: string[]): string[] {
  const prefixes = raw.flatMap((r) => r.split(',')).map((p) => p.trim())
  const bad = prefixes.find((p) => !PREFIX_PATTERN.test(p))
  if (bad !== undefined || prefixes.length === 0) {
    throw new UsageError(
      `--prefix takes DOI prefixes such as 10.1234, comma-separated; ${JSON.stringify((bad ?? '').slice(0, 60))} is not one`
    )
  }
  return prefixes
}

/** A date (2025-01-31) or a time (2025-01-31T12:00:00Z), as seconds since 1970; a date is its start, UTC. */
function sinceOf(raw: string): number {
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? `${raw}T00:00:00Z` : raw
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(iso) ? Date.parse(iso) : NaN
  if (!Number.isFinite(ms)) {
    throw new UsageError(`--since takes a date such as 2025-01-31 (or 2025-01-31T12:00:00Z), got ${JSON.stringify(raw.slice(0, 60))}`)
  }
  return Math.floor(ms / 1000)
}

function wholeNumber(option: string, raw: string, min: number, max: number): number {
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${option} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw.slice(0, 60))}`)
  }
  return n
}

function usage(io: ImportIo, err: unknown): number {
  // parseArgs explains at length how to pass a value starting with '-'; its first sentence names the problem.
  const message = err instanceof UsageError || err instanceof PathError ? err.message : ((err as Error).message.split(/\.\s/)[0] ?? '')
  io.stderr.write(`doi-proxy import: ${visible(message)}\nRun "doi-proxy import --help" for the options.\n`)
  return EXIT_USAGE
}
