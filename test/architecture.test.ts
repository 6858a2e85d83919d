import { readdirSync, readFileSync } from 'node:fs'
import { posix } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// The floors of src/ (docs/architecture.md), lowest first. A file may import from its own floor and
// from those below it, never from one above: data flows one way, and a floor can be read, tested and
// changed without the ones above it. A new folder or a new file at the top of src/ goes in this table.
const FLOORS: ReadonlyArray<{ floor: string, holds: readonly string[], what: string }> = [
  { floor: 'rules', holds: ['handle/', 'config/'], what: 'pure DOI rules, and the settings (their table, parsers and loader)' },
  { floor: 'observe', holds: ['observe/'], what: 'every metric, the log throttle' },
  { floor: 'resolve', holds: ['resolve/'], what: 'I/O: upstream, cache and its tiers, resolver, local store' },
  { floor: 'status', holds: ['status/'], what: 'the status page\'s figures, read from the metrics' },
  { floor: 'http', holds: ['http/'], what: 'HTTP helpers, routes, views' },
  { floor: 'services', holds: ['services.ts', 'services/'], what: 'the object graph the plugins are given' },
  { floor: 'plugins', holds: ['plugins/'], what: 'the Fastify plugins' },
  { floor: 'app', holds: ['app.ts'], what: 'buildApp: the plugins in order' },
  { floor: 'main', holds: ['main.ts', 'main/'], what: 'the server process: environment, signals, listen' },
  { floor: 'command', holds: ['command/'], what: 'the doi-proxy command: mirror, record, check' }
]

// The parts of src/resolve/ (docs/architecture.md, "The rooms of resolve/"), lowest first, each a folder: a part
// imports from itself and from the parts below it, so each can be read and tested without those above.
const RESOLVE_PARTS: ReadonlyArray<{ part: string, what: string }> = [
  { part: 'upstream', what: 'the upstream client and its protection: breakers, fair queue, deadline, errors, reachability' },
  { part: 'fleet', what: 'Redis connections, and what one process tells the others' },
  { part: 'local-store', what: 'the local records: files, their format, the in-memory set, watching' },
  { part: 'open-access', what: 'the open-access copy finder and its providers' },
  { part: 'cache', what: 'the record cache, its entries and their work, the cache file, the shared tier in Redis' },
  { part: 'metadata', what: 'the agencies\' metadata, fetched and cached' },
  { part: 'lookup', what: 'the lookup flow: resolver, proxy service, 10320/loc loader, the reader\'s country' },
  { part: 'recording', what: 'recording while serving (RECORD_TO) and its lock file' }
]

const SRC = new URL('../src/', import.meta.url)

/** The floor of a path under src/ (its index in FLOORS), or undefined when the table does not name it. */
function floorOf (path: string): number | undefined {
  const index = FLOORS.findIndex(({ holds }) => holds.some((h) => h.endsWith('/') ? path.startsWith(h) : path === h))
  return index === -1 ? undefined : index
}

/** Every .ts file under src/, as a path relative to it. */
function sourceFiles (dir = ''): string[] {
  return readdirSync(new URL(dir, SRC), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}${entry.name}`
    if (entry.isDirectory()) return sourceFiles(`${path}/`)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** What a file imports (static, type-only, re-exports, dynamic): our own files as paths under src/, packages by name. */
function importsOf (path: string, text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map(({ fileName }) =>
    fileName.startsWith('.') ? posix.join(posix.dirname(path), fileName).replace(/\.js$/, '.ts') : fileName)
}

/** The part of src/resolve/ a path stands in (its index in RESOLVE_PARTS); undefined outside resolve/, -1 on no part. */
function partOf (path: string): number | undefined {
  if (!path.startsWith('resolve/')) return undefined
  return RESOLVE_PARTS.findIndex(({ part }) => path.startsWith(`resolve/${part}/`))
}

/** Each import of one resolve/ part from a part above the importer's, said in a line. */
function upwardPartImports (imports: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = []
  for (const [file, targets] of imports) {
    const from = partOf(file)
    for (const target of targets) {
      const to = partOf(target)
      if (from !== undefined && from >= 0 && to !== undefined && to > from) {
        found.push(`${file} (${RESOLVE_PARTS[from]?.part}) imports ${target} (${RESOLVE_PARTS[to]?.part})`)
      }
    }
  }
  return found
}

/** Each import of one of our files from a floor above the importer's, said in a line. */
function upwardImports (imports: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = []
  for (const [file, targets] of imports) {
    const from = floorOf(file)
    for (const target of targets) {
      const to = floorOf(target)
      if (from !== undefined && to !== undefined && to > from) {
        found.push(`${file} (${FLOORS[from]?.floor}) imports ${target} (${FLOORS[to]?.floor})`)
      }
    }
  }
  return found
}

function sourceImports (): Map<string, string[]> {
  return new Map(sourceFiles().map((path) => [path, importsOf(path, readFileSync(new URL(path, SRC), 'utf8'))]))
}

describe('the floors of src/', () => {
  it('hold every source file', () => {
    expect(sourceFiles().filter((path) => floorOf(path) === undefined)).toEqual([])
  })

  it('are never climbed: no file imports from a floor above its own', () => {
    expect(upwardImports(sourceImports())).toEqual([])
  })

  it('an import from a higher floor is found, whatever its form; one from the same floor or below is not', () => {
    const text = [
      "import type { Services } from '../services.js'",
      "import { lookup } from './resolver.js'",
      "export { cacheKey } from '../handle/name.js'",
      "const views = await import('../http/views/pages.js')"
    ].join('\n')
    const imports = new Map([['resolve/example.ts', importsOf('resolve/example.ts', text)]])
    expect(upwardImports(imports)).toEqual([
      'resolve/example.ts (resolve) imports services.ts (services)',
      'resolve/example.ts (resolve) imports http/views/pages.ts (http)'
    ])
  })

  it('resolve/ is in parts, one folder each: every file of resolve/ stands in one', () => {
    expect(sourceFiles().filter((path) => partOf(path) === -1)).toEqual([])
  })

  it('the parts of resolve/ are never climbed: no part imports from one above it', () => {
    expect(upwardPartImports(sourceImports())).toEqual([])
  })

  it('an import from a higher part of resolve/ is found, one from a lower part is not', () => {
    const text = [
      "import type { Resolver } from '../lookup/resolver.js'",
      "import { within } from '../upstream/deadline.js'"
    ].join('\n')
    const imports = new Map([['resolve/cache/example.ts', importsOf('resolve/cache/example.ts', text)]])
    expect(upwardPartImports(imports)).toEqual(['resolve/cache/example.ts (cache) imports resolve/lookup/resolver.ts (lookup)'])
  })

  it('keep every metric in one file: only src/observe/metrics.ts uses prom-client', () => {
    const users = [...sourceImports()].filter(([, targets]) => targets.includes('prom-client')).map(([file]) => file)
    expect(users).toEqual(['observe/metrics.ts'])
  })
})

/** Each row of docs/architecture.md's "Where does X live" rules table: its files, and the functions it names. */
function whereRows (): Array<{ rule: string, files: string[], names: string[] }> {
  const doc = readFileSync(new URL('../docs/architecture.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('## Where does X live'), doc.indexOf('### The settings'))
  return section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| rule ')).map((line) => {
    const [rule = '', , fileCell = '', nameCell = ''] = line.slice(1, -1).split(' | ').map((cell) => cell.trim())
    const quoted = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '')
    const files = quoted(fileCell).filter((q) => q.endsWith('.ts')).map((q) => q.replace(/^src\//, ''))
    // A file named in the function column, from src/, counts as the row's too ("`http/prepared-answers.ts sendParts`").
    const near = quoted(nameCell).map((q) => q.split(' ')[0] ?? '').filter((q) => q.endsWith('.ts')).map((q) => q.replace(/^src\//, ''))
    return { rule, files: [...files, ...near], names: quoted(nameCell).filter((q) => /^[A-Za-z_]\w*$/.test(q)) }
  }).filter((row) => row.files.length > 0)
}

describe('docs/architecture.md, "Where does X live"', () => {
  it('names functions that are in the files it names', () => {
    const rows = whereRows()
    expect(rows.length).toBeGreaterThan(40)
    const missing = rows.flatMap(({ rule, files, names }) => {
      const text = files.map((file) => readFileSync(new URL(file, SRC), 'utf8')).join('\n')
      return names.filter((name) => !new RegExp(`\\b${name}\\b`).test(text)).map((name) => `${rule}: ${name} is not in ${files.join(', ')}`)
    })
    expect(missing).toEqual([])
  })
})
