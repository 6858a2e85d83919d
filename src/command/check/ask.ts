/**
 * Asking a doi-proxy about the DOIs found, through its batch API (POST /api/batch): a running server's
 * over HTTP, or (--upstream) an app built in this process with the same code, asked with inject. Each
 * DOI is sent once (with --verify, once per work cited under it); the answers are read as they stream in.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { cacheKey } from '../../handle/name.js'
import type { CitedWork, LandingResult, MetadataResult, RetractionResult, Verification, VerifyLevel } from '../../handle/verify/types.js'
import type { Verdict } from './report.js'

/** The most DOIs in one request: below the server's default BATCH_MAX_LINES, small enough to show progress. */
export const CHUNK = 1000

/**
 * The longest a run waits, in all, for a server that asked it to (a line's `retryAfter`, a 429 or 503's
 * Retry-After) before asking again; what is still refused then is reported as could not be checked.
 */
export const MAX_RETRY_WAIT_SECONDS = 60

/** A failure to ask at all (server down, refused): the run cannot say anything. */
export class AskError extends Error {}

/** The whole batch was refused (429 or 503) with Retry-After: it may be sent again after `seconds`. */
export class RetryLater extends AskError {
  constructor(
    message: string,
    readonly seconds: number
  ) {
    super(message)
  }
}

/** A batch line's answer; `retryAfter` (seconds) when a limit refused the line and it may be asked again then. */
export type Answer = Verdict & { input: string; retryAfter?: number }

/**
 * A batch line: a DOI, or (`?verify=`) a DOI with the work its reference cites, for `metadata` to compare
 * (`{doi, title, year, author}`, as the batch API reads objects; a DOI cited without a title is a string).
 */
export type BatchItem = string | { doi: string; title: string; year?: number; author?: string }

/** What to ask about: a DOI found, and with --verify the work its entry cites. */
export interface AskItem {
  doi: string
  cited?: CitedWork
}

/** Ask about some lines; `onLine` after each line answered. */
export type Asker = (lines: readonly BatchItem[], onLine: (answer: Answer) => void) => Promise<Answer[]>

export interface AskOptions {
  /** Called before each wait the server asked for: how long, and how many DOIs are then asked again. */
  onWait?: (seconds: number, dois: number) => void
  /** At most this many seconds of waiting in all (MAX_RETRY_WAIT_SECONDS). */
  maxWaitSeconds?: number
}

/**
 * Which answer an item reads (askAll's map): its DOI's cache key, and the work cited when it gives a title,
 * so one DOI cited under two titles is two comparisons (the server looks it up once).
 */
export function keyOf(item: string | AskItem): string {
  if (typeof item === 'string') return cacheKey(item)
  const { doi, cited } = item
  return cited?.title === undefined ? cacheKey(doi) : `${cacheKey(doi)}\n${JSON.stringify([cited.title, cited.year, cited.author])}`
}

/** An item as a batch line: an object when there is a title to compare. */
function batchItem(item: string | AskItem): BatchItem {
  if (typeof item === 'string') return asLine(item)
  const { doi, cited } = item
  if (cited?.title === undefined) return asLine(doi)
  return { doi: asLine(doi), title: cited.title, year: cited.year, author: cited.author }
}

/**
 * The verdict of each distinct DOI (by keyOf), asking in chunks; progress after each line answered for good.
 * Lines a limit refused with `retryAfter` are asked again after the longest such wait, as the batch API's
 * sizing advice says (docs/checking-dois.md), while the run's waits stay within maxWaitSeconds in all.
 */
export async function askAll(
  items: ReadonlyArray<string | AskItem>,
  ask: Asker,
  onProgress: (done: number, total: number) => void,
  options: AskOptions = {}
): Promise<Map<string, Verdict>> {
  const distinct = [...new Map(items.map((d) => [keyOf(d), d])).values()]
  const verdicts = new Map<string, Verdict>()
  let done = 0
  let waitLeft = options.maxWaitSeconds ?? MAX_RETRY_WAIT_SECONDS
  const onLine = (answer: Answer): void => {
    if (refusedFor(answer) === undefined) onProgress(++done, distinct.length)
  }
  /** Whether to ask again after `seconds` (at least 1, so a server answering 0 cannot make us spin); waits if so. */
  const waitFor = async (seconds: number, count: number): Promise<boolean> => {
    const wait = Math.max(1, Math.ceil(seconds))
    if (wait > waitLeft) return false
    waitLeft -= wait
    options.onWait?.(wait, count)
    await sleep(wait * 1000)
    return true
  }
  for (let i = 0; i < distinct.length; i += CHUNK) {
    let pending = distinct.slice(i, i + CHUNK)
    while (pending.length > 0) {
      let answers: Answer[]
      try {
        answers = await ask(pending.map(batchItem), onLine)
      } catch (err) {
        if (err instanceof RetryLater && (await waitFor(err.seconds, pending.length))) continue
        throw err
      }
      if (answers.length !== pending.length) throw new AskError(`the server answered ${answers.length} lines for ${pending.length} DOIs`)
      const refused: Array<string | AskItem> = []
      let longest = 0
      answers.forEach((a, j) => {
        const { input: _input, ...verdict } = a
        verdicts.set(keyOf(pending[j]!), verdict)
        const seconds = refusedFor(a)
        if (seconds !== undefined) {
          refused.push(pending[j]!)
          longest = Math.max(longest, seconds)
        }
      })
      if (refused.length > 0 && (await waitFor(longest, refused.length))) {
        pending = refused
      } else {
        // Still refused: reported as could not be checked, with the server's own reason.
        done += refused.length
        onProgress(done, distinct.length)
        pending = []
      }
    }
  }
  return verdicts
}

/** The seconds a refused line may be asked again after; undefined for a line answered for good. */
function refusedFor(answer: Answer): number | undefined {
  const seconds = answer.retryAfter
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined
}

/**
 * A DOI as a batch line, which is read as GET /{doi} reads its path: its own '%' must stay a '%', and a
 * control character decoded from a link (%0A) must neither split the line nor be lost (the batch says
 * such a name is not a DOI).
 */
// eslint-disable-next-line no-control-regex
const asLine = (doi: string): string => doi.replace(/[%\u0000-\u001f\u007f-\u009f]/g, encodeURIComponent)

/**
 * The request of a batch: as before issue 41 without levels (text/plain, a DOI a line); with levels,
 * `?verify=` and a JSON array of the lines (strings and objects).
 */
function batchRequest(lines: readonly BatchItem[], levels: readonly VerifyLevel[]): { query: string; type: string; body: string } {
  if (levels.length === 0) {
    return { query: '', type: 'text/plain; charset=utf-8', body: lines.map((l) => (typeof l === 'string' ? l : l.doi)).join('\n') }
  }
  return { query: `?verify=${levels.join(',')}`, type: 'application/json; charset=utf-8', body: JSON.stringify(lines) }
}

/** A running doi-proxy at `server` (http://127.0.0.1:8000); with levels, asked to verify them. */
export function httpAsker(server: string, levels: readonly VerifyLevel[] = []): Asker {
  const url = `${server.replace(/\/+$/, '')}/api/batch`
  const who = `doi-proxy at ${server}`
  return async (lines, onLine) => {
    let res: Response
    const request = batchRequest(lines, levels)
    try {
      res = await fetch(url + request.query, {
        method: 'POST',
        headers: { 'content-type': request.type, accept: 'application/x-ndjson' },
        body: request.body
      })
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause
      throw new AskError(
        `cannot reach doi-proxy at ${server} (${cause?.code ?? cause?.message ?? String(err)}); start it, or pass --server URL or --upstream`
      )
    }
    if (res.status !== 200 || res.body === null) {
      throw refusal(
        `doi-proxy at ${server} answered ${res.status}: ${(await res.text()).slice(0, 300)}`,
        res.status,
        res.headers.get('retry-after')
      )
    }
    const answers: Answer[] = []
    let rest = ''
    const decoder = new TextDecoder()
    for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
      const lines = (rest + decoder.decode(bytes, { stream: true })).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        // A blank line is the server's heartbeat while a slow line (a landing page) is still being checked.
        if (line.trim() === '') continue
        const answer = answerOf(line, levels, who)
        answers.push(answer)
        onLine(answer)
      }
    }
    return answers
  }
}

/** An app built in this process (--upstream): the same batch code, resolving through its own upstream client. */
export function injectAsker(app: FastifyInstance, levels: readonly VerifyLevel[] = []): Asker {
  return async (lines, onLine) => {
    const request = batchRequest(lines, levels)
    const res = await app.inject({
      method: 'POST',
      url: `/api/batch${request.query}`,
      headers: { 'content-type': request.type },
      payload: request.body
    })
    if (res.statusCode !== 200) {
      throw refusal(`the batch answered ${res.statusCode}: ${res.body.slice(0, 300)}`, res.statusCode, res.headers['retry-after'])
    }
    return res.body
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        const answer = answerOf(l, levels, 'the batch')
        onLine(answer)
        return answer
      })
  }
}

/**
 * One NDJSON line as an answer; with levels, its objects read as the issue names them. A line that is not
 * JSON, or a server that does not verify (an older doi-proxy: no `metadata` on a registered line), cannot
 * be reported on: an AskError, never a crash or a report that silently verified nothing.
 */
function answerOf(line: string, levels: readonly VerifyLevel[], who: string): Answer {
  let raw: unknown
  try {
    raw = JSON.parse(line)
  } catch {
    throw new AskError(`${who} answered a line that is not JSON: ${line.slice(0, 100)}`)
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new AskError(`${who} answered a line that is not an object: ${line.slice(0, 100)}`)
  }
  const answer = raw as Answer
  if (levels.length === 0) return answer
  const verification = verificationOf(raw as Record<string, unknown>, levels)
  if (typeof verification === 'string') throw new AskError(`${who} ${verification}`)
  const { metadata: _m, retraction: _r, landing: _l, ...rest } = answer
  return { ...rest, ...verification }
}

/** A batch not answered: one to send again later when a 429 or 503 says when (Retry-After, in seconds). */
function refusal(message: string, status: number, retryAfter: unknown): AskError {
  const seconds = typeof retryAfter === 'string' && /^\d{1,9}$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined
  return (status === 429 || status === 503) && seconds !== undefined ? new RetryLater(message, seconds) : new AskError(message)
}

type Fields = Record<string, unknown>
const isFields = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v)
const isText = (v: unknown): v is string => typeof v === 'string'
const textOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string'
const oneOf = <T extends string>(v: unknown, words: readonly T[]): v is T =>
  typeof v === 'string' && (words as readonly string[]).includes(v)

/**
 * A registered line's objects of the levels asked, exactly as the issue names them (unknown keys left out,
 * so a report carries only what it can explain); a string saying what is wrong when the line lacks one
 * (a server that does not verify) or holds one this client cannot read. A line not registered holds none.
 */
export function verificationOf(line: Fields, levels: readonly VerifyLevel[]): Verification | string {
  const out: Verification = {}
  for (const level of levels) {
    if (!(level in line)) {
      if (line.registered !== true) continue
      return `does not verify (its answers carry no "${level}"): update it, or check with --upstream`
    }
    const value = line[level]
    if (value === null) {
      out[level] = null
      continue
    }
    const read = level === 'metadata' ? metadataOf(value) : level === 'retraction' ? retractionOf(value) : landingOf(value)
    if (read === undefined) return `answered a "${level}" object this doi-proxy check cannot read: ${JSON.stringify(value).slice(0, 200)}`
    Object.assign(out, { [level]: read })
  }
  return out
}

function metadataOf(v: unknown): MetadataResult | undefined {
  if (!isFields(v) || !oneOf(v.verdict, ['match', 'mismatch', 'unverifiable'] as const) || !Array.isArray(v.mismatches)) return undefined
  const mismatches: MetadataResult['mismatches'] = []
  for (const m of v.mismatches as unknown[]) {
    const value = (x: unknown): x is string | number => typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x))
    if (!isFields(m) || !oneOf(m.field, ['title', 'year', 'author'] as const) || !value(m.cited) || !value(m.registered)) return undefined
    mismatches.push({ field: m.field, cited: m.cited, registered: m.registered })
  }
  const out: MetadataResult = { verdict: v.verdict, mismatches }
  if (oneOf(v.kind, ['other-work', 'details'] as const)) out.kind = v.kind
  if (isText(v.why)) out.why = v.why
  return out
}

function retractionOf(v: unknown): RetractionResult | undefined {
  if (!isFields(v) || !textOrNull(v.notice) || !textOrNull(v.date)) return undefined
  if (v.verdict === null) return { verdict: null, notice: null, date: null, error: isText(v.error) ? v.error : 'no reason given' }
  if (!oneOf(v.verdict, ['retracted', 'corrected', 'expression-of-concern', 'none'] as const)) return undefined
  return { verdict: v.verdict, notice: v.notice, date: v.date }
}

function landingOf(v: unknown): LandingResult | undefined {
  if (!isFields(v) || !textOrNull(v.url)) return undefined
  if (v.verdict === null) {
    return { verdict: null, status: null, url: v.url, evidence: null, error: isText(v.error) ? v.error : 'no reason given' }
  }
  const status = v.status === null || (Number.isInteger(v.status) && (v.status as number) >= 100 && (v.status as number) <= 999)
  if (!oneOf(v.verdict, ['alive', 'unconfirmed', 'blocked', 'dead'] as const) || !status || !isText(v.url) || !isText(v.evidence)) {
    return undefined
  }
  return { verdict: v.verdict, status: v.status as number | null, url: v.url, evidence: v.evidence }
}
