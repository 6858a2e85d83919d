import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { LRUCache } from 'lru-cache'
import type { Csl } from '../../handle/copy/types.js'
import type { BibliographyJob, BibliographyReply } from './citations-worker.js'
import type { CopyLog } from './store.js'

/**
 * Citations formatted from the registry copy's CSL-JSON (plan-43 §1.10), with citation-js 0.7 (the line
 * that runs on Node 20): BibTeX and RIS in this thread (under a millisecond an entry), bibliographies
 * (APA, Vancouver, Harvard; en-US) in one worker thread, because citeproc takes 5–35 ms an entry and half
 * a second for its first. citation-js is loaded on first use, never at start. Waiting bibliographies are
 * bounded (`queueMax`: beyond it CitationBusy, which the HTTP layer answers 503 + Retry-After), every wait
 * is bounded (`timeoutMs`), and formatted bodies are kept in an LRU by DOI, type, style and locale.
 */

export const BIBTEX = 'application/x-bibtex'
export const RIS = 'application/x-research-info-systems'
export const BIBLIOGRAPHY = 'text/x-bibliography'

/** The styles and locale citation-js 0.7's plugin-csl ships: the ones we hold (plan-43 §1.10, §9.9). */
export const CITATION_STYLES = ['apa', 'vancouver', 'harvard1'] as const
export const CITATION_LOCALES = ['en-US'] as const
/** doi.org's agencies format `text/x-bibliography` without a style as APA, in en-US. */
const DEFAULT_STYLE = 'apa'
const DEFAULT_LOCALE = 'en-US'

/** The Content-Types the agencies' content negotiation answers with (data.crossref.org, data.crosscite.org). */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  [BIBTEX]: 'application/x-bibtex; charset=utf-8',
  [RIS]: 'application/x-research-info-systems; charset=utf-8',
  [BIBLIOGRAPHY]: 'text/x-bibliography; charset=utf-8'
}

type FormatName = 'bibtex' | 'ris' | 'bibliography'
const FORMAT_NAMES: Readonly<Record<string, FormatName>> = { [BIBTEX]: 'bibtex', [RIS]: 'ris', [BIBLIOGRAPHY]: 'bibliography' }

export interface CitationFormats {
  /** The media types formatted, without parameters. */
  types: readonly string[]
  styles: readonly string[]
  locales: readonly string[]
  /** Every media type with the parameters it can be asked with, as `chooseStoredType` takes them (the default first). */
  keys: readonly string[]
}

export interface Citation {
  contentType: string
  body: string
}

export interface CitationOptions {
  /** Bibliographies waiting for the formatter thread (REGISTRY_COPY_CITATION_QUEUE); one more may be in it. */
  queueMax: number
  /** Formatted bodies kept. */
  cacheMax: number
  log: CopyLog
  /** The longest a render may take, waiting included; a formatter thread past it is restarted. Default 10 s. */
  timeoutMs?: number
  /** The bytes the kept bodies may take. Default 16 MiB. */
  cacheMaxBytes?: number
  /** The formatter thread's heap cap: a record that would take more fails alone. Default 256 MB. */
  workerHeapMb?: number
  /** Each render counted (doi_proxy_copy_citations_total): done (formatted or kept), queue_full, failed. */
  count?: (format: FormatName, outcome: 'done' | 'queue_full' | 'failed') => void
}

export interface Citations {
  readonly formats: CitationFormats
  /** The CSL-JSON formatted as `type` (`application/x-bibtex`…) with its parameters (`style`, `locale`). */
  render(csl: Csl, type: string, params?: Readonly<Record<string, string | undefined>>): Promise<Citation>
  /** Ends the formatter thread; renders waiting or asked after it fail with CitationClosed. */
  close(): Promise<void>
}

/** What the HTTP layer turns each failure into: `busy` 503 + Retry-After, `unknown` 406, the rest 503/500. */
export class CitationError extends Error {
  constructor(
    message: string,
    readonly kind: 'busy' | 'unknown' | 'timeout' | 'closed' | 'failed'
  ) {
    super(message)
    this.name = 'CitationError'
  }
}

/** The formatter's queue is full: ask again after `retryAfterSeconds`. */
export class CitationBusy extends CitationError {
  constructor(readonly retryAfterSeconds: number) {
    super(`the citation formatter is busy: ask again in ${retryAfterSeconds} s`, 'busy')
  }
}

/** A type, style or locale not held: the message names those that are (`held`). */
export class CitationUnknownFormat extends CitationError {
  constructor(
    message: string,
    readonly held: readonly string[]
  ) {
    super(message, 'unknown')
  }
}

// ---- the CSL cleaned before it reaches citation-js (a record may be hostile) ----

const MAX_STRING = 20_000
const MAX_NAME_PART = 1_000
const MAX_KEYS = 200
/** Names kept for BibTeX and RIS (the mappers' own cap). */
const MAX_NAMES = 5_000
/** For a bibliography: the first 50 and the last. No style held shows more (APA 7: 19, an ellipsis, the last). */
const BIBLIOGRAPHY_NAMES = 50

const NAME_VARIABLES = new Set([
  'author', 'chair', 'collection-editor', 'compiler', 'composer', 'container-author', 'contributor', 'curator',
  'director', 'editor', 'editorial-director', 'executive-producer', 'guest', 'host', 'illustrator', 'interviewer',
  'narrator', 'organizer', 'original-author', 'performer', 'producer', 'recipient', 'reviewed-author',
  'script-writer', 'series-creator', 'translator'
]) // prettier-ignore
const DATE_VARIABLES = new Set(['issued', 'accessed', 'available-date', 'event-date', 'original-date', 'submitted'])
const NAME_PARTS = ['family', 'given', 'literal', 'suffix', 'non-dropping-particle', 'dropping-particle'] as const
/** CSL 1.0.2's item types; another becomes `document`, which every style knows. */
const CSL_TYPES = new Set([
  'article', 'article-journal', 'article-magazine', 'article-newspaper', 'bill', 'book', 'broadcast', 'chapter',
  'classic', 'collection', 'dataset', 'document', 'entry', 'entry-dictionary', 'entry-encyclopedia', 'event',
  'figure', 'graphic', 'hearing', 'interview', 'legal_case', 'legislation', 'manuscript', 'map', 'motion_picture',
  'musical_score', 'pamphlet', 'paper-conference', 'patent', 'performance', 'periodical', 'personal_communication',
  'post', 'post-weblog', 'regulation', 'report', 'review', 'review-book', 'software', 'song', 'speech', 'standard',
  'thesis', 'treaty', 'webpage'
]) // prettier-ignore

/** Controls dropped (an ESC or a NUL has no place in a citation); line breaks and tabs become spaces (RIS is line-based). */
function clean(raw: string, max: number): string {
  return (
    (raw.length > max ? raw.slice(0, max) : raw)
      .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
      .replace(/[\t\n\r\u2028\u2029]+/g, ' ')
      // eslint-disable-next-line no-control-regex -- dropping them is the point
      .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
      .trim()
  )
}

function cleanName(raw: unknown): Record<string, string> | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined
  const out: Record<string, string> = {}
  for (const part of NAME_PARTS) {
    const v = (raw as Record<string, unknown>)[part]
    if (typeof v === 'string') {
      const c = clean(v, MAX_NAME_PART)
      if (c !== '') out[part] = c
    }
  }
  return out.family !== undefined || out.literal !== undefined ? out : undefined
}

function cleanDate(raw: unknown): Record<string, unknown> | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined
  const d = raw as Record<string, unknown>
  if (Array.isArray(d['date-parts'])) {
    const parts = d['date-parts']
      .slice(0, 2)
      .filter(Array.isArray)
      .map((p: unknown[]) => p.slice(0, 3).map(Number))
      .filter((p) => p.length > 0 && p.every((n) => Number.isInteger(n) && Math.abs(n) < 100_000))
    if (parts.length > 0) return { 'date-parts': parts }
  }
  if (typeof d.literal === 'string' && clean(d.literal, 200) !== '') return { literal: clean(d.literal, 200) }
  return undefined
}

/**
 * The CSL an item formats from: known shapes only (strings, names, dates), each string without controls and
 * cut at 20,000 characters, names capped, `id` the DOI. Anything else in the record is left out.
 */
export function cleanCsl(csl: Csl, forBibliography: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  let keys = 0
  for (const [name, value] of Object.entries(csl)) {
    if (keys++ >= MAX_KEYS) break
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,40}$/.test(name) || name === 'citation-key' || name === 'id') continue
    if (forBibliography && name === 'abstract') continue
    if (NAME_VARIABLES.has(name)) {
      if (!Array.isArray(value)) continue
      let names = value.slice(0, MAX_NAMES).map(cleanName)
      if (forBibliography && value.length > BIBLIOGRAPHY_NAMES + 1) {
        names = [...value.slice(0, BIBLIOGRAPHY_NAMES), value[value.length - 1]].map(cleanName)
      }
      const kept = names.filter((n) => n !== undefined)
      if (kept.length > 0) out[name] = kept
    } else if (DATE_VARIABLES.has(name)) {
      const d = cleanDate(value)
      if (d !== undefined) out[name] = d
    } else if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
      const c = clean(String(value), MAX_STRING)
      if (c !== '') out[name] = c
    }
  }
  out.type = typeof out.type === 'string' && CSL_TYPES.has(out.type) ? out.type : 'document'
  const doi = typeof out.DOI === 'string' ? out.DOI : undefined
  out.id = doi ?? 'item'
  const key = citationKey(out)
  if (key !== undefined) out['citation-key'] = key
  return out
}

/**
 * The BibTeX key as the agencies make it (`@article{Gillespie_1970, …}`, docs/metadata.md): the first
 * author's family name in ASCII letters and digits, `_`, the year; else one made of the DOI.
 */
function citationKey(csl: Record<string, unknown>): string | undefined {
  const first = (csl.author as Record<string, string>[] | undefined)?.[0]
  const name = ascii(first?.family ?? first?.literal ?? '').slice(0, 60)
  const year = (csl.issued as { 'date-parts'?: number[][] } | undefined)?.['date-parts']?.[0]?.[0]
  if (name !== '') return year === undefined ? name : `${name}_${year}`
  const doi = typeof csl.DOI === 'string' ? ascii(csl.DOI.replace(/[^A-Za-z0-9]+/g, '_')).slice(0, 80) : ''
  return doi === '' ? undefined : doi
}

function ascii(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_]/g, '')
    .replace(/^_+|_+$/g, '')
}

// ---- BibTeX and RIS, in this thread ----

interface Cite {
  format(name: 'bibtex', options: { format: 'text' }): string
  format(name: 'ris', options: { format: 'object' }): Record<string, unknown>[]
}
type CiteClass = new (data: unknown, options: { forceType: string }) => Cite
let CiteInThread: CiteClass | undefined

/** citation-js as the check command loads it (command/check/entries.ts): CommonJS, on first use, the type forced. */
function citeOf(csl: Record<string, unknown>): Cite {
  if (CiteInThread === undefined) {
    const require = createRequire(import.meta.url)
    const core = require('@citation-js/core') as {
      Cite: CiteClass
      plugins: { config: { get(name: string): { format: { asciiOnly: boolean } } } }
    }
    require('@citation-js/plugin-bibtex')
    require('@citation-js/plugin-ris')
    // As the agencies write BibTeX: UTF-8. ASCII-only turns a title in Japanese into `title = {}`.
    core.plugins.config.get('@bibtex').format.asciiOnly = false
    CiteInThread = core.Cite
  }
  return new CiteInThread(csl, { forceType: '@csl/object' })
}

/** TeX's special characters as TeX text: what citation-js escapes only when it also drops every non-Latin letter. */
const TEX_SPECIALS: Readonly<Record<string, string>> = {
  '\\': '\\textbackslash{}',
  '{': '\\{',
  '}': '\\}',
  '%': '\\%',
  '&': '\\&',
  $: '\\$',
  '#': '\\#',
  _: '\\_',
  '^': '\\textasciicircum{}',
  '~': '\\textasciitilde{}'
}
const tex = (s: string): string => s.replace(/[\\{}%&$#_^~]/g, (c) => TEX_SPECIALS[c] ?? '')
/** citation-js writes `doi` and `url` verbatim: a brace or backslash in them is percent-encoded, as in a URL. */
const verbatim = (s: string): string => s.replace(/[{}\\]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/** The CSL with every text escaped for TeX, so no field's value can close its braces and start another field. */
function forBibtex(csl: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(csl)) {
    if (name === 'DOI' || name === 'URL') out[name] = verbatim(String(value))
    else if (name === 'id' || name === 'type' || name === 'citation-key' || DATE_VARIABLES.has(name)) out[name] = value
    else if (typeof value === 'string') out[name] = tex(value)
    else if (Array.isArray(value)) {
      out[name] = value.map((n: Record<string, string>) => Object.fromEntries(Object.entries(n).map(([k, v]) => [k, tex(v)])))
    }
  }
  return out
}

/** True when the braces not escaped with a backslash balance: the entry is one entry. */
function balanced(bib: string): boolean {
  let depth = 0
  for (let i = 0; i < bib.length; i++) {
    const c = bib[i]
    if (c === '\\') i++
    else if (c === '{') depth++
    else if (c === '}' && --depth < 0) return false
  }
  return depth === 0
}

function bibtexOf(csl: Record<string, unknown>): string {
  const bib = citeOf(forBibtex(csl)).format('bibtex', { format: 'text' }).trim()
  if (!balanced(bib)) throw new CitationError('the BibTeX entry came out with unbalanced braces', 'failed')
  return `${bib}\n`
}

/**
 * RIS, one tag a line, as the agencies write it. citation-js's text output cuts every value at 70 characters
 * with a bare line break (a reader takes the rest for a line of its own) and truncates `ID` to 20 (the 1990s
 * spec: `10.1101/2020.03.01.9`, another DOI); so its tags are joined here, without `ID`.
 */
function risOf(csl: Record<string, unknown>): string {
  const [entry = {}] = citeOf(csl).format('ris', { format: 'object' })
  const lines = [`TY  - ${String(entry.TY ?? 'GEN')}`]
  for (const [tag, value] of Object.entries(entry)) {
    if (tag === 'TY' || tag === 'ID' || tag === 'ER') continue
    for (const v of [value].flat()) {
      const text = clean(String(v), MAX_STRING)
      if (text !== '') lines.push(`${tag}  - ${text}`)
    }
  }
  lines.push('ER  - ')
  return `${lines.join('\n')}\n`
}

// ---- bibliographies, in the formatter thread ----

interface Job {
  id: number
  message: BibliographyJob
  resolve(body: string): void
  reject(err: Error): void
  timer: NodeJS.Timeout
  startedAt?: number
}

interface Formatter {
  format(csl: Record<string, unknown>, style: string, locale: string): Promise<string>
  close(): Promise<void>
}

type FormatterOptions = Required<Pick<CitationOptions, 'queueMax' | 'timeoutMs' | 'workerHeapMb'>> & { log: CopyLog }

/** The formatter thread's state: the jobs waiting, the one it formats, a running mean of how long one takes. */
interface FormatterState {
  readonly opts: FormatterOptions
  readonly workerUrl: URL
  /** The code the thread evaluates when run from the sources; undefined: `workerUrl` itself. */
  readonly source: string | undefined
  readonly waiting: Job[]
  running: Job | undefined
  worker: Worker | undefined
  nextId: number
  closed: boolean
  meanMs: number
}

function createFormatter(opts: FormatterOptions): Formatter {
  const f: FormatterState = {
    opts,
    ...formatterThread(),
    waiting: [],
    running: undefined,
    worker: undefined,
    nextId: 1,
    closed: false,
    meanMs: 15
  }
  return { format: (csl, style, locale) => enqueue(f, csl, style, locale), close: () => closeFormatter(f) }
}

/** Where the formatter thread's code is. */
function formatterThread(): { workerUrl: URL; source: string | undefined } {
  const here = import.meta.url
  // Tests and `tsx` run the sources; the server runs dist/: the worker is the file beside this one.
  const fromSource = here.endsWith('.ts')
  const workerUrl = new URL(fromSource ? './citations-worker.ts' : './citations-worker.js', here)
  if (!fromSource) return { workerUrl, source: undefined }
  // tsx's `--import` registers itself on the main thread only: the sources' worker registers tsx's hooks first.
  const tsxApi = pathToFileURL(
    createRequire(here)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs')
  ).href
  const source = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl.href)}) })`
  return { workerUrl, source }
}

function spawn(f: FormatterState): Worker {
  const w = new Worker(f.source ?? f.workerUrl, {
    eval: f.source !== undefined,
    resourceLimits: { maxOldGenerationSizeMb: f.opts.workerHeapMb },
    stdout: false,
    stderr: false
  })
  w.unref() // the jobs' timers keep the process up while there is work; an idle formatter never does
  w.on('message', (reply: BibliographyReply) => replied(f, w, reply))
  w.on('error', (err) => {
    if (w !== f.worker) return
    f.opts.log.warn({ err: err.message }, 'the citation formatter thread failed; a new one takes the next citation')
    lost(f, new CitationError(`the citation could not be formatted: ${err.message.slice(0, 200)}`, 'failed'))
  })
  w.on('exit', (code) => {
    if (w !== f.worker) return
    lost(f, new CitationError(`the citation formatter thread ended (code ${code})`, 'failed'))
  })
  return w
}

/** The thread's answer to the job it holds: settled, the mean updated, the next job begun. */
function replied(f: FormatterState, w: Worker, reply: BibliographyReply): void {
  if (w !== f.worker || f.running === undefined || reply.id !== f.running.id) return
  const job = f.running
  f.running = undefined
  clearTimeout(job.timer)
  f.meanMs = 0.9 * f.meanMs + 0.1 * (Date.now() - (job.startedAt ?? Date.now()))
  if ('body' in reply) job.resolve(reply.body)
  else job.reject(new CitationError(`the citation could not be formatted: ${reply.error}`, 'failed'))
  next(f)
}

/** The thread is gone (failed, stuck, ended): the citation it held fails, the others go to a new one. */
function lost(f: FormatterState, err: Error): void {
  const w = f.worker
  f.worker = undefined
  // Terminated, not awaited: its exit is ignored (it is no longer `worker`).
  if (w !== undefined) w.terminate().catch(() => {})
  const job = f.running
  f.running = undefined
  if (job !== undefined) {
    clearTimeout(job.timer)
    job.reject(err)
  }
  next(f)
}

function next(f: FormatterState): void {
  if (f.closed || f.running !== undefined) return
  const job = f.waiting.shift()
  if (job === undefined) return
  f.worker ??= spawn(f)
  f.running = job
  job.startedAt = Date.now()
  f.worker.postMessage(job.message)
}

function enqueue(f: FormatterState, csl: Record<string, unknown>, style: string, locale: string): Promise<string> {
  if (f.closed) return Promise.reject(new CitationError('the citation formatter is closed', 'closed'))
  if (f.waiting.length >= f.opts.queueMax) {
    const seconds = Math.min(60, Math.max(1, Math.ceil(((f.waiting.length + 1) * f.meanMs) / 1000)))
    return Promise.reject(new CitationBusy(seconds))
  }
  return new Promise<string>((resolve, reject) => {
    const id = f.nextId++
    const job: Job = {
      id,
      message: { id, csl, style, locale },
      resolve,
      reject,
      timer: setTimeout(() => timedOut(f, job, csl), f.opts.timeoutMs)
    }
    f.waiting.push(job)
    next(f)
  })
}

/** A job not formatted in time fails; when the thread holds it, the thread is stuck and a new one takes the rest. */
function timedOut(f: FormatterState, job: Job, csl: Record<string, unknown>): void {
  const err = new CitationError(`the citation was not formatted within ${f.opts.timeoutMs} ms`, 'timeout')
  if (f.running === job) {
    // The thread is stuck on this record (or far behind): a new one takes the rest.
    f.opts.log.warn({ doi: csl.DOI, timeoutMs: f.opts.timeoutMs }, 'a citation took too long to format; the formatter thread is restarted')
    lost(f, err)
  } else {
    const at = f.waiting.indexOf(job)
    if (at >= 0) f.waiting.splice(at, 1)
    job.reject(err)
  }
}

async function closeFormatter(f: FormatterState): Promise<void> {
  if (f.closed) return
  f.closed = true
  const err = new CitationError('the citation formatter is closed', 'closed')
  for (const job of [...(f.running === undefined ? [] : [f.running]), ...f.waiting.splice(0)]) {
    clearTimeout(job.timer)
    job.reject(err)
  }
  f.running = undefined
  const w = f.worker
  f.worker = undefined
  if (w !== undefined) await w.terminate()
}

// ---- the service ----

function formatsHeld(): CitationFormats {
  const keys = [BIBTEX, RIS]
  for (const style of CITATION_STYLES) keys.push(`${BIBLIOGRAPHY};style=${style}`)
  for (const locale of CITATION_LOCALES) {
    keys.push(`${BIBLIOGRAPHY};locale=${locale}`)
    for (const style of CITATION_STYLES) keys.push(`${BIBLIOGRAPHY};style=${style};locale=${locale}`)
  }
  return { types: [BIBTEX, RIS, BIBLIOGRAPHY], styles: CITATION_STYLES, locales: CITATION_LOCALES, keys }
}

/** The style and locale asked (case aside, as CSL ids are lower-case), or which one is not held. */
function bibliographyParams(params: Readonly<Record<string, string | undefined>>): { style: string; locale: string } {
  const style = (params.style ?? DEFAULT_STYLE).trim().toLowerCase()
  const held = CITATION_STYLES.find((s) => s === style)
  if (held === undefined) {
    throw new CitationUnknownFormat(
      `the style ${JSON.stringify(style.slice(0, 80))} is not held here; the styles held are ${CITATION_STYLES.join(', ')}`,
      CITATION_STYLES
    )
  }
  const asked = (params.locale ?? DEFAULT_LOCALE).trim()
  const locale = CITATION_LOCALES.find((l) => l.toLowerCase() === asked.toLowerCase().replace('_', '-'))
  if (locale === undefined) {
    throw new CitationUnknownFormat(
      `the locale ${JSON.stringify(asked.slice(0, 80))} is not held here; the locales held are ${CITATION_LOCALES.join(', ')}`,
      CITATION_LOCALES
    )
  }
  return { style: held, locale }
}

export function createCitations(opts: CitationOptions): Citations {
  const timeoutMs = opts.timeoutMs ?? 10_000
  const formatter = createFormatter({ queueMax: opts.queueMax, timeoutMs, workerHeapMb: opts.workerHeapMb ?? 256, log: opts.log })
  const maxSize = opts.cacheMaxBytes ?? 16 * 1024 * 1024
  const kept = new LRUCache<string, { fingerprint: string; body: string }>({
    max: Math.max(1, opts.cacheMax),
    maxSize,
    maxEntrySize: Math.min(maxSize, 1024 * 1024),
    sizeCalculation: (v, k) => 2 * (v.body.length + k.length) + 64
  })
  // The same citation asked again while it is being formatted waits for that one (one place in the queue).
  const inFlight = new Map<string, Promise<string>>()
  const count = opts.count ?? (() => {})

  async function render(csl: Csl, type: string, params: Readonly<Record<string, string | undefined>> = {}): Promise<Citation> {
    const base = type.split(';')[0]?.trim().toLowerCase() ?? ''
    const name = FORMAT_NAMES[base]
    if (name === undefined) {
      throw new CitationUnknownFormat(
        `${JSON.stringify(base.slice(0, 80))} is not a citation format held here; those held are ${formatsHeld().types.join(', ')}`,
        formatsHeld().types
      )
    }
    const { style, locale } = name === 'bibliography' ? bibliographyParams(params) : { style: '', locale: '' }
    const clean = cleanCsl(csl, name === 'bibliography')
    const fingerprint = createHash('sha1').update(JSON.stringify(clean)).digest('base64')
    const key = `${String(clean.id)}\n${name}\n${style}\n${locale}`
    const contentType = CONTENT_TYPES[base] ?? base
    const hit = kept.get(key)
    if (hit !== undefined && hit.fingerprint === fingerprint) {
      count(name, 'done')
      return { contentType, body: hit.body }
    }
    let body: string
    try {
      if (name === 'bibliography') {
        const flightKey = `${key}\n${fingerprint}`
        let pending = inFlight.get(flightKey)
        if (pending === undefined) {
          pending = formatter.format(clean, style, locale).finally(() => inFlight.delete(flightKey))
          inFlight.set(flightKey, pending)
        }
        body = await pending
      } else {
        body = name === 'bibtex' ? bibtexOf(clean) : risOf(clean)
      }
    } catch (err) {
      count(name, err instanceof CitationBusy ? 'queue_full' : 'failed')
      if (err instanceof CitationError) throw err
      throw new CitationError(
        `the citation could not be formatted: ${err instanceof Error ? err.message.slice(0, 200) : 'unknown'}`,
        'failed'
      )
    }
    if (clean.id !== 'item') kept.set(key, { fingerprint, body })
    count(name, 'done')
    return { contentType, body }
  }

  return { formats: formatsHeld(), render, close: () => formatter.close() }
}
