import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { create as createTar } from 'tar'

/**
 * The inputs of `doi-proxy import`, built at test time in the agencies' shapes (plan-43 §5): Crossref's
 * annual file (a tar of *.json.gz, each {"items":[work…]}) and REST pages, DataCite's data file
 * (dois/updated_YYYY-MM/part_NNNN.jsonl.gz in a tar, and the DOI/state CSV), our own NDJSON; and the
 * damage a download or a hostile file brings (a gzip cut off, JSON broken mid-item and mid-structure, a
 * 10 MB item, a DOI with U+0007, a javascript: URL, no URL).
 */

const BASE_MS = Date.UTC(2025, 0, 1)

/** A Crossref work as its files and API give it: `indexed` is the stamp (plan-43 §9.6). */
export function crossrefWork(doi: string, opts: { url?: string | null; indexedMs?: number; title?: string } = {}): Record<string, unknown> {
  const indexedMs = opts.indexedMs ?? BASE_MS
  return {
    indexed: { 'date-parts': [[2025, 1, 1]], 'date-time': new Date(indexedMs).toISOString(), timestamp: indexedMs },
    DOI: doi,
    type: 'journal-article',
    title: [opts.title ?? `The work ${doi}`],
    author: [{ given: 'Ada', family: 'Lovelace', sequence: 'first', affiliation: [] }],
    'container-title': ['Journal of Tests'],
    'published-print': { 'date-parts': [[2024, 5, 1]] },
    ...(opts.url === null ? {} : { resource: { primary: { URL: opts.url ?? `https://publisher.example/${doi}` } } }),
    prefix: doi.split('/')[0]
  }
}

export function crossrefWorks(prefix: string, from: number, count: number, indexedMs?: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => crossrefWork(`${prefix}/w${from + i}`, indexedMs === undefined ? {} : { indexedMs }))
}

/** One inner file of Crossref's annual file. */
export function crossrefInner(items: readonly unknown[]): string {
  return JSON.stringify({ items })
}

/** A page of Crossref's REST API /works. */
export function crossrefPage(items: readonly unknown[], nextCursor = 'AoJ'): string {
  return JSON.stringify({
    status: 'ok',
    'message-type': 'work-list',
    'message-version': '1.0.0',
    message: { facets: {}, 'total-results': items.length, items, 'items-per-page': items.length, 'next-cursor': nextCursor }
  })
}

/** A DataCite record as a line of its data file. */
export function dataciteRecord(doi: string, opts: { url?: string; updated?: string } = {}): Record<string, unknown> {
  return {
    id: doi,
    type: 'dois',
    attributes: {
      doi,
      url: opts.url ?? `https://repository.example/${doi}`,
      titles: [{ title: `Dataset ${doi}` }],
      creators: [{ name: 'Hopper, Grace', nameType: 'Personal', givenName: 'Grace', familyName: 'Hopper' }],
      publisher: 'Repository',
      publicationYear: 2024,
      types: { resourceTypeGeneral: 'Dataset' },
      state: 'findable',
      updated: opts.updated ?? '2025-01-02T00:00:00Z'
    }
  }
}

export function lines(items: readonly unknown[]): string {
  return items.map((i) => JSON.stringify(i)).join('\n') + '\n'
}

/** Our own format: {handle, values} a line. */
export function mirrorRecord(doi: string, url: string, timestamp = '2024-05-08T10:11:12Z'): Record<string, unknown> {
  return { handle: doi, values: [{ index: 1, type: 'URL', data: { format: 'string', value: url }, ttl: 86400, timestamp }] }
}

export function gz(text: string | Buffer): Buffer {
  return gzipSync(typeof text === 'string' ? Buffer.from(text) : text)
}

/** A file cut after `keep` bytes, as a download that did not finish. */
export function cutOff(bytes: Buffer, keep: number): Buffer {
  return bytes.subarray(0, keep)
}

export function write(path: string, content: string | Buffer): string {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, content)
  return path
}

/** A tar of `entries` (name → bytes), as the agencies pack their files, at `path`. */
export async function tarOf(path: string, entries: ReadonlyArray<[string, string | Buffer]>, gzip = false): Promise<string> {
  const staging = `${path}.staging`
  for (const [name, content] of entries) write(join(staging, name), content)
  mkdirSync(dirname(path), { recursive: true })
  await createTar(
    { file: path, cwd: staging, gzip, portable: true },
    entries.map(([name]) => name)
  )
  return path
}

/** Crossref's annual file: a tar of numbered .json.gz, each holding one part's works. */
export async function crossrefAnnualTar(path: string, parts: ReadonlyArray<readonly unknown[]>): Promise<string> {
  return await tarOf(
    path,
    parts.map((items, i) => [`${String(i).padStart(4, '0')}.json.gz`, gz(crossrefInner(items))])
  )
}

/** DataCite's README at the top of its data file: text, no records. */
export const DATACITE_README = 'DataCite Public Data File 2024\n\nThis file contains metadata for all DataCite DOIs in Findable state.\n'

/** A month's tabular report (dois/updated_YYYY-MM/YYYY-MM.csv.gz): a CSV of that month's DOIs, not their states. */
export function dataciteReport(items: readonly unknown[]): string {
  const rows = items.map((i) => `${(i as { id: string }).id},demo.client,Dataset,2025-01-02T00:00:00Z`)
  return ['doi,client_id,resource_type_general,updated', ...rows].join('\n') + '\n'
}

/**
 * DataCite's data file: monthly folders of gzipped JSON lines, and its DOI/state CSV beside them; `extras`: its
 * README and each month's report, as the real file has them (support.datacite.org, "DataCite Public Data File").
 */
export async function dataciteTar(
  path: string,
  parts: ReadonlyArray<readonly unknown[]>,
  states?: string,
  extras = false
): Promise<string> {
  const entries: Array<[string, string | Buffer]> = []
  if (extras) entries.push(['README.txt', DATACITE_README])
  for (const [i, items] of parts.entries()) {
    const month = `2025-${String(i + 1).padStart(2, '0')}`
    if (extras) entries.push([`dois/updated_${month}/${month}.csv.gz`, gz(dataciteReport(items))])
    entries.push([`dois/updated_${month}/part_0000.jsonl.gz`, gz(lines(items))])
  }
  if (states !== undefined) entries.push(['dois/states.csv', states])
  return await tarOf(path, entries)
}

// ---- other processes writing a copy -------------------------------------------------------------

const SRC = new URL('../../src/', import.meta.url).pathname

/** A child writing batches of 200 records, each with its checkpoint `run` = the batch's number, saying so after each commit. */
export function writerChild(dir: string, pauseMs = 0): ChildProcess {
  const program = `
    import { openCopy } from '${SRC}resolve/copy/store.ts'
    import { createCopyWriter } from '${SRC}resolve/copy/writer.ts'
    import { encodeEntry } from '${SRC}handle/copy/record-codec.ts'
    const writer = createCopyWriter(openCopy({ dir: ${JSON.stringify(dir)}, writable: true }), { maxBytes: 0, minFreeBytes: 0, nowS: () => 1 })
    for (let b = 0; ; b++) {
      const batch = Array.from({ length: 200 }, (_, i) => encodeEntry(
        { doi: '10.1/b' + b + '-' + i, kind: 'work', agency: 'crossref', url: 'https://example.org/' + 'x'.repeat(500), stamp: 5 },
        { importedAt: 1, covered: false }))
      writer.putBatch(batch, { name: 'run', value: b })
      process.stdout.write('batch ' + b + '\\n')
      if (${pauseMs} > 0) await new Promise((resolve) => setTimeout(resolve, ${pauseMs}))
    }`
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] })
}

export async function untilSays(child: ChildProcess, pattern: RegExp): Promise<void> {
  let seen = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      seen += c.toString()
      if (pattern.test(seen)) resolve()
    })
    child.on('exit', () => reject(new Error(`the child ended first: ${seen}`)))
  })
}
