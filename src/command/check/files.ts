/**
 * The files `doi-proxy check` reads: each path named, and under each directory every file of a kind
 * findDois knows (src/command/check/extract.ts), skipping what .gitignore files say git ignores (the `ignore`
 * package reads them by git's rules) and the .git folder itself.
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'
import ignore from 'ignore'
import type { Ignore } from 'ignore'
import { fileKind, findDois } from './extract.js'
import type { Occurrence } from './report.js'

/** Larger files are not read (a data dump, not a document); they are reported as skipped. */
const MAX_FILE_BYTES = 20 * 1024 * 1024

export interface Collected {
  files: number
  occurrences: Occurrence[]
  /** Paths not read, and why (too large, binary, unreadable). */
  skipped: Array<{ file: string, reason: string }>
}

interface Rules { base: string, rules: Ignore }

/** Every DOI written in the paths, with file (as given, relative to cwd when under it) and line. */
export async function collectDois (paths: readonly string[], cwd: string): Promise<Collected> {
  const out: Collected = { files: 0, occurrences: [], skipped: [] }
  for (const path of paths) {
    const full = resolve(cwd, path)
    const info = await stat(full).catch(() => undefined)
    if (info === undefined) throw new PathError(`no such file or directory: ${path}`)
    if (info.isDirectory()) await walk(full, await inheritedRules(full), out, cwd)
    else await readOne(full, out, cwd, true)
  }
  return out
}

/** A path named on the command line that does not exist: a usage error. */
export class PathError extends Error {}

async function walk (dir: string, rules: Rules[], out: Collected, cwd: string): Promise<void> {
  const here = await rulesIn(dir)
  const active = here === undefined ? rules : [...rules, here]
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of entries) {
    if (entry.name === '.git') continue
    const full = join(dir, entry.name)
    const isDir = entry.isDirectory()
    if (ignored(active, full, isDir)) continue
    if (isDir) await walk(full, active, out, cwd)
    else if (entry.isFile() && fileKind(full) !== undefined) await readOne(full, out, cwd, false)
  }
}

function ignored (rules: readonly Rules[], full: string, isDir: boolean): boolean {
  return rules.some(({ base, rules: r }) => {
    const rel = relative(base, full).split(sep).join('/')
    return rel !== '' && !rel.startsWith('..') && r.ignores(isDir ? `${rel}/` : rel)
  })
}

async function rulesIn (dir: string): Promise<Rules | undefined> {
  const text = await readFile(join(dir, '.gitignore'), 'utf8').catch(() => undefined)
  return text === undefined ? undefined : { base: dir, rules: ignore().add(text) }
}

/** The .gitignore files above a directory, up to the repository's top (the folder holding .git). */
async function inheritedRules (dir: string): Promise<Rules[]> {
  const above: Rules[] = []
  let current = dir
  while (!(await exists(join(current, '.git')))) {
    const parent = dirname(current)
    if (parent === current) return [] // not in a repository: only the walked folders' own files count
    current = parent
    const rules = await rulesIn(current)
    if (rules !== undefined) above.unshift(rules)
  }
  return above
}

async function exists (path: string): Promise<boolean> {
  return await stat(path).then(() => true, () => false)
}

async function readOne (full: string, out: Collected, cwd: string, named: boolean): Promise<void> {
  const shown = display(full, cwd)
  const info = await stat(full).catch(() => undefined)
  if (info === undefined) return
  if (info.size > MAX_FILE_BYTES) {
    out.skipped.push({ file: shown, reason: `larger than ${MAX_FILE_BYTES} bytes` })
    return
  }
  const bytes = await readFile(full).catch(() => undefined)
  if (bytes === undefined) {
    out.skipped.push({ file: shown, reason: 'cannot be read' })
    return
  }
  if (bytes.subarray(0, 8000).includes(0)) {
    if (named) out.skipped.push({ file: shown, reason: 'binary' })
    return
  }
  out.files++
  for (const found of findDois(bytes.toString('utf8'), fileKind(full) ?? 'text')) out.occurrences.push({ file: shown, ...found })
}

/** A path as reported: relative to the working directory when under it (what CI annotations need), else absolute. */
function display (full: string, cwd: string): string {
  const rel = relative(cwd, full)
  return rel.startsWith('..') || rel === '' ? full : rel.split(sep).join('/')
}
