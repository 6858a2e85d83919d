/**
 * The files `doi-proxy check` reads: each path named, and under each directory every file of a kind
 * findDois knows (src/command/check/extract.ts), skipping what .gitignore files say git ignores (the `ignore`
 * package reads them by git's rules) and the .git folder itself. Every file, a .gitignore too, is read
 * through readBounded: a checked repository may be hostile, and no file of it may hang or exhaust the run.
 */
import { readdir, stat } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'
import ignore from 'ignore'
import type { Ignore } from 'ignore'
import { citedWorksIn, entryKind, withCited } from './entries.js'
import { fileKind, findDois } from './extract.js'
import { readBounded } from './read-bounded.js'
import type { Occurrence } from './report.js'

/** Larger documents are not read (a data dump, not a document); they are reported as skipped. */
const MAX_FILE_BYTES = 20 * 1024 * 1024
/**
 * Larger .gitignore files are not applied (reported as skipped): each rule is tried on each path walked,
 * so 200,000 rules took seconds and 800 MB. The largest usual ones (several templates together) are a few KiB.
 */
export const MAX_GITIGNORE_BYTES = 64 * 1024
/**
 * All the .gitignore files of a run together: past this, further ones are not applied (reported as skipped).
 * Nested files each under MAX_GITIGNORE_BYTES add up: twelve of 64 KB took 28 s and 360 MB.
 */
export const MAX_GITIGNORE_TOTAL_BYTES = 256 * 1024

export interface Collected {
  files: number
  occurrences: Occurrence[]
  /** Paths not read, and why (too large, binary, unreadable). */
  skipped: Array<{ file: string; reason: string }>
}

interface Rules {
  base: string
  rules: Ignore
}

/** What a run has read so far, shared by every directory it walks. */
interface Run {
  out: Collected
  cwd: string
  gitignoreBytes: number
  cited: boolean
  /** Files a walk does not read (absolute): the --allow lists, which name DOIs without citing them. */
  notRead: ReadonlySet<string>
}

/**
 * Every DOI written in the paths, with file (as given, relative to cwd when under it) and line; with `cited`
 * (check --verify), each DOI of a reference entry (.bib, .ris, CITATION.cff, CSL-JSON) with what its entry says.
 * `notRead`: files a directory walk passes over (the --allow lists); a path named is read all the same.
 */
export async function collectDois(
  paths: readonly string[],
  cwd: string,
  opts: { cited?: boolean; notRead?: readonly string[] } = {}
): Promise<Collected> {
  const out: Collected = { files: 0, occurrences: [], skipped: [] }
  const notRead = new Set((opts.notRead ?? []).map((p) => resolve(cwd, p)))
  const run: Run = { out, cwd, gitignoreBytes: 0, cited: opts.cited === true, notRead }
  for (const path of paths) {
    const full = resolve(cwd, path)
    const info = await stat(full).catch(() => undefined)
    if (info === undefined) throw new PathError(`no such file or directory: ${path}`)
    if (info.isDirectory()) await walk(full, await inheritedRules(full, run), run)
    else await readOne(full, run, true)
  }
  return out
}

/** A path named on the command line that does not exist: a usage error. */
export class PathError extends Error {}

async function walk(dir: string, rules: Rules[], run: Run): Promise<void> {
  const here = await rulesIn(dir, run)
  const active = here === undefined ? rules : [...rules, here]
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of entries) {
    if (entry.name === '.git') continue
    const full = join(dir, entry.name)
    const isDir = entry.isDirectory()
    // Only what would be read is matched against the rules: each match costs every rule.
    if (!isDir && !(entry.isFile() && fileKind(full) !== undefined && !run.notRead.has(full))) continue
    if (ignored(active, full, isDir)) continue
    if (isDir) await walk(full, active, run)
    else await readOne(full, run, false)
  }
}

function ignored(rules: readonly Rules[], full: string, isDir: boolean): boolean {
  return rules.some(({ base, rules: r }) => {
    const rel = relative(base, full).split(sep).join('/')
    return rel !== '' && !rel.startsWith('..') && r.ignores(isDir ? `${rel}/` : rel)
  })
}

/** A directory's .gitignore rules; one that cannot be applied is noted in `out.skipped`, as git warns and goes on. */
async function rulesIn(dir: string, run: Run): Promise<Rules | undefined> {
  const path = join(dir, '.gitignore')
  const skip = (reason: string): undefined => {
    run.out.skipped.push({ file: display(path, run.cwd), reason: `${reason}; its rules are not applied` })
  }
  // Git does not follow a .gitignore that is a symbolic link (git 2.32), so neither do we.
  const read = await readBounded(path, MAX_GITIGNORE_BYTES, false)
  if (read === undefined) return undefined
  if ('reason' in read) return skip(read.reason)
  if (run.gitignoreBytes + read.bytes.length > MAX_GITIGNORE_TOTAL_BYTES) {
    return skip(`the .gitignore files of this run would hold more than ${MAX_GITIGNORE_TOTAL_BYTES} bytes in all`)
  }
  run.gitignoreBytes += read.bytes.length
  return { base: dir, rules: ignore().add(read.bytes.toString('utf8')) }
}

/** The .gitignore files above a directory, up to the repository's top (the folder holding .git). */
async function inheritedRules(dir: string, run: Run): Promise<Rules[]> {
  const above: Rules[] = []
  let current = dir
  while (!(await exists(join(current, '.git')))) {
    const parent = dirname(current)
    if (parent === current) return [] // not in a repository: only the walked folders' own files count
    current = parent
    const rules = await rulesIn(current, run)
    if (rules !== undefined) above.unshift(rules)
  }
  return above
}

async function exists(path: string): Promise<boolean> {
  return await stat(path).then(
    () => true,
    () => false
  )
}

async function readOne(full: string, run: Run, named: boolean): Promise<void> {
  const { out, cwd } = run
  // A path named on the command line is read through a symbolic link; a walk lists links as links and reads none.
  const read = await readBounded(full, MAX_FILE_BYTES, named)
  if (read === undefined) return
  if ('reason' in read) {
    if (named || read.reason !== 'binary') out.skipped.push({ file: display(full, cwd), reason: read.reason })
    return
  }
  out.files++
  const text = read.bytes.toString('utf8')
  const found = findDois(text, fileKind(full) ?? 'text')
  const kind = run.cited ? entryKind(full) : undefined
  for (const one of kind === undefined ? found : withCited(found, citedWorksIn(text, kind))) {
    out.occurrences.push({ file: display(full, cwd), ...one })
  }
}

/** A path as reported: relative to the working directory when under it (what CI annotations need), else absolute. */
function display(full: string, cwd: string): string {
  const rel = relative(cwd, full)
  return rel.startsWith('..') || rel === '' ? full : rel.split(sep).join('/')
}
