import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { runImportCommand } from '../../src/command/import/command.js'
import { copyKeyOf } from '../../src/handle/copy/key.js'
import { decodeCsl } from '../../src/handle/copy/record-codec.js'
import { openCopy } from '../../src/resolve/copy/store.js'
import type { CopyStore } from '../../src/resolve/copy/store.js'
import {
  crossrefAnnualTar,
  crossrefInner,
  crossrefPage,
  crossrefWork,
  crossrefWorks,
  cutOff,
  DATACITE_README,
  dataciteRecord,
  dataciteTar,
  gz,
  lines,
  mirrorRecord,
  tarOf,
  write
} from '../support/copy-files.js'

// `doi-proxy import` (issue 43, plan-43 §1.11, §4, §5) on files built at test time in the agencies' shapes.
// Most runs are in this process (runImportCommand, the command's body, with its output captured); the
// kill -9 and the exit codes run the real command as a child.

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'doi-proxy-import-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const fresh = (name: string): string => join(root, `${name}-${++n}`)

interface Ran {
  code: number
  stdout: string
  stderr: string
}

const ENV = { REGISTRY_COPY_MIN_FREE_BYTES: '0' }

async function importing(args: string[], env: Record<string, string> = {}, signal?: AbortSignal): Promise<Ran> {
  let stdout = ''
  let stderr = ''
  const code = await runImportCommand(args, {
    cwd: root,
    env: { ...ENV, ...env },
    ...(signal === undefined ? {} : { signal }),
    stdout: { write: (s: string) => Boolean((stdout += s)) } as unknown as NodeJS.WritableStream,
    stderr: { write: (s: string) => Boolean((stderr += s)) } as unknown as NodeJS.WritableStream
  })
  return { code, stdout, stderr }
}

async function json(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown> & { code: number }> {
  const ran = await importing(['--json', ...args], env)
  return { ...(JSON.parse(ran.stdout) as Record<string, unknown>), code: ran.code }
}

async function withCopy<T>(dir: string, read: (copy: CopyStore) => T): Promise<T> {
  const copy = openCopy({ dir, writable: false })
  try {
    return read(copy)
  } finally {
    await copy.close()
  }
}

describe('each format, told from its content', () => {
  it("Crossref's annual file (a tar of .json.gz): every work, its CSL, the prefixes whole and the coverage moved", async () => {
    const tar = await crossrefAnnualTar(fresh('crossref.tar'), [
      crossrefWorks('10.5555', 0, 3, Date.UTC(2025, 2, 1)),
      crossrefWorks('10.6666', 0, 2, Date.UTC(2025, 3, 30))
    ])
    const to = fresh('copy')
    const ran = await importing(['--to', to, tar])
    expect(ran).toMatchObject({ code: 0 })
    expect(ran.stdout).toContain('imported 5 · unchanged 0 · filtered 0 · malformed 0')
    expect(ran.stdout).toContain('the copy holds every Crossref DOI of its 2 prefixes as of 2025-04-30')
    await withCopy(to, (copy) => {
      expect(copy.head(copyKeyOf('10.5555/W1'))).toMatchObject({
        kind: 'work',
        agency: 'crossref',
        covered: true,
        target: 'https://publisher.example/10.5555/w1'
      })
      expect(decodeCsl(copy.get(copyKeyOf('10.5555/w1'))!)).toMatchObject({ type: 'article-journal', title: 'The work 10.5555/w1' })
      expect(copy.prefix('10.6666')).toEqual({ agency: 'crossref', records: 2, whole: true, asOf: Date.UTC(2025, 3, 30) / 1000 })
      expect(copy.coverage()).toEqual({ crossref: { base: Date.UTC(2025, 3, 30) / 1000, through: Date.UTC(2025, 3, 30) / 1000 } })
    })
  })

  it("the torrent's directory of .json.gz is the same file", async () => {
    const dir = fresh('crossref-dir')
    write(join(dir, '0.json.gz'), gz(crossrefInner(crossrefWorks('10.5555', 0, 2))))
    write(join(dir, '1.json.gz'), gz(crossrefInner(crossrefWorks('10.5555', 2, 2))))
    const to = fresh('copy')
    expect(await json(['--to', to, dir])).toMatchObject({ code: 0, imported: 4, covered: [{ agency: 'crossref', prefixes: 1 }] })
  })

  it('pages of Crossref’s REST API, gzipped or not; a page vouches for no coverage', async () => {
    const a = write(fresh('page1.json'), crossrefPage(crossrefWorks('10.5555', 0, 2)))
    const b = write(fresh('page2.json.gz'), gz(crossrefPage(crossrefWorks('10.5555', 2, 1))))
    const to = fresh('copy')
    expect(await json(['--to', to, a, b])).toMatchObject({ code: 0, imported: 3, malformed: 0, covered: [] })
    await withCopy(to, (copy) => expect(copy.head(copyKeyOf('10.5555/w2'))).toMatchObject({ covered: false }))
  })

  it("DataCite's data file: JSON lines in monthly folders, and its state CSV's Registered DOIs", async () => {
    const states =
      'doi,state,client_id,updated\n10.80000/reg-1,registered,demo.client,2023-02-01T08:00:00.000Z\n10.80000/f,findable,demo,2023-01-01T00:00:00Z\n10.80000/d,draft,demo,2023-01-01T00:00:00Z\n'
    const tar = await dataciteTar(
      fresh('datacite.tar'),
      [
        [dataciteRecord('10.5281/zenodo.1'), dataciteRecord('10.5281/zenodo.2')],
        [dataciteRecord('10.5281/zenodo.3', { updated: '2025-02-03T00:00:00Z' })]
      ],
      states
    )
    const to = fresh('copy')
    expect(await json(['--to', to, tar])).toMatchObject({ code: 0, imported: 4, malformed: 0, covered: [{ agency: 'datacite' }] })
    await withCopy(to, (copy) => {
      expect(copy.head(copyKeyOf('10.5281/zenodo.3'))).toMatchObject({
        kind: 'work',
        agency: 'datacite',
        target: 'https://repository.example/10.5281/zenodo.3'
      })
      expect(copy.head(copyKeyOf('10.80000/reg-1'))).toMatchObject({ kind: 'registered', target: '' })
      expect(copy.head(copyKeyOf('10.80000/d'))).toBeUndefined()
    })
  })

  it('DataCite JSON lines not gzipped, and a DataCite REST page', async () => {
    const a = write(fresh('part.jsonl'), lines([dataciteRecord('10.5281/a')]))
    const b = write(fresh('dois.json'), JSON.stringify({ data: [dataciteRecord('10.5281/b')], meta: {}, links: {} }))
    expect(await json(['--to', fresh('copy'), a, b])).toMatchObject({ code: 0, imported: 2, malformed: 0 })
  })

  it('our own records: NDJSON (an alias too) and a JSON array', async () => {
    const ndjson = write(
      fresh('mirror.ndjson'),
      lines([
        mirrorRecord('10.1000/182', 'https://www.doi.org/the-identifier/resources/handbook'),
        { handle: '10.1234/OLD', values: [{ index: 1, type: 'HS_ALIAS', data: { format: 'string', value: '10.1234/new' }, ttl: 86400 }] }
      ])
    )
    const array = write(fresh('records.json'), JSON.stringify([mirrorRecord('10.1000/183', 'https://example.org/183')]))
    const to = fresh('copy')
    expect(await json(['--to', to, ndjson, array])).toMatchObject({ code: 0, imported: 3, malformed: 0 })
    await withCopy(to, (copy) => expect(copy.head(copyKeyOf('10.1234/old'))).toMatchObject({ kind: 'alias', target: '10.1234/new' }))
  })
})

describe('running again', () => {
  it('twice changes nothing: a file imported whole is passed over, and --again reads it to no change', async () => {
    const tar = await crossrefAnnualTar(fresh('crossref.tar'), [crossrefWorks('10.5555', 0, 4)])
    const to = fresh('copy')
    expect(await json(['--to', to, tar])).toMatchObject({ imported: 4 })
    const before = await withCopy(to, (copy) => copy.stats())
    expect(await json(['--to', to, tar])).toMatchObject({ code: 0, imported: 0, unchanged: 0, alreadyImported: 1 })
    expect(await json(['--to', to, '--again', tar])).toMatchObject({ code: 0, imported: 0, unchanged: 4, alreadyImported: 0 })
    expect(await withCopy(to, (copy) => copy.stats())).toEqual(before)
  })

  it('newer wins: a later file with a newer indexed date replaces the URL, an older one does not', async () => {
    const to = fresh('copy')
    const work = (url: string, day: number) => crossrefWork('10.5555/x', { url, indexedMs: Date.UTC(2025, 0, day) })
    await json(['--to', to, write(fresh('p.json'), crossrefPage([work('https://a.example/', 2)]))])
    expect(await json(['--to', to, write(fresh('p.json'), crossrefPage([work('https://b.example/', 3)]))])).toMatchObject({ imported: 1 })
    expect(await json(['--to', to, write(fresh('p.json'), crossrefPage([work('https://c.example/', 1)]))])).toMatchObject({
      imported: 0,
      unchanged: 1,
      older: 1
    })
    await withCopy(to, (copy) => expect(copy.head(copyKeyOf('10.5555/x'))).toMatchObject({ target: 'https://b.example/' }))
  })
})

describe('filters', () => {
  it('--prefix keeps those prefixes; the rest is counted as filtered', async () => {
    const page = write(fresh('p.json'), crossrefPage([...crossrefWorks('10.5555', 0, 2), ...crossrefWorks('10.6666', 0, 3)]))
    expect(await json(['--to', fresh('copy'), '--prefix', '10.6666', page])).toMatchObject({ imported: 3, filtered: 2 })
  })

  it('--since keeps records the agency changed on or after the date', async () => {
    const page = write(
      fresh('p.json'),
      crossrefPage([
        crossrefWork('10.5555/old', { indexedMs: Date.UTC(2024, 11, 31) }),
        crossrefWork('10.5555/new', { indexedMs: Date.UTC(2025, 0, 1) })
      ])
    )
    expect(await json(['--to', fresh('copy'), '--since', '2025-01-01', page])).toMatchObject({ imported: 1, filtered: 1 })
  })

  it('--no-abstracts leaves abstracts out and the record says so', async () => {
    const work = { ...crossrefWork('10.5555/abs'), abstract: '<jats:p>We show things.</jats:p>' }
    const to = fresh('copy')
    await json(['--to', to, '--no-abstracts', write(fresh('p.json'), crossrefPage([work]))])
    await withCopy(to, (copy) => {
      expect(copy.head(copyKeyOf('10.5555/abs'))).toMatchObject({ abstractDropped: true })
      expect(decodeCsl(copy.get(copyKeyOf('10.5555/abs'))!)).not.toHaveProperty('abstract')
    })
  })
})

describe('bad input: each named and skipped, the rest imported', () => {
  it('a DOI with a control character, a javascript: URL, no URL, a broken item, a 10 MB item', async () => {
    const items = [
      crossrefWork('10.5555/good-1'),
      crossrefWork('10.5555/bell\u0007'),
      crossrefWork('10.5555/js', { url: 'javascript:alert(1)' }),
      crossrefWork('10.5555/none', { url: null }),
      crossrefWork('10.5555/huge', { title: 'x'.repeat(10 * 1024 * 1024) }),
      crossrefWork('10.5555/good-2')
    ]
    const inner = crossrefInner(items).replace('"DOI":"10.5555/good-2"', '"DOI":"10.5555/good-2",,')
    const tar = await tarOf(fresh('bad.tar'), [
      ['0000.json.gz', gz(inner)],
      ['0001.json.gz', gz(crossrefInner([crossrefWork('10.5555/good-3')]))]
    ])
    const to = fresh('copy')
    const ran = await importing(['--to', to, tar])
    expect(ran.code).toBe(0)
    const shown = `${tar} › 0000.json.gz`
    expect(ran.stdout).toContain(`imported 2 · unchanged 0 · filtered 0 · malformed 5 (named in ${join(to, 'import-problems.ndjson')})`)
    expect(ran.stdout).toContain(`${shown} item 2: the DOI has a control character (U+0007)`)
    expect(ran.stdout).toMatch(new RegExp(`${escape(shown)} item 3: 10\\.5555/js: .*javascript`))
    expect(ran.stdout).toMatch(new RegExp(`${escape(shown)} item 4: 10\\.5555/none: `))
    expect(ran.stdout).toContain(`${shown} item 5: the item is larger than 4194304 bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped`)
    expect(ran.stdout).toMatch(new RegExp(`${escape(shown)} item 6: not JSON \\(`))
    const named = readFileSync(join(to, 'import-problems.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(named.map((p) => p.item)).toEqual([2, 3, 4, 5, 6])
    expect(named[0]).toMatchObject({ file: tar, entry: '0000.json.gz', item: 2, message: 'the DOI has a control character (U+0007)' })
    // --strict makes the same run fail.
    expect((await importing(['--to', fresh('copy'), '--strict', tar])).code).toBe(1)
  })

  it('a gzip cut off: the items before the cut are imported, the cut named, and the next file read', async () => {
    const whole = gz(lines(Array.from({ length: 2000 }, (_, i) => dataciteRecord(`10.5281/cut.${i}`))))
    const cut = write(fresh('cut.jsonl.gz'), cutOff(whole, Math.floor(whole.length / 2)))
    const next = write(fresh('next.jsonl'), lines([dataciteRecord('10.5281/next')]))
    const ran = await json(['--to', fresh('copy'), cut, next])
    expect(ran.imported as number).toBeGreaterThan(0)
    expect(ran.imported as number).toBeLessThan(2001)
    expect(ran.problems).toContainEqual(
      expect.objectContaining({ file: cut, message: 'the gzip data is cut off (a download not finished?): the items before it were read' })
    )
  })

  it('JSON broken mid-structure stops that file, naming the byte; the next entry is read', async () => {
    const broken = crossrefInner([crossrefWork('10.5555/a'), crossrefWork('10.5555/b')]).replace('},{"indexed"', '}},{"indexed"')
    const tar = await tarOf(fresh('broken.tar'), [
      ['0000.json.gz', gz(broken)],
      ['0001.json.gz', gz(crossrefInner([crossrefWork('10.5555/c')]))]
    ])
    const ran = await json(['--to', fresh('copy'), tar])
    expect(ran).toMatchObject({ imported: 2, malformed: 1, covered: [] })
    expect(ran.problems).toEqual([
      expect.objectContaining({
        entry: '0000.json.gz',
        message: expect.stringMatching(/^JSON error at byte \d+: an unexpected }; the rest of the file is skipped$/)
      })
    ])
  })

  it('a tar cut off names the entry it cut, and moves no coverage', async () => {
    const whole = readFileSync(await crossrefAnnualTar(fresh('t.tar'), [crossrefWorks('10.5555', 0, 50), crossrefWorks('10.5555', 50, 50)]))
    const cut = write(fresh('cut.tar'), cutOff(whole, whole.length - 1500))
    const ran = await json(['--to', fresh('copy'), cut])
    expect(ran.covered).toEqual([])
    expect(ran.problems).toContainEqual(expect.objectContaining({ file: cut, message: expect.stringMatching(/tar is damaged|cut off/) }))
  })

  it('a file named as data in no format import reads is named malformed and passed over', async () => {
    const odd = write(join(fresh('dir'), 'notes.json'), 'hello\n')
    const ran = await json(['--to', fresh('copy'), odd])
    expect(ran).toMatchObject({
      code: 0,
      imported: 0,
      malformed: 1,
      passedOver: 0,
      problems: [{ file: odd, message: 'skipped: not a format import reads: it starts "hello\\n"' }]
    })
  })

  it('a file name with a terminal escape is shown escaped', async () => {
    const odd = write(join(fresh('dir'), 'evil\u001b[2J.txt'), 'hello\n')
    const ran = await importing(['--to', fresh('copy'), odd])
    expect(ran.stdout).toContain('evil\\u001b[2J.txt: text, not records')
    expect(ran.stdout).not.toContain('\u001b')
  })
})

describe('entries that hold no records', () => {
  it("DataCite's data file with its README and monthly reports: they are passed over, said once, and the coverage is set", async () => {
    const parts = [
      [dataciteRecord('10.5281/zenodo.1'), dataciteRecord('10.5281/zenodo.2')],
      [dataciteRecord('10.6084/m9.1', { updated: '2025-02-03T00:00:00Z' })]
    ]
    const tar = await dataciteTar(fresh('datacite.tar'), parts, undefined, true)
    const to = fresh('copy')
    const ran = await importing(['--to', to, '--strict', tar])
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain('imported 3 · unchanged 0 · filtered 0 · malformed 0\n')
    expect(ran.stdout).toContain(
      [
        'passed over 3 entries that hold no records:',
        `  ${tar} › README.txt: text, not records (it starts ${JSON.stringify(DATACITE_README.slice(0, 40))})`,
        `  ${tar} › dois/updated_2025-01/2025-01.csv.gz: a CSV, not a DOI state list (its header: "doi,client_id,resource_type_general,updated")`,
        `  ${tar} › dois/updated_2025-02/2025-02.csv.gz: a CSV, not a DOI state list (its header: "doi,client_id,resource_type_general,updated")`
      ].join('\n')
    )
    expect(ran.stdout).toContain('the copy holds every DataCite DOI of its 2 prefixes as of 2025-02-03')
    await withCopy(to, (copy) => {
      expect(copy.coverage()).toEqual({ datacite: { base: Date.UTC(2025, 1, 3) / 1000, through: Date.UTC(2025, 1, 3) / 1000 } })
      expect(copy.prefix('10.5281')).toMatchObject({ whole: true })
    })
  })

  it('a Crossref directory with a README and a checksum list beside its .json.gz still moves the coverage', async () => {
    const dir = fresh('crossref-dir')
    write(join(dir, '0.json.gz'), gz(crossrefInner(crossrefWorks('10.5555', 0, 2))))
    write(join(dir, 'README.md'), '# Crossref public data file 2025\n')
    write(join(dir, 'md5sums.txt'), 'd41d8cd98f00b204e9800998ecf8427e  0.json.gz\n')
    const ran = await json(['--to', fresh('copy'), dir])
    expect(ran).toMatchObject({ code: 0, imported: 2, malformed: 0, passedOver: 2, covered: [{ agency: 'crossref', prefixes: 1 }] })
  })

  it('an entry named as data that cannot be read is malformed, and the file is not counted whole', async () => {
    const tar = await tarOf(fresh('datacite.tar'), [
      ['README.txt', DATACITE_README],
      ['dois/updated_2025-01/part_0000.jsonl.gz', gz(lines([dataciteRecord('10.5281/zenodo.1')]))],
      // A download that saved an error page under the part's name.
      ['dois/updated_2025-01/part_0001.jsonl.gz', '<html><body>502 Bad Gateway</body></html>\n']
    ])
    const ran = await json(['--to', fresh('copy'), tar])
    expect(ran).toMatchObject({ code: 0, imported: 1, malformed: 1, passedOver: 1, covered: [] })
    expect(ran.problems).toEqual([
      expect.objectContaining({
        entry: 'dois/updated_2025-01/part_0001.jsonl.gz',
        message: expect.stringMatching(/^skipped: not a format/)
      })
    ])
  })

  it('a text file given on its own is passed over, not malformed', async () => {
    const odd = write(join(fresh('dir'), 'notes.txt'), 'hello\n')
    expect(await json(['--to', fresh('copy'), '--strict', odd])).toMatchObject({
      code: 0,
      malformed: 0,
      passedOver: 1,
      passedOverNamed: [{ file: odd, message: 'text, not records (it starts "hello\\n")' }]
    })
  })
})

describe('filters, and the same file run again', () => {
  const twoPrefixes = async (): Promise<string> =>
    await crossrefAnnualTar(fresh('crossref.tar'), [crossrefWorks('10.5555', 0, 3), crossrefWorks('10.6666', 0, 2)])

  it('a file imported for one --prefix is read again for another; for the same one, or after a run without --prefix, it is passed over', async () => {
    const tar = await twoPrefixes()
    const to = fresh('copy')
    expect(await json(['--to', to, '--prefix', '10.5555', tar])).toMatchObject({ imported: 3, filtered: 2, alreadyImported: 0 })
    expect(await json(['--to', to, '--prefix', '10.6666', tar])).toMatchObject({ imported: 2, filtered: 3, alreadyImported: 0 })
    expect(await json(['--to', to, '--prefix', '10.6666', tar])).toMatchObject({ imported: 0, alreadyImported: 1 })
    expect(await json(['--to', to, tar])).toMatchObject({ imported: 0, unchanged: 5, alreadyImported: 0 })
    expect(await json(['--to', to, '--prefix', '10.5555', tar])).toMatchObject({ imported: 0, alreadyImported: 1 })
  })

  it('a file imported with --since, then without: the older records are read, and only then is the agency covered', async () => {
    const tar = await crossrefAnnualTar(fresh('crossref.tar'), [
      crossrefWorks('10.5555', 0, 2, Date.UTC(2024, 5, 1)),
      crossrefWorks('10.5555', 2, 2, Date.UTC(2025, 5, 1))
    ])
    const to = fresh('copy')
    expect(await json(['--to', to, '--since', '2025-01-01', tar])).toMatchObject({ imported: 2, filtered: 2, covered: [] })
    expect(await json(['--to', to, tar])).toMatchObject({ imported: 2, alreadyImported: 0, covered: [{ agency: 'crossref' }] })
    await withCopy(to, (copy) => expect(copy.head(copyKeyOf('10.5555/w0'))).toMatchObject({ kind: 'work' }))
  })

  it('a file imported with --no-abstracts, then without: the abstracts are read in', async () => {
    const work = { ...crossrefWork('10.5555/abs'), abstract: '<jats:p>We show things.</jats:p>' }
    const tar = await crossrefAnnualTar(fresh('crossref.tar'), [[work]])
    const to = fresh('copy')
    expect(await json(['--to', to, '--no-abstracts', tar])).toMatchObject({ imported: 1 })
    expect(await json(['--to', to, '--no-abstracts', tar])).toMatchObject({ alreadyImported: 1 })
    expect(await json(['--to', to, tar])).toMatchObject({ imported: 1, alreadyImported: 0 })
    await withCopy(to, (copy) => {
      expect(copy.head(copyKeyOf('10.5555/abs'))).toMatchObject({ abstractDropped: false })
      expect(decodeCsl(copy.get(copyKeyOf('10.5555/abs'))!)).toMatchObject({ abstract: 'We show things.' })
    })
    // A file read with its abstracts covers a later --no-abstracts run.
    expect(await json(['--to', to, '--no-abstracts', tar])).toMatchObject({ alreadyImported: 1 })
  })

  it('stopped during a --prefix run, the same file run without --prefix reads what the filter left out', async () => {
    const tar = await crossrefAnnualTar(fresh('crossref.tar'), [crossrefWorks('10.6666', 0, 3), crossrefWorks('10.5555', 0, 3)])
    const to = fresh('copy')
    // Stopped (as by Ctrl-C) once the first batch is committed: the checkpoint is past the first entry, all of it filtered out.
    const stopped = await importing(['--to', to, '--jobs', '1', '--prefix', '10.5555', tar], {}, AbortSignal.abort())
    expect(stopped.code).toBe(130)
    expect(await json(['--to', to, tar])).toMatchObject({ code: 0, covered: [{ agency: 'crossref', prefixes: 2 }] })
    await withCopy(to, (copy) => {
      expect(copy.stats().records).toBe(6)
      expect(copy.prefix('10.6666')).toMatchObject({ records: 3, whole: true })
    })
  })
})

describe('the URL rules of records (ALLOWED_SCHEMES)', () => {
  const gopher = (doi: string): string => `gopher://gopher.example/1/${doi}`
  const inputs = (): string[] => [
    write(fresh('p.json'), crossrefPage([crossrefWork('10.5555/g', { url: gopher('10.5555/g') })])),
    write(fresh('d.jsonl'), lines([dataciteRecord('10.5281/g', { url: gopher('10.5281/g') })])),
    write(fresh('m.ndjson'), lines([mirrorRecord('10.1000/g', gopher('10.1000/g'))]))
  ]

  it('a URL of a scheme ALLOWED_SCHEMES adds is imported, from every format', async () => {
    const to = fresh('copy')
    expect(await json(['--to', to, ...inputs()], { ALLOWED_SCHEMES: 'http,https,ftp,gopher' })).toMatchObject({
      imported: 3,
      malformed: 0
    })
    await withCopy(to, (copy) => expect(copy.head(copyKeyOf('10.5281/g'))).toMatchObject({ target: gopher('10.5281/g') }))
  })

  it('without it, each is skipped and named, saying the schemes allowed', async () => {
    const ran = await json(['--to', fresh('copy'), ...inputs()])
    expect(ran).toMatchObject({ imported: 0, malformed: 3 })
    for (const p of ran.problems as Array<{ message: string }>) expect(p.message).toContain('(scheme not in http, https, ftp,')
  })

  it('a javascript: URL is refused even when ALLOWED_SCHEMES names javascript', async () => {
    const page = write(fresh('p.json'), crossrefPage([crossrefWork('10.5555/js', { url: 'javascript:alert(1)' })]))
    const ran = await json(['--to', fresh('copy'), page], { ALLOWED_SCHEMES: 'https,javascript' })
    expect(ran).toMatchObject({ imported: 0, malformed: 1 })
    expect((ran.problems as Array<{ message: string }>)[0]?.message).toContain('javascript')
  })
})

describe('usage', () => {
  it.each([
    [['--to', 'x'], 'no PATH given: name the files or directories to import'],
    [['nothing-here.json'], 'no copy to write: give --to DIR, or set REGISTRY_COPY'],
    [['--to', 'x', 'nothing-here.json'], 'cannot read "nothing-here.json": no such file or directory'],
    [['--to', 'x', '--prefix', '10.1/x', 'a'], '--prefix takes DOI prefixes such as 10.1234, comma-separated; "10.1/x" is not one'],
    [['--to', 'x', '--since', 'yesterday', 'a'], '--since takes a date such as 2025-01-31 (or 2025-01-31T12:00:00Z), got "yesterday"'],
    [['--to', 'x', '--jobs', '0', 'a'], '--jobs must be a whole number from 1 to 64, got "0"'],
    [['--update', 'zenodo'], '--update must be one of crossref, datacite, got "zenodo"']
  ])('%j: %s', async (args, message) => {
    const ran = await importing(args)
    expect(ran).toMatchObject({ code: 2, stdout: '' })
    expect(ran.stderr).toBe(`doi-proxy import: ${message}\nRun "doi-proxy import --help" for the options.\n`)
  })

  it('a copy that cannot be written exits 73, naming it', async () => {
    const file = write(fresh('a-file'), 'x')
    const ran = await importing(['--to', join(file, 'copy'), write(fresh('p.json'), crossrefPage([]))])
    expect(ran.code).toBe(73)
    expect(ran.stderr).toContain(`doi-proxy import: cannot write the copy in ${join(file, 'copy')}`)
  })

  it('REGISTRY_COPY is the default of --to', async () => {
    const to = fresh('copy')
    expect(await json([write(fresh('p.json'), crossrefPage(crossrefWorks('10.5555', 0, 1)))], { REGISTRY_COPY: to })).toMatchObject({
      imported: 1
    })
    await withCopy(to, (copy) => expect(copy.stats().records).toBe(1))
  })
})

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

// ---- the real command, as a child -------------------------------------------------------------

function child(
  args: string[],
  env: Record<string, string> = {}
): { done: Promise<Ran & { signal: string | null }>; pid: number; kill: () => void } {
  const p = spawn(process.execPath, ['--import', 'tsx', 'src/command/cli.ts', 'import', ...args], {
    cwd: REPO,
    env: { ...process.env, ...ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const done = new Promise<Ran & { signal: string | null }>((resolve) =>
    p.on('close', (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr }))
  )
  return { done, pid: p.pid!, kill: () => p.kill('SIGKILL') }
}

/** Every record of a copy, as key → what it says (without when it was written). */
async function contents(dir: string): Promise<Map<string, unknown>> {
  return await withCopy(dir, (copy) => {
    const out = new Map<string, unknown>()
    for (const { key, value } of copy.databases.records.getRange()) {
      const head = copy.head(key as Buffer)
      out.set(Buffer.from(key as Buffer).toString('utf8'), { ...(head as object), importedAt: 0, csl: decodeCsl(value) })
    }
    return out
  })
}

/** The copy's prefix marks and coverage, beside its records. */
async function marks(dir: string): Promise<unknown> {
  return await withCopy(dir, (copy) => ({
    prefixes: [...copy.databases.prefixes.getRange()].map(({ key, value }) => [Buffer.from(key as Buffer).toString('utf8'), value]),
    coverage: copy.coverage()
  }))
}

function sortedProblems(ran: Record<string, unknown>): unknown[] {
  return (ran.problems as Array<Record<string, unknown>>).map((p) => JSON.stringify(p)).sort()
}

describe('reading threads (--jobs)', () => {
  it('--jobs 2 makes the same copy as --jobs 1: a tar of many entries and a directory of many files, damage included', async () => {
    const bad = crossrefInner([...crossrefWorks('10.7001', 0, 40), crossrefWork('10.7001/bell\u0007')]).replace(
      '"DOI":"10.7001/w7"',
      '"DOI":"10.7001/w7",,'
    )
    const tar = await tarOf(fresh('many.tar'), [
      ...Array.from({ length: 9 }, (_, p): [string, Buffer] => [
        `${p}.json.gz`,
        gz(crossrefInner(crossrefWorks(`10.${6000 + p}`, 0, 120)))
      ]),
      ['bad.json.gz', gz(bad)]
    ])
    const dir = fresh('many-files')
    for (let p = 0; p < 6; p++) write(join(dir, `${p}.json.gz`), gz(crossrefInner(crossrefWorks(`10.${6100 + p}`, 0, 80))))
    const one = fresh('one')
    const two = fresh('two')
    const args = (to: string, jobs: string) => ['--to', to, '--jobs', jobs, '--batch', '25', tar, dir]
    const [ranOne, ranTwo] = [await json(args(one, '1')), await json(args(two, '2'))]
    expect(ranOne).toMatchObject({ code: 0, imported: 9 * 120 + 40 - 1 + 6 * 80, malformed: 2 })
    expect({ ...ranTwo, problems: sortedProblems(ranTwo), problemsFile: '' }).toEqual({
      ...ranOne,
      problems: sortedProblems(ranOne),
      problemsFile: ''
    })
    expect(await contents(two)).toEqual(await contents(one))
    expect(await marks(two)).toEqual(await marks(one))
  }, 60_000)

  it('with threads, a malformed item is still named by its file, entry, item number and byte', async () => {
    const items = [...crossrefWorks('10.7100', 0, 6), crossrefWork('10.7100/bell\u0007'), ...crossrefWorks('10.7100', 6, 3)]
    const broken = crossrefInner(items).replace('"DOI":"10.7100/w8"', '"DOI":"10.7100/w8",,')
    const tar = await tarOf(fresh('named.tar'), [
      ['a.json.gz', gz(crossrefInner(crossrefWorks('10.7101', 0, 50)))],
      ['b.json.gz', gz(broken)],
      ['c.json.gz', gz(crossrefInner(crossrefWorks('10.7102', 0, 50)))]
    ])
    const to = fresh('copy')
    const ran = await json(['--to', to, '--jobs', '3', tar])
    expect(ran).toMatchObject({ code: 0, imported: 50 + 8 + 50, malformed: 2 })
    // The byte where an item starts in the entry's JSON: the `{` before its DOI.
    const offsetOf = (doi: string): number => Buffer.from(broken).lastIndexOf('{"indexed"', Buffer.from(broken).indexOf(doi))
    const problems = (ran.problems as Array<{ item: number }>).slice().sort((a, b) => a.item - b.item)
    expect(problems).toEqual([
      { file: tar, entry: 'b.json.gz', item: 7, offset: offsetOf('10.7100/bell'), message: 'the DOI has a control character (U+0007)' },
      { file: tar, entry: 'b.json.gz', item: 10, offset: offsetOf('10.7100/w8'), message: expect.stringMatching(/^not JSON \(/) }
    ])
  })
})

describe('stopped and run again', () => {
  it.each([['1'], ['3']])(
    'killed with SIGKILL mid-import (--jobs %s), the same command ends with the same copy as one run',
    async (jobs) => {
      // Long and short entries: with threads, short ones end while a long one before them is still being read.
      const sizes = [1500, 50, 1500, 50, 1500, 50, 1500, 50]
      const total = sizes.reduce((a, b) => a + b, 0)
      const parts = sizes.map((n, p) => crossrefWorks(`10.${5000 + p}`, 0, n))
      const tar = await crossrefAnnualTar(fresh('big.tar'), parts)
      const once = fresh('once')
      const killed = fresh('killed')
      const args = (to: string) => ['--to', to, '--jobs', jobs, '--batch', '50', tar]
      expect((await child(args(once)).done).code).toBe(0)

      const run = child(args(killed))
      // Killed once the copy holds some batches but not all; with threads, once a short entry is read whole while
      // the long one before it is still being read (what the checkpoint must get right).
      let ready = false
      for (let i = 0; i < 1000 && !ready; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        try {
          ready = await withCopy(killed, (copy) => {
            const first = copy.prefix('10.5000')?.records ?? 0
            if (jobs === '1') return copy.stats().records >= 500
            return copy.prefix('10.5001')?.records === sizes[1] && first > 0 && first < sizes[0]!
          })
        } catch {
          ready = false
        }
      }
      run.kill()
      const stopped = await run.done
      expect(stopped.signal).toBe('SIGKILL')
      expect(ready).toBe(true)
      const partial = await withCopy(killed, (copy) => copy.stats().records)
      expect(partial).toBeGreaterThan(0)
      expect(partial).toBeLessThan(total)

      const again = await child(['--json', ...args(killed)]).done
      expect(again.code).toBe(0)
      const summary = JSON.parse(again.stdout) as { imported: number; unchanged: number }
      // Resumed: what was committed is not read again (at most the batch being written when killed).
      expect(summary.imported + summary.unchanged).toBeLessThanOrEqual(total - partial + 50)
      expect(await contents(killed)).toEqual(await contents(once))
      await withCopy(killed, (copy) => expect(copy.coverage()).toEqual(expect.objectContaining({ crossref: expect.anything() })))
    },
    120_000
  )

  it('exit codes of the real command: 0 done, 1 --strict with a problem, 2 usage', async () => {
    const good = write(fresh('good.json'), crossrefPage(crossrefWorks('10.5555', 0, 1)))
    const bad = write(fresh('bad.json'), crossrefPage([crossrefWork('10.5555/none', { url: null })]))
    const to = fresh('copy')
    const [ok, strict, usage] = await Promise.all([
      child(['--to', to, good]).done,
      child(['--to', fresh('copy'), '--strict', bad]).done,
      child(['--to', to, '--bogus']).done
    ])
    expect(ok.code).toBe(0)
    expect(ok.stdout).toContain('imported 1 ·')
    expect(strict.code).toBe(1)
    expect(usage.code).toBe(2)
  }, 60_000)
})
