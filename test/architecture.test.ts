import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { posix } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { OPTIONS } from '../src/config/schema.js'

// The floors of src/ (docs/architecture.md), lowest first. A file may import from its own floor and
// from those below it, never from one above: data flows one way, and a floor can be read, tested and
// changed without the ones above it. A new folder or a new file at the top of src/ goes in this table.
const FLOORS: ReadonlyArray<{ floor: string; holds: readonly string[]; what: string }> = [
  { floor: 'handle', holds: ['handle/'], what: 'the pure DOI rules: no I/O, no clock, and nothing of ours outside handle/' },
  { floor: 'config', holds: ['config/'], what: 'the settings: their table, parsers and loader' },
  { floor: 'observe', holds: ['observe/'], what: 'every metric, the log throttle' },
  { floor: 'resolve', holds: ['resolve/'], what: 'I/O: upstream, cache and its tiers, resolver, local store' },
  { floor: 'status', holds: ['status/'], what: "the status page's figures, read from the metrics" },
  { floor: 'http', holds: ['http/'], what: 'HTTP helpers, routes, views' },
  { floor: 'services', holds: ['services.ts', 'services/'], what: 'the object graph the plugins are given' },
  { floor: 'plugins', holds: ['plugins/'], what: 'the Fastify plugins' },
  { floor: 'app', holds: ['app.ts'], what: 'buildApp: the plugins in order' },
  { floor: 'main', holds: ['main.ts', 'main/'], what: 'the server process: environment, signals, listen' },
  { floor: 'command', holds: ['command/'], what: 'the doi-proxy command: mirror, record, check' }
]

// The parts of src/resolve/ (docs/architecture.md, "The rooms of resolve/"), lowest first, each a folder: a part
// imports from itself and from the parts below it, so each can be read and tested without those above.
const RESOLVE_PARTS: ReadonlyArray<{ part: string; what: string }> = [
  { part: 'files', what: 'the data files operators download, read as they come (gzipped or not)' },
  { part: 'upstream', what: 'the upstream client and its protection: breakers, fair queue, deadline, errors, reachability' },
  { part: 'fleet', what: 'Redis connections, and what one process tells the others' },
  { part: 'local-store', what: 'the local records: files, their format, the in-memory set, watching' },
  { part: 'open-access', what: 'the open-access copy finder and its providers' },
  { part: 'cache', what: 'the record cache, its entries and their work, the cache file, the shared tier in Redis' },
  { part: 'metadata', what: "the agencies' metadata, fetched and cached" },
  { part: 'copy', what: "the registry copy: the agencies' public data files in one LMDB store on disk, its writer" },
  { part: 'lookup', what: "the lookup flow: resolver, proxy service, 10320/loc loader, the reader's country" },
  { part: 'recording', what: 'recording while serving (RECORD_TO) and its lock file' },
  { part: 'retraction', what: 'retraction and correction notices: Crossref, the Retraction Watch file, cached and shared' },
  { part: 'landing', what: 'the landing-page prober: address guard, robots.txt, host slots, the verdicts cached and shared' },
  { part: 'verify', what: 'one registered line verified: its registered metadata, and each level asked at once' },
  { part: 'health', what: 'resolution health: the watched DOIs checked on a schedule, their history in SQLite, one checker for the fleet' }
]

const ROOT = new URL('../', import.meta.url)
const SRC = new URL('src/', ROOT)

/** The floor of a path under src/ (its index in FLOORS), or undefined when the table does not name it. */
function floorOf(path: string): number | undefined {
  const index = FLOORS.findIndex(({ holds }) => holds.some((h) => (h.endsWith('/') ? path.startsWith(h) : path === h)))
  return index === -1 ? undefined : index
}

/** Every .ts file under src/ (or under `dir` of `base`), as a path relative to src/ (to `base`). */
function sourceFiles(dir = '', base = SRC): string[] {
  return readdirSync(new URL(dir, base), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}${entry.name}`
    if (entry.isDirectory()) return entry.name.startsWith('.') ? [] : sourceFiles(`${path}/`, base)
    return /\.m?ts$/.test(entry.name) ? [path] : []
  })
}

/** What a file imports (static, type-only, re-exports, dynamic): our own files as paths under src/, packages by name. */
function importsOf(path: string, text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map(({ fileName }) =>
      fileName.startsWith('.') ? posix.join(posix.dirname(path), fileName).replace(/\.js$/, '.ts') : fileName
    )
}

/** The part of src/resolve/ a path stands in (its index in RESOLVE_PARTS); undefined outside resolve/, -1 on no part. */
function partOf(path: string): number | undefined {
  if (!path.startsWith('resolve/')) return undefined
  return RESOLVE_PARTS.findIndex(({ part }) => path.startsWith(`resolve/${part}/`))
}

/** Each import of one resolve/ part from a part above the importer's, said in a line. */
function upwardPartImports(imports: ReadonlyMap<string, readonly string[]>): string[] {
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
function upwardImports(imports: ReadonlyMap<string, readonly string[]>): string[] {
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
function sourceImports(): Map<string, string[]> {
  sourceImportsRead ??= new Map(sourceFiles().map((path) => [path, importsOf(path, readFileSync(new URL(path, SRC), 'utf8'))]))
  return sourceImportsRead
}

/** The imports of every TypeScript file of ours (src/, bench/, test/, scripts/), as paths from the repository's root. */
function ourImports(): Map<string, string[]> {
  const paths = ['src/', 'bench/', 'test/', 'scripts/'].flatMap((dir) => sourceFiles(dir, ROOT))
  return new Map(paths.map((path) => [path, importsOf(path, readFileSync(new URL(path, ROOT), 'utf8'))]))
}

/**
 * Each circle of imports (files that import each other, however indirectly), said as one way round it:
 * "a.ts → b.ts → a.ts". Tarjan's strongly connected components; a circle of one file imports itself.
 */
function circles(imports: ReadonlyMap<string, readonly string[]>): string[] {
  const order = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const found: string[] = []
  const visit = (file: string): void => {
    const index = order.size
    order.set(file, index)
    low.set(file, index)
    stack.push(file)
    for (const target of imports.get(file) ?? []) {
      if (!imports.has(target)) continue
      if (!order.has(target)) visit(target)
      // Still on the stack: in this file's circle. Off it: in a component already closed, which no circle of this file enters.
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
function wayRound(start: string, members: ReadonlySet<string>, imports: ReadonlyMap<string, readonly string[]>): string {
  const cameFrom = new Map<string, string>()
  const queue = [start]
  for (const file of queue) {
    for (const target of imports.get(file) ?? []) {
      if (target === start) {
        const way: string[] = []
        for (let at: string | undefined = file; at !== undefined && at !== start; at = cameFrom.get(at)) way.unshift(at)
        return [start, ...way, start].join(' → ')
      }
      if (members.has(target) && !cameFrom.has(target)) {
        cameFrom.set(target, file)
        queue.push(target)
      }
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
    const outside = [...sourceImports()]
      .filter(([file]) => file.startsWith('handle/'))
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
    const text = ["import type { Resolver } from '../lookup/resolver.js'", "import { within } from '../upstream/deadline.js'"].join('\n')
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

  it("a circle is found, whatever its imports' form, types too; a file imported twice on the way is not one", () => {
    const imports = new Map([
      ['bench/lib/batch.ts', importsOf('bench/lib/batch.ts', "import type { Context } from './scenarios.js'\nimport './results.js'")],
      ['bench/lib/scenarios.ts', importsOf('bench/lib/scenarios.ts', "import { batchSection } from './batch.js'\nimport './results.js'")],
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

const ARCHITECTURE_DOC = readFileSync(new URL('docs/architecture.md', ROOT), 'utf8')
const SETTING_NAMES = new Set(Object.values(OPTIONS).map((option) => option.env))

/** The file of src/ a doc means by a path ("src/http/batch.ts", "http/batch.ts", "routes/batch.ts"); undefined: none, or several. */
function fileNamed(named: string): string | undefined {
  const path = named.replace(/^src\//, '')
  const files = sourceFiles()
  if (files.includes(path)) return path
  const ending = files.filter((file) => file.endsWith(`/${path}`))
  return ending.length === 1 ? ending[0] : undefined
}

const declared = new Map<string, Set<string>>()

/** The names a file under src/ declares: functions, variables, types, classes, and the methods and properties of its objects. */
function declaredIn(path: string): Set<string> {
  const known = declared.get(path)
  if (known !== undefined) return known
  const names = new Set<string>()
  declared.set(path, names)
  const visit = (node: ts.Node): void => {
    const declaration =
      ts.isFunctionDeclaration(node) ||
      ts.isVariableDeclaration(node) ||
      ts.isClassDeclaration(node) ||
      ts.isInterfaceDeclaration(node) ||
      ts.isTypeAliasDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isPropertyAssignment(node) ||
      ts.isShorthandPropertyAssignment(node) ||
      ts.isPropertySignature(node) ||
      ts.isMethodSignature(node) ||
      ts.isPropertyDeclaration(node) ||
      ts.isBindingElement(node)
    if (declaration && node.name !== undefined && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) names.add(node.name.text)
    ts.forEachChild(node, visit)
  }
  visit(ts.createSourceFile(path, readFileSync(new URL(path, SRC), 'utf8'), ts.ScriptTarget.Latest))
  return names
}

/**
 * What a cell of a docs table names in backticks: the files (`src/http/batch.ts`, `main/workers.ts workerCount`),
 * and each function with the file named last before it. Settings (`OFFLINE`) and other code (`/metrics`) are left out.
 */
function namedIn(cell: string): { files: string[]; functions: Array<{ name: string; file: string }> } {
  const files: string[] = []
  const functions: Array<{ name: string; file: string }> = []
  for (const [, quoted = ''] of cell.matchAll(/`([^`]+)`/g)) {
    const [first = '', ...rest] = quoted.split(' ')
    const words = first.endsWith('.ts') ? (files.push(first), rest) : [quoted]
    const file = files.at(-1)
    for (const word of words) {
      if (file !== undefined && /^[A-Za-z_]\w*$/.test(word) && !SETTING_NAMES.has(word)) functions.push({ name: word, file })
    }
  }
  return { files, functions }
}

/** Each row of the settings table of docs/architecture.md ("The settings"): its settings and what its other cells name. */
function settingsRows(): Array<{ settings: string[]; files: string[]; functions: Array<{ name: string; file: string }> }> {
  const section = ARCHITECTURE_DOC.slice(ARCHITECTURE_DOC.indexOf('### The settings'), ARCHITECTURE_DOC.indexOf('## Walkthroughs'))
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [settingsCell = '', ...rest] = line.slice(1, -1).split(' | ')
      const named = rest.map(namedIn)
      return {
        settings: [...settingsCell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? ''),
        files: named.flatMap((n) => n.files),
        functions: named.flatMap((n) => n.functions)
      }
    })
}

/** What a list of (file, function) pairs gets wrong: a file that is not one file of src/, a function its file does not declare. */
function wrongNames(files: readonly string[], functions: ReadonlyArray<{ name: string; file: string }>): string[] {
  const missingFiles = files.filter((file) => fileNamed(file) === undefined).map((file) => `${file} is no file of src/ (or is several)`)
  const missingFunctions = functions
    .filter(({ name, file }) => {
      const path = fileNamed(file)
      return path !== undefined && !declaredIn(path).has(name)
    })
    .map(({ name, file }) => `${name} is not declared in ${file}`)
  return [...new Set([...missingFiles, ...missingFunctions])]
}

/** What a list of settings' names gets wrong against OPTIONS: a name that is no setting, a setting not named exactly once. */
function miscounted(named: readonly string[]): string[] {
  const unknown = named.filter((name) => !SETTING_NAMES.has(name)).map((name) => `${name} is no setting`)
  const counts = [...SETTING_NAMES].map((name) => ({ name, count: named.filter((n) => n === name).length }))
  return [...unknown, ...counts.filter(({ count }) => count !== 1).map(({ name, count }) => `${name} is named ${count} times`)]
}

/** The parts each part of resolve/ imports, lowest first, read from the code. */
function partsImported(imports: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const found = new Map(RESOLVE_PARTS.map(({ part }) => [part, new Set<number>()]))
  for (const [file, targets] of imports) {
    const from = partOf(file)
    for (const target of targets) {
      const to = partOf(target)
      if (from !== undefined && to !== undefined && to >= 0 && to !== from) found.get(RESOLVE_PARTS[from]?.part ?? '')?.add(to)
    }
  }
  return new Map([...found].map(([part, to]) => [part, [...to].sort((a, b) => a - b).map((i) => RESOLVE_PARTS[i]?.part ?? '')]))
}

/** The table of docs/architecture.md "The rooms of resolve/": each row's part and the parts it says it imports. */
function roomRows(): Map<string, string[]> {
  const section = ARCHITECTURE_DOC.slice(ARCHITECTURE_DOC.indexOf('## The rooms of resolve/'), ARCHITECTURE_DOC.indexOf('## One request'))
  return new Map(
    section
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => {
        const cells = line
          .slice(1, -1)
          .split(' | ')
          .map((cell) => cell.trim())
        const imports = cells.at(-1) === '—' ? [] : (cells.at(-1) ?? '').split(', ')
        return [(cells[0] ?? '').replace(/^`(.*)\/`$/, '$1'), imports]
      })
  )
}

describe('docs/architecture.md, "The rooms of resolve/"', () => {
  it('has a row for each part of RESOLVE_PARTS, in its order, with what each imports now', () => {
    expect([...roomRows()]).toEqual([...partsImported(sourceImports())])
  })
})

/** What each row of the rules table of docs/architecture.md ("Where does X live") names in its file and function cells. */
function ruleRows(): Array<{ files: string[]; functions: Array<{ name: string; file: string }> }> {
  const section = ARCHITECTURE_DOC.slice(ARCHITECTURE_DOC.indexOf('## Where does X live'), ARCHITECTURE_DOC.indexOf('### The settings'))
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| rule '))
    .map((line) => {
      const [, , fileCell = '', functionCell = ''] = line.slice(1, -1).split(' | ')
      return namedIn(`${fileCell} ${functionCell}`)
    })
    .filter((row) => row.files.length > 0)
}

/** The paragraph "Beyond doi.org" under the rules table: the files and folders it names, and `file.ts` (`function`) pairs. */
function beyondDoiOrg(): { files: string[]; folders: string[]; functions: Array<{ name: string; file: string }> } {
  const start = ARCHITECTURE_DOC.indexOf('Beyond doi.org:')
  const text = ARCHITECTURE_DOC.slice(start, ARCHITECTURE_DOC.indexOf('\n\n', start)).replaceAll('\n', ' ')
  const quoted = [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '')
  return {
    files: quoted.filter((q) => q.endsWith('.ts')),
    folders: quoted.filter((q) => q.startsWith('src/') && q.endsWith('/')),
    functions: [...text.matchAll(/`([^`]+\.ts)` \(`(\w+)`/g)].map(([, file = '', name = '']) => ({ name, file }))
  }
}

describe('docs/architecture.md, "Where does X live"', () => {
  it('the rules table names files that exist and functions that are declared in the file named before them', () => {
    const rows = ruleRows()
    expect(rows.length).toBeGreaterThan(40)
    expect(
      wrongNames(
        rows.flatMap((row) => row.files),
        rows.flatMap((row) => row.functions)
      )
    ).toEqual([])
  })

  it('"Beyond doi.org" names files and folders that exist, and functions of the files they follow', () => {
    const { files, folders, functions } = beyondDoiOrg()
    expect(files.length).toBeGreaterThan(5)
    const missingFolders = folders.filter((folder) => !existsSync(new URL(folder, ROOT))).map((folder) => `${folder} is no folder`)
    expect([...wrongNames(files, functions), ...missingFolders]).toEqual([])
  })
})

describe('docs/architecture.md, "The settings"', () => {
  it('has a row for every setting of OPTIONS, each once, and no name that is not a setting', () => {
    expect(miscounted(settingsRows().flatMap((row) => row.settings))).toEqual([])
  })

  it('names files that exist and functions that are declared in the file named before them', () => {
    const rows = settingsRows()
    expect(rows.length).toBeGreaterThan(30)
    expect(
      wrongNames(
        rows.flatMap((row) => row.files),
        rows.flatMap((row) => row.functions)
      )
    ).toEqual([])
  })

  it('a setting named twice, unnamed or unknown, a missing file and a function of another file are found', () => {
    const named = [...SETTING_NAMES].filter((name) => name !== 'PORT').concat('HOST', 'NO_SUCH_SETTING')
    expect(miscounted(named)).toEqual(['NO_SUCH_SETTING is no setting', 'HOST is named 2 times', 'PORT is named 0 times'])
    const cell = '`src/http/admission.ts` (`createAdmission`, `guardUpstream`), `http/no-such-file.ts`'
    const { files, functions } = namedIn(cell)
    const admission = 'src/http/admission.ts'
    expect(functions).toEqual([
      { name: 'createAdmission', file: admission },
      { name: 'guardUpstream', file: admission }
    ])
    expect(wrongNames(files, functions)).toEqual([
      'http/no-such-file.ts is no file of src/ (or is several)',
      'guardUpstream is not declared in src/http/admission.ts'
    ])
  })
})
