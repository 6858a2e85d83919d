/**
 * Asking a doi-proxy about the DOIs found, through its batch API (POST /api/batch): a running server's
 * over HTTP, or (--upstream) an app built in this process with the same code, asked with inject. Each
 * DOI is sent once; the answers are read as they stream in.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { cacheKey } from '../../handle/name.js'
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

/** Ask about some lines; `onLine` after each line answered. */
export type Asker = (lines: readonly string[], onLine: (answer: Answer) => void) => Promise<Answer[]>

export interface AskOptions {
  /** Called before each wait the server asked for: how long, and how many DOIs are then asked again. */
  onWait?: (seconds: number, dois: number) => void
  /** At most this many seconds of waiting in all (MAX_RETRY_WAIT_SECONDS). */
  maxWaitSeconds?: number
}

/**
 * The verdict of each distinct DOI (by cache key), asking in chunks; progress after each line answered for good.
 * Lines a limit refused with `retryAfter` are asked again after the longest such wait, as the batch API's
 * sizing advice says (docs/checking-dois.md), while the run's waits stay within maxWaitSeconds in all.
 */
export async function askAll(
  dois: readonly string[],
  ask: Asker,
  onProgress: (done: number, total: number) => void,
  options: AskOptions = {}
): Promise<Map<string, Verdict>> {
  const distinct = [...new Map(dois.map((d) => [cacheKey(d), d])).values()]
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
        answers = await ask(pending.map(asLine), onLine)
      } catch (err) {
        if (err instanceof RetryLater && (await waitFor(err.seconds, pending.length))) continue
        throw err
      }
      if (answers.length !== pending.length) throw new AskError(`the server answered ${answers.length} lines for ${pending.length} DOIs`)
      const refused: string[] = []
      let longest = 0
      answers.forEach((a, j) => {
        const { input: _input, ...verdict } = a
        verdicts.set(cacheKey(pending[j]!), verdict)
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

/** A running doi-proxy at `server` (http://127.0.0.1:8000). */
export function httpAsker(server: string): Asker {
  const url = `${server.replace(/\/+$/, '')}/api/batch`
  return async (lines, onLine) => {
    let res: Response
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'text/plain; charset=utf-8', accept: 'application/x-ndjson' },
        body: lines.join('\n')
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
        const answer = JSON.parse(line) as Answer
        answers.push(answer)
        onLine(answer)
      }
    }
    return answers
  }
}

/** An app built in this process (--upstream): the same batch code, resolving through its own upstream client. */
export function injectAsker(app: FastifyInstance): Asker {
  return async (lines, onLine) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      payload: lines.join('\n')
    })
    if (res.statusCode !== 200) {
      throw refusal(`the batch answered ${res.statusCode}: ${res.body.slice(0, 300)}`, res.statusCode, res.headers['retry-after'])
    }
    return res.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const answer = JSON.parse(l) as Answer
        onLine(answer)
        return answer
      })
  }
}

/** A batch not answered: one to send again later when a 429 or 503 says when (Retry-After, in seconds). */
function refusal(message: string, status: number, retryAfter: unknown): AskError {
  const seconds = typeof retryAfter === 'string' && /^\d{1,9}$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined
  return (status === 429 || status === 503) && seconds !== undefined ? new RetryLater(message, seconds) : new AskError(message)
}
