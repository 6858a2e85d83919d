/**
 * `doi-proxy check [options] PATH…` (docs/checking-dois.md): find the DOIs in files, ask a doi-proxy
 * whether each is registered, report the ones that are not, and exit 1 if there are any. With --verify
 * (issue 41), also whether each names the work its reference cites, was retracted, and has a live landing
 * page: the problems on their lines, and exit 1 for those --fail-on names.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../config/load.js'
import { OPTIONS } from '../../config/schema.js'
import { AllowError, readAllowLists } from './allow.js'
import type { AllowList } from './allow.js'
import { askAll, AskError, httpAsker, injectAsker, keyOf, MAX_RETRY_WAIT_SECONDS } from './ask.js'
import type { Asker } from './ask.js'
import { collectDois, PathError } from './files.js'
import { cacheKey } from '../../handle/name.js'
import { FAIL_ON, parseFailOn } from '../../handle/verify/fail-on.js'
import type { FailOn } from '../../handle/verify/fail-on.js'
import { parseVerifyLevels } from '../../handle/verify/levels.js'
import type { VerifyLevel } from '../../handle/verify/types.js'
import { exitCode, formatFailure, formatReport, summarise } from './report.js'
import type { Checked, Format } from './report.js'
import { formatVerifyReport, summariseVerified, verifyExitCode } from './report-verify.js'
import { visible } from './visible.js'

export const CHECK_HELP = `doi-proxy check: are the DOIs in these files registered?

Usage:
  doi-proxy check [options] PATH...

Finds DOIs (10.1000/182, doi:…, https://doi.org/… links, shortDOIs) in Markdown, HTML,
reStructuredText, LaTeX/BibTeX, RIS, CITATION.cff, R DESCRIPTION, JSON and text files; in a
directory, every such file below it that .gitignore does not exclude. Asks a running
doi-proxy's batch API; this command itself never fetches a landing page.

options:
  -s, --server URL         the doi-proxy to ask (default: http://127.0.0.1:8000)
      --upstream           ask no server: resolve in this process, through the same code
                           and settings as the server ($UPSTREAM_URL, $REDIS_URL,
                           $LOCAL_STORE_DIR, ...); no cache file is read or written
  -f, --format FORMAT      text (default), json, junit (JUnit XML), or github (workflow
                           annotations on the lines of a pull request)
      --verify LEVELS      also check, for each DOI, a comma list of:
                             metadata    the title, year and first author its .bib, .ris,
                                         CITATION.cff or CSL-JSON entry gives, against
                                         the registered ones (another work, or details)
                             retraction  a retraction, correction or expression of concern
                             landing     its landing page: alive, unconfirmed (does not
                                         name the work), blocked (a bot wall) or dead
      --fail-on LIST       what exits 1, a comma list of: unregistered, unknown (could not
                           be checked), mismatch, retracted, dead, unconfirmed; default:
                           unregistered, and with --verify also mismatch, retracted and
                           dead (of the levels verified). A list replaces that default,
                           but a DOI that is not registered exits 1 whatever it names
                           (check's first question), unless --allow lists it
      --allow FILE         DOIs not registered yet (reserved at DataCite or Zenodo, cited
                           before the release): one a line, # starts a comment. Each is
                           a notice, not a failure; one registered by now is a notice
                           that it can leave the list. May be given more than once
      --max-wait SECONDS   the longest to wait in all when the server asks to (its rate
                           limit), then ask again about the DOIs it refused (default: 60;
                           0: never wait, report them as could not be checked)

Exit status: 0 when every DOI found is registered (or allowed); 1 when one is not (or
meets another name of --fail-on); 2 for a usage error or a server we cannot ask.

Examples:
  doi-proxy check docs/ README.md CITATION.cff
  doi-proxy check --format github --server http://doi-proxy:8000 .
  doi-proxy check --verify metadata,retraction,landing paper/refs.bib
  doi-proxy check --allow .github/reserved-dois.txt .
`

const EXIT_USAGE = 2
const FORMATS: readonly Format[] = ['text', 'json', 'junit', 'github']

interface CheckCommand {
  paths: string[]
  server: string
  upstream: boolean
  format: Format
  /** The levels of --verify; none: the check of before issue 41, its output unchanged. */
  levels: VerifyLevel[]
  failOn: FailOn[]
  maxWait: number
  /** The --allow files, as named. */
  allow: string[]
}

/** Run the command; returns the exit status. Usage errors are printed here. */
export async function runCheck(
  args: string[],
  io: { cwd: string; env: NodeJS.ProcessEnv; stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream }
): Promise<number> {
  let cmd: CheckCommand | 'help'
  try {
    cmd = parseCheckArgs(args)
  } catch (err) {
    return usage(io.stderr, err)
  }
  if (cmd === 'help') {
    io.stdout.write(CHECK_HELP)
    return 0
  }
  const { format } = cmd
  let allowed: AllowList
  try {
    allowed = await readAllowLists(cmd.allow, io.cwd)
  } catch (err) {
    if (!(err instanceof AllowError)) throw err
    io.stdout.write(formatFailure(format, err.message) ?? '')
    // Said whole (usage() keeps a message's first sentence): the line quoted may hold a full stop.
    io.stderr.write(`doi-proxy check: ${visible(err.message)}\nRun "doi-proxy check --help" for the options.\n`)
    return EXIT_USAGE
  }
  // Nothing could be asked: said on stderr, and as a report of its own for a CI job that saves stdout.
  const cannotCheck = (message: string): number => {
    io.stderr.write(`doi-proxy check: ${visible(message)}\n`)
    io.stdout.write(formatFailure(format, message) ?? '')
    return EXIT_USAGE
  }
  let collected
  try {
    collected = await collectDois(cmd.paths, io.cwd, { cited: cmd.levels.includes('metadata'), notRead: cmd.allow })
  } catch (err) {
    if (!(err instanceof PathError)) throw err
    io.stdout.write(formatFailure(format, err.message) ?? '')
    return usage(io.stderr, err)
  }
  for (const s of collected.skipped) io.stderr.write(`note: skipped ${visible(s.file)}: ${s.reason}\n`)
  const progress = progressLine(io.stderr)
  let app: FastifyInstance | undefined
  try {
    app = cmd.upstream ? await inProcessApp(io.env, io.cwd) : undefined
  } catch (err) {
    return cannotCheck(`cannot resolve in this process: ${(err as Error).message}`)
  }
  try {
    const ask: Asker = app === undefined ? httpAsker(cmd.server, cmd.levels) : injectAsker(app, cmd.levels)
    const verdicts = await askAll(collected.occurrences, ask, progress.update, {
      onWait(seconds, dois) {
        progress.end()
        io.stderr.write(
          `note: the server asked to wait: asking again about ${dois} DOI${dois === 1 ? '' : 's'} in ${seconds} s (--max-wait ${cmd.maxWait} s in all)\n`
        )
      },
      maxWaitSeconds: cmd.maxWait
    })
    progress.end()
    const checked: Checked[] = collected.occurrences.map((o) => {
      const allowedBy = allowed.get(cacheKey(o.doi))
      return { ...o, verdict: verdicts.get(keyOf(o))!, ...(allowedBy === undefined ? {} : { allowed: allowedBy }) }
    })
    // Distinct DOIs: with --verify one DOI cited under two titles is asked twice, and still one DOI.
    const distinct = new Set(collected.occurrences.map((o) => cacheKey(o.doi))).size
    const summary = summarise(collected.files, checked, distinct, cmd.allow.length > 0)
    if (cmd.levels.length === 0) {
      // As before issue 41: --fail-on unknown (or a list naming it) also fails on DOIs not checked.
      const failOn = cmd.failOn.includes('unknown') ? 'unknown' : 'unregistered'
      io.stdout.write(formatReport(cmd.format, checked, summary, failOn))
      return exitCode(summary, failOn)
    }
    io.stdout.write(formatVerifyReport(cmd.format, checked, summariseVerified(summary, checked, cmd.levels), cmd.failOn))
    return verifyExitCode(checked, cmd.failOn)
  } catch (err) {
    progress.end()
    if (err instanceof AskError) return cannotCheck(err.message)
    throw err
  } finally {
    await app?.close()
  }
}

/**
 * The server's app, built here with the same settings (--upstream), so it sees the local records a server
 * started here would (docs/checking-dois.md). Two differences, each said in the docs: no cache file is read
 * or written (a check leaves nothing behind, and answers what the registry says now), and the default
 * local store, config/sample-records, is used only where it exists (a server elsewhere would need
 * LOCAL_STORE_DIR= to start at all; check runs from any project).
 */
async function inProcessApp(env: NodeJS.ProcessEnv, cwd: string): Promise<FastifyInstance> {
  // Loaded only here: the server's modules are most of the command's start (bench/RESULTS.md, check --verify),
  // and asking a server (--server) needs none of them.
  const { buildApp } = await import('../../app.js')
  const config = loadConfig(env)
  const dir = config.localStoreDir === undefined ? undefined : resolve(cwd, config.localStoreDir)
  const absentDefault = config.localStoreDir === OPTIONS.localStoreDir.default && dir !== undefined && !existsSync(dir)
  return await buildApp({ ...config, cacheFile: undefined, localStoreDir: absentDefault ? undefined : dir })
}

function parseCheckArgs(args: string[]): CheckCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      server: { type: 'string', short: 's', default: 'http://127.0.0.1:8000' },
      upstream: { type: 'boolean', default: false },
      format: { type: 'string', short: 'f', default: 'text' },
      verify: { type: 'string' },
      'fail-on': { type: 'string' },
      'max-wait': { type: 'string', default: String(MAX_RETRY_WAIT_SECONDS) },
      allow: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) return 'help'
  if (positionals.length === 0) throw new Error('no PATH given: name the files or directories to check (for example docs/ README.md)')
  const format = values.format as Format
  if (!FORMATS.includes(format)) throw new Error(`--format must be one of ${FORMATS.join(', ')}, got ${JSON.stringify(values.format)}`)
  const levels = values.verify === undefined ? [] : parseVerifyLevels(values.verify)
  if (typeof levels === 'string') throw new Error(`--verify: ${levels}`)
  const failOn = parseFailOn(values['fail-on'], levels)
  if (typeof failOn === 'string') throw new Error(levels.length === 0 ? withoutVerify(values['fail-on']!, failOn) : failOn)
  const maxWait = values['max-wait']
  if (!/^\d{1,6}$/.test(maxWait)) {
    throw new Error(`--max-wait must be a whole number of seconds (0 to 999999), got ${JSON.stringify(maxWait)}`)
  }
  let server: URL | undefined
  try {
    server = new URL(values.server)
  } catch {
    server = undefined
  }
  if (server === undefined || (server.protocol !== 'http:' && server.protocol !== 'https:')) {
    throw new Error(`--server must be an http(s) URL such as http://127.0.0.1:8000, got ${JSON.stringify(values.server)}`)
  }
  return {
    paths: positionals,
    server: values.server,
    upstream: values.upstream,
    format,
    levels,
    failOn,
    maxWait: Number(maxWait),
    allow: values.allow
  }
}

/** Without --verify only unregistered and unknown mean anything: a word that is no name at all is told so, as before. */
function withoutVerify(raw: string, why: string): string {
  const unknownWord = raw.split(',').find((w) => w.trim() !== '' && !(FAIL_ON as readonly string[]).includes(w.trim()))
  return unknownWord === undefined
    ? why
    : `--fail-on must be unregistered or unknown (with --verify also mismatch, retracted, dead, unconfirmed), got ${JSON.stringify(unknownWord.trim().slice(0, 40))}`
}

function usage(stderr: NodeJS.WriteStream, err: unknown): number {
  // parseArgs explains at length how to pass a value starting with '-'; its first sentence names the problem.
  const message = (err as Error).message.split(/\.\s/)[0] ?? ''
  stderr.write(`doi-proxy check: ${visible(message)}\nRun "doi-proxy check --help" for the options.\n`)
  return EXIT_USAGE
}

/** A one-line progress bar on a terminal, redrawn at most ten times a second; nothing when not a TTY (CI logs). */
function progressLine(stream: NodeJS.WriteStream): { update: (done: number, total: number) => void; end: () => void } {
  if (stream.isTTY !== true) return { update() {}, end() {} }
  let last = 0
  let drawn = false
  return {
    update(done, total) {
      const now = Date.now()
      if (now - last < 100 && done < total) return
      last = now
      const width = 24
      const filled = total === 0 ? width : Math.round((done / total) * width)
      stream.write(`\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} DOIs checked`)
      drawn = true
    },
    end() {
      if (drawn) stream.write('\r\x1b[K')
    }
  }
}
