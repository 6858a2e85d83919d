import { mkdtemp, mkdir, readFile, rename, rm, unlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { chooseLocation } from '../../../src/handle/locations.js'
import { valueString } from '../../../src/handle/types.js'
import { LocalStoreError, openLocalStore } from '../../../src/resolve/local-store/store.js'
import type { LocalStore, LocalStoreOptions } from '../../../src/resolve/local-store/store.js'
import { parseStoreFile } from '../../../src/resolve/local-store/file-format.js'
import { urlOf, urlRecord } from '../../support/local-records.js'

/** A logger that keeps what it is told, so tests can read the operator's view. */
function recordingLog(): LocalStoreOptions['log'] & { lines: Array<{ level: string; obj: object; msg: string }> } {
  const lines: Array<{ level: string; obj: object; msg: string }> = []
  return {
    lines,
    info: (obj, msg) => {
      lines.push({ level: 'info', obj, msg })
    },
    warn: (obj, msg) => {
      lines.push({ level: 'warn', obj, msg })
    },
    error: (obj, msg) => {
      lines.push({ level: 'error', obj, msg })
    }
  }
}

/** Poll until check() is true, or fail after the deadline. Never a fixed sleep. */
async function eventually(check: () => boolean, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

// ---------------------------------------------------------------------------------------------------------

describe('openLocalStore: a directory of record files', () => {
  let dir: string
  const stores: LocalStore[] = []
  const open = async (opts: Partial<LocalStoreOptions> = {}): Promise<LocalStore> => {
    const store = await openLocalStore({ dir, authoritativePrefixes: ['10.5555'], watch: false, log: recordingLog(), ...opts })
    stores.push(store)
    return store
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-store-'))
  })
  afterEach(async () => {
    await Promise.all(
      stores.splice(0).map(async (s) => {
        await s.close()
      })
    )
    await rm(dir, { recursive: true, force: true })
  })

  it('serves records from .json and .ndjson files, matching handles with ASCII case folding', async () => {
    await writeFile(join(dir, 'one.json'), urlRecord('10.5555/One', 'https://example.org/one'))
    await writeFile(
      join(dir, 'many.ndjson'),
      `${urlRecord('10.5555/two', 'https://example.org/two')}\n${urlRecord('10.9999/three', 'https://example.org/three')}\n`
    )
    const store = await open()
    expect(urlOf(store.get('10.5555/ONE'))).toBe('https://example.org/one')
    expect(urlOf(store.get('10.5555/Two'))).toBe('https://example.org/two')
    expect(store.get('10.5555/missing')).toBeUndefined()
    expect(store.stats()).toEqual({ records: 3, files: 2, rejectedFiles: 0, problems: 0 })
  })

  it('a bad file does not stop the others, and the log names the file, line and problem', async () => {
    const log = recordingLog()
    await writeFile(join(dir, 'a-broken.json'), '{"handle": "10.5555/x", "values": [')
    await writeFile(join(dir, 'b-mixed.ndjson'), `${urlRecord('10.5555/ok', 'https://example.org/ok')}\nnot json\n`)
    await writeFile(join(dir, 'c-good.json'), urlRecord('10.5555/good', 'https://example.org/good'))
    const store = await open({ log })
    expect(urlOf(store.get('10.5555/ok'))).toBe('https://example.org/ok')
    expect(urlOf(store.get('10.5555/good'))).toBe('https://example.org/good')
    expect(store.stats()).toEqual({ records: 2, files: 2, rejectedFiles: 1, problems: 2 })
    const said = log.lines.map((l) => l.msg)
    expect(said.filter((m) => m.startsWith('local store: skipped b-mixed.ndjson line 2: not valid JSON'))).toHaveLength(1)
    expect(said).toContain('local store: rejected a-broken.json; its records are not served')
  })

  it("ignores dot-files (a writer's temporary file) and other extensions", async () => {
    await writeFile(join(dir, '.partial.ndjson'), urlRecord('10.5555/hidden', 'https://example.org/'))
    await writeFile(join(dir, 'notes.txt'), urlRecord('10.5555/txt', 'https://example.org/'))
    await mkdir(join(dir, 'sub.json'))
    const store = await open()
    expect(store.get('10.5555/hidden')).toBeUndefined()
    expect(store.get('10.5555/txt')).toBeUndefined()
    expect(store.stats().records).toBe(0)
  })

  it('an empty directory is a store with no records', async () => {
    const store = await open()
    expect(store.stats()).toEqual({ records: 0, files: 0, rejectedFiles: 0, problems: 0 })
  })

  it('a missing directory stops the start with a message naming localStoreDir', async () => {
    const missing = join(dir, 'nope')
    await expect(openLocalStore({ dir: missing, authoritativePrefixes: [], watch: false, log: recordingLog() })).rejects.toThrow(
      LocalStoreError
    )
    await expect(openLocalStore({ dir: missing, authoritativePrefixes: [], watch: false, log: recordingLog() })).rejects.toThrow(
      /localStoreDir: .*nope.* does not exist/
    )
  })

  it('a file given as the directory stops the start', async () => {
    await writeFile(join(dir, 'file.ndjson'), '')
    await expect(
      openLocalStore({ dir: join(dir, 'file.ndjson'), authoritativePrefixes: [], watch: false, log: recordingLog() })
    ).rejects.toThrow(/localStoreDir: .* is not a directory/)
  })

  it.each([
    { handle: '10.5555/anything', authoritative: true },
    { handle: '10.5555', authoritative: true }, // the prefix record itself
    { handle: '10.abcd/x', authoritative: true }, // configured as 10.ABCD: ASCII case folding
    { handle: '10.55555/x', authoritative: false },
    { handle: '10.1000/x', authoritative: false },
    { handle: '0.NA/10.5555', authoritative: false }
  ])('authority: $handle is served only locally: $authoritative', async ({ handle, authoritative }) => {
    const store = await open({ authoritativePrefixes: ['10.5555', ' 10.ABCD ', ''] })
    expect(store.isAuthoritative(handle)).toBe(authoritative)
  })
})

describe('openLocalStore: reload when files change (issue 7 §1)', () => {
  let dir: string
  let store: LocalStore | undefined
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-reload-'))
  })
  afterEach(async () => {
    await store?.close()
    store = undefined
    await rm(dir, { recursive: true, force: true })
  })

  describe.each([
    { mode: 'fs.watch', opts: { watch: true } },
    { mode: 'polling', opts: { watch: true, poll: true, pollIntervalMs: 50 } }
  ])('with $mode', ({ opts }) => {
    it('a changed file is served without a restart', async () => {
      await writeFile(join(dir, 'r.ndjson'), urlRecord('10.5555/changing', 'https://example.org/old'))
      store = await openLocalStore({ dir, authoritativePrefixes: [], log: recordingLog(), ...opts })
      expect(urlOf(store.get('10.5555/changing'))).toBe('https://example.org/old')
      await writeFile(
        join(dir, 'r.ndjson'),
        `${urlRecord('10.5555/changing', 'https://example.org/new')}\n${urlRecord('10.5555/added', 'https://example.org/added')}\n`
      )
      const s = store
      await eventually(() => urlOf(s.get('10.5555/changing')) === 'https://example.org/new', 'the new record is served')
      expect(urlOf(s.get('10.5555/added'))).toBe('https://example.org/added')
    })

    it('deleting a file removes its records', async () => {
      await writeFile(join(dir, 'keep.ndjson'), urlRecord('10.5555/keep', 'https://example.org/keep'))
      await writeFile(join(dir, 'gone.ndjson'), urlRecord('10.5555/gone', 'https://example.org/gone'))
      store = await openLocalStore({ dir, authoritativePrefixes: [], log: recordingLog(), ...opts })
      expect(store.get('10.5555/gone')).toBeDefined()
      await unlink(join(dir, 'gone.ndjson'))
      const s = store
      await eventually(() => s.get('10.5555/gone') === undefined, 'the deleted record is gone')
      expect(urlOf(s.get('10.5555/keep'))).toBe('https://example.org/keep')
      expect(s.stats().files).toBe(1)
    })

    it('touching a store file asks for a reload (docs/local-records.md: how to have a change read)', async () => {
      const log = recordingLog()
      await writeFile(join(dir, 'r.ndjson'), urlRecord('10.5555/touched', 'https://example.org/t'))
      store = await openLocalStore({ dir, authoritativePrefixes: [], log, ...opts })
      const reloads = (): number =>
        log.lines.filter((l) => l.msg === 'local store loaded' && (l.obj as { reason?: string }).reason === 'change').length
      expect(reloads()).toBe(0)
      const later = new Date(Date.now() + 5000) // a modification time that differs even on a coarse clock
      await utimes(join(dir, 'r.ndjson'), later, later)
      await eventually(() => reloads() > 0, 'a reload after the touch')
      expect(urlOf(store.get('10.5555/touched'))).toBe('https://example.org/t')
    })
  })

  it('a file broken while the server runs is logged, and the other files keep serving', async () => {
    const log = recordingLog()
    await writeFile(join(dir, 'a.ndjson'), urlRecord('10.5555/a', 'https://example.org/a'))
    await writeFile(join(dir, 'b.json'), urlRecord('10.5555/b', 'https://example.org/b'))
    store = await openLocalStore({ dir, authoritativePrefixes: [], watch: true, log })
    await writeFile(join(dir, 'b.json'), '{ broken')
    const s = store
    await eventually(() => s.stats().rejectedFiles === 1, 'the broken file is rejected')
    expect(urlOf(s.get('10.5555/a'))).toBe('https://example.org/a')
    expect(s.get('10.5555/b')).toBeUndefined()
    expect(log.lines.some((l) => l.level === 'error' && l.msg.includes('b.json'))).toBe(true)
  })

  it('keys() lists every loaded record by its cacheKey (upper-cased), prefix records too, and a reload tells its listeners after the swap', async () => {
    await writeFile(
      join(dir, 'r.ndjson'),
      `${urlRecord('10.5555/One', 'https://example.org/one')}\n${urlRecord('10.5555', 'https://example.org/prefix')}\n`
    )
    store = await openLocalStore({ dir, authoritativePrefixes: [], watch: true, poll: true, pollIntervalMs: 50, log: recordingLog() })
    const s = store
    expect([...s.keys()].sort()).toEqual(['10.5555', '10.5555/ONE'])
    const seen: string[][] = []
    const stop = s.onReload(() => seen.push([...s.keys()].sort()))
    const before = s.keys() // taken before the reload: still the old set when read after it
    await writeFile(join(dir, 'r.ndjson'), `${urlRecord('10.5555/two', 'https://example.org/two')}\n`)
    await eventually(() => seen.length > 0, 'the listener is told of the reload')
    expect(seen[0]).toEqual(['10.5555/TWO'])
    expect([...before].sort()).toEqual(['10.5555', '10.5555/ONE'])
    stop()
    await writeFile(join(dir, 'r.ndjson'), `${urlRecord('10.5555/three', 'https://example.org/three')}\n`)
    await eventually(() => s.get('10.5555/three') !== undefined, 'the third set is loaded')
    expect(seen).toHaveLength(1)
  })

  it('a listener of reloads that throws is logged, and the others are still told', async () => {
    const log = recordingLog()
    await writeFile(join(dir, 'r.ndjson'), urlRecord('10.5555/a', 'https://example.org/a'))
    store = await openLocalStore({ dir, authoritativePrefixes: [], watch: true, poll: true, pollIntervalMs: 50, log })
    let told = 0
    store.onReload(() => {
      throw new Error('listener broke')
    })
    store.onReload(() => told++)
    await writeFile(join(dir, 'r.ndjson'), urlRecord('10.5555/b', 'https://example.org/b'))
    await eventually(() => told > 0, 'the second listener is told')
    expect(log.lines.some((l) => l.level === 'error' && l.msg === 'local store: a listener of reloads failed')).toBe(true)
  })

  it('a reader never sees half a reload: 2,000 records replaced by 2,000 others', async () => {
    const N = 2000
    const version = (tag: string): string =>
      Array.from({ length: N }, (_, i) => urlRecord(`10.5555/${tag}-${i}`, `https://example.org/${tag}/${i}`)).join('\n') + '\n'
    await writeFile(join(dir, 'big.ndjson'), version('old'))
    store = await openLocalStore({ dir, authoritativePrefixes: [], watch: true, log: recordingLog() })
    const s = store
    const seen = { old: 0, new: 0, mixed: 0 }
    let stop = false
    // A tight reader: one look per event-loop turn, interleaved with the reload's file reads.
    const reader = new Promise<void>((resolve) => {
      const look = (): void => {
        const present = ['old-0', `old-${N - 1}`, 'new-0', `new-${N - 1}`].map((h) => s.get(`10.5555/${h}`) !== undefined)
        if (present.join() === 'true,true,false,false') seen.old++
        else if (present.join() === 'false,false,true,true') seen.new++
        else seen.mixed++
        if (stop) resolve()
        else setImmediate(look)
      }
      look()
    })
    // Replace the file the way a careful writer does: write a dot-file, then rename it over the old one.
    await writeFile(join(dir, '.big.ndjson.tmp'), version('new'))
    await rename(join(dir, '.big.ndjson.tmp'), join(dir, 'big.ndjson'))
    await eventually(() => seen.new > 0, 'the reader sees the new records')
    stop = true
    await reader
    expect(seen.mixed).toBe(0)
    expect(seen.old).toBeGreaterThan(0)
    expect(s.stats().records).toBe(N)
  })
})

describe('the sample store shipped in config/sample-records (issue 7 §4)', () => {
  const sampleDir = join(import.meta.dirname, '../../../config/sample-records')

  it('loads without a single problem', async () => {
    const log = recordingLog()
    const store = await openLocalStore({ dir: sampleDir, authoritativePrefixes: ['10.5555'], watch: false, log })
    try {
      expect(store.stats()).toMatchObject({ rejectedFiles: 0, problems: 0 })
      expect(log.lines.filter((l) => l.level !== 'info')).toEqual([])
    } finally {
      await store.close()
    }
  })

  it.each([
    { handle: '10.5555/sample', type: 'URL', value: 'https://www.doi.org/' },
    { handle: '10.5555/sample-alias', type: 'HS_ALIAS', value: '10.5555/sample' },
    { handle: '10.5555/sample-values', type: 'EMAIL', value: 'data-steward@example.org' },
    { handle: '10.5555', type: 'HS_SERV', value: '10.SERV/CROSSREF' }
  ])('$handle has a $type value $value', async ({ handle, type, value }) => {
    const { records } = parseStoreFile('sample.ndjson', await readFile(join(sampleDir, 'sample.ndjson'), 'utf8'))
    const values = records.find((r) => r.handle === handle)?.values ?? []
    expect(values.filter((v) => v.type === type).map(valueString)).toEqual([value])
  })

  it.each([
    { country: undefined, href: 'https://www.doi.org/the-identifier/what-is-a-doi/' },
    { country: 'GB', href: 'https://www.doi.org/the-identifier/resources/handbook/' }
  ])('10.5555/sample-loc redirects a visitor from $country to $href (its 10320/loc)', async ({ country, href }) => {
    const { records } = parseStoreFile('sample.ndjson', await readFile(join(sampleDir, 'sample.ndjson'), 'utf8'))
    const values = records.find((r) => r.handle === '10.5555/sample-loc')?.values ?? []
    const decision = chooseLocation({
      handle: '10.5555/sample-loc',
      values,
      includes: new Map(),
      namespaceValues: [],
      locatt: [],
      country,
      random: () => 0.5
    })
    expect(decision).toMatchObject({ kind: 'redirect', href })
  })

  it('the values-only record has no URL (it shows the values page)', async () => {
    const { records } = parseStoreFile('sample.ndjson', await readFile(join(sampleDir, 'sample.ndjson'), 'utf8'))
    const values = records.find((r) => r.handle === '10.5555/sample-values')?.values ?? []
    expect(values.map((v) => v.type).sort()).toEqual(['DESC', 'EMAIL', 'HS_ADMIN'])
  })
})
