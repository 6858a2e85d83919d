import { readdirSync, readFileSync } from 'node:fs'
import { posix } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// The floors of src/ (docs/architecture.md), lowest first. A file may import from its own floor and
// from those below it, never from one above: data flows one way, and a floor can be read, tested and
// changed without the ones above it. A new folder or a new file at the top of src/ goes in this table.
const FLOORS: ReadonlyArray<{ floor: string, holds: readonly string[], what: string }> = [
  { floor: 'handle', holds: ['handle/'], what: 'the pure DOI rules: no I/O, no clock, and nothing of ours outside handle/' },
  { floor: 'config', holds: ['config/'], what: 'the settings: their table, parsers and loader' },
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

const ROOT = new URL('../', import.meta.url)
const SRC = new URL('src/', ROOT)

/** The floor of a path under src/ (its index in FLOORS), or undefined when the table does not name it. */
function floorOf (path: string): number | undefined {
  const index = FLOORS.findIndex(({ holds }) => holds.some((h) => h.endsWith('/') ? path.startsWith(h) : path === h))
  return index === -1 ? undefined : index
}

/** Every .ts file under src/ (or under `dir` of `base`), as a path relative to src/ (to `base`). */
function sourceFiles (dir = '', base = SRC): string[] {
  return readdirSync(new URL(dir, base), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}${entry.name}`
    if (entry.isDirectory()) return entry.name.startsWith('.') ? [] : sourceFiles(`${path}/`, base)
    return /\.m?ts$/.test(entry.name) ? [path] : []
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

let sourceImportsRead: Map<string, string[]> | undefined

/** What each file under src/ imports, read once for every test here. */
function sourceImports (): Map<string, string[]> {
  sourceImportsRead ??= new Map(sourceFiles().map((path) => [path, importsOf(path, readFileSync(new URL(path, SRC), 'utf8'))]))
  return sourceImportsRead
}

/** The imports of every TypeScript file of ours (src/, bench/, test/, scripts/), as paths from the repository's root. */
function ourImports (): Map<string, string[]> {
  const paths = ['src/', 'bench/', 'test/', 'scripts/'].flatMap((dir) => sourceFiles(dir, ROOT))
  return new Map(paths.map((path) => [path, importsOf(path, readFileSync(new URL(path, ROOT), 'utf8'))]))
}

/**
 * Each circle of imports (files that import each other, however indirectly), said as one way round it:
 * "a.ts → b.ts → a.ts". Tarjan's strongly connected components; a circle of one file imports itself.
 */
function circles (imports: ReadonlyMap<string, readonly string[]>): string[] {
  const order = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const found: string[] = []
  const visit = (file: string): void => {
    order.set(file, order.size)
    low.set(file, order.size - 1)
    stack.push(file)
    for (const target of imports.get(file) ?? []) {
      if (!imports.has(target)) continue
      if (!order.has(target)) visit(target)
      if (stack.includes(target)) low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0))
    }
    if (low.get(file) !== order.get(file)) return
    const members = new Set(stack.splice(stack.indexOf(file)))
    if (members.size > 1 || imports.get(file)?.includes(file) === true) found.push(wayRound(file, members, imports))
  }
  for (const file of imports.keys()) if (!order.has(file)) visit(file)
  return found
}

/** The shortest way from `start` back to itself through the files of its circle, said as "a.ts → b.ts → a.ts". */
function wayRound (start: string, members: ReadonlySet<string>, imports: ReadonlyMap<string, readonly string[]>): string {
  const cameFrom = new Map<string, string>()
  const queue = [start]
  for (const file of queue) {
    for (const target of imports.get(file) ?? []) {
      if (target === start) {
        const way = [start]
        for (let at: string | undefined = file; at !== undefined && at !== start; at = cameFrom.get(at)) way.unshift(at)
        return [start, ...way].join(' → ')
      }
      if (members.has(target) && !cameFrom.has(target)) { cameFrom.set(target, file); queue.push(target) }
    }
  }
  return start
}

describe('the floors of src/', () => {
  it('hold every source file', () => {
    expect(sourceFiles().filter((path) => floorOf(path) === undefined)).toEqual([])
  })

  it('are never climbed: no file imports from a floor above its own, not even a type', () => {
    expect(upwardImports(sourceImports())).toEqual([])
  })

  it('an import from a higher floor is found, whatever its form, types too; one from the same floor or below is not', () => {
    const text = [
      "import type { Services } from '../services.js'",
      "import { lookup } from './resolver.js'",
      "export { cacheKey } from '../handle/name.js'",
      "export type { StatusCollector } from '../status/collector.js'",
      "type Views = typeof import('../http/views/pages.js')",
      "const views = await import('../http/views/errors.js')"
    ].join('\n')
    const imports = new Map([
      ['resolve/example.ts', importsOf('resolve/example.ts', text)],
      ['handle/example.ts', importsOf('handle/example.ts', "import type { Config } from '../config/schema.js'")]
    ])
    expect(upwardImports(imports)).toEqual([
      'resolve/example.ts (resolve) imports services.ts (services)',
      'resolve/example.ts (resolve) imports status/collector.ts (status)',
      'resolve/example.ts (resolve) imports http/views/pages.ts (http)',
      'resolve/example.ts (resolve) imports http/views/errors.ts (http)',
      'handle/example.ts (handle) imports config/schema.ts (config)'
    ])
  })

  it('handle/ stands alone: its pure rules import nothing of ours outside handle/, not even a type', () => {
    const outside = [...sourceImports()].filter(([file]) => file.startsWith('handle/'))
      .flatMap(([file, targets]) => targets.filter((t) => t.endsWith('.ts') && !t.startsWith('handle/')).map((t) => `${file} imports ${t}`))
    expect(outside).toEqual([])
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

describe('the import graph of our files (src/, bench/, test/, scripts/)', () => {
  it('has no circles: no file imports, however indirectly, one that imports it, not even a type', () => {
    expect(circles(ourImports())).toEqual([])
  })

  it('a circle is found, whatever its imports\' form, types too; a file imported twice on the way is not one', () => {
    const imports = new Map([
      ['bench/lib/batch.ts', importsOf('bench/lib/batch.ts', "import type { Context } from './scenarios.js'\nimport { machine } from './results.js'")],
      ['bench/lib/scenarios.ts', importsOf('bench/lib/scenarios.ts', "import { batchSection } from './batch.js'\nimport { writeSection } from './results.js'")],
      ['bench/lib/results.ts', importsOf('bench/lib/results.ts', "import { ROOT } from './processes.js'")],
      ['src/config/schema.ts', importsOf('src/config/schema.ts', "import { checkOpenAccess } from './open-access.js'")],
      ['src/config/open-access.ts', importsOf('src/config/open-access.ts', "export type { Config } from './schema.js'")],
      ['src/self.ts', importsOf('src/self.ts', "import type { Self } from './self.js'")]
    ])
    expect(circles(imports)).toEqual([
      'bench/lib/batch.ts → bench/lib/scenarios.ts → bench/lib/batch.ts',
      'src/config/schema.ts → src/config/open-access.ts → src/config/schema.ts',
      'src/self.ts → src/self.ts'
    ])
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
