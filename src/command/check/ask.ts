/**
 * Asking a doi-proxy about the DOIs found, through its batch API (POST /api/batch): a running server's
 * over HTTP, or (--upstream) an app built in this process with the same code, asked with inject. Each
 * DOI is sent once; the answers are read as they stream in.
 */
import type { FastifyInstance } from 'fastify'
import { cacheKey } from '../../handle/name.js'
import type { Verdict } from './report.js'

/** The most DOIs in one request: below the server's default BATCH_MAX_LINES, small enough to show progress. */
export const CHUNK = 1000

/** A failure to ask at all (server down, refused): the run cannot say anything. */
export class AskError extends Error {}

/** Ask about some lines; `onLine` after each line answered. */
export type Asker = (lines: readonly string[], onLine: () => void) => Promise<Array<Verdict & { input: string }>>

/** The verdict of each distinct DOI (by cache key), asking in chunks; progress after each answered line. */
export async function askAll (dois: readonly string[], ask: Asker, onProgress: (done: number, total: number) => void): Promise<Map<string, Verdict>> {
  const distinct = [...new Map(dois.map((d) => [cacheKey(d), d])).values()]
  const verdicts = new Map<string, Verdict>()
  let done = 0
  const onLine = (): void => { onProgress(++done, distinct.length) }
  for (let i = 0; i < distinct.length; i += CHUNK) {
    const chunk = distinct.slice(i, i + CHUNK)
    const answers = await ask(chunk.map(asLine), onLine)
    if (answers.length !== chunk.length) throw new AskError(`the server answered ${answers.length} lines for ${chunk.length} DOIs`)
    answers.forEach((a, j) => {
      const { input: _input, ...verdict } = a
      verdicts.set(cacheKey(chunk[j]!), verdict)
    })
  }
  return verdicts
}

/**
 * A DOI as a batch line, which is read as GET /{doi} reads its path: its own '%' must stay a '%', and a
 * control character decoded from a link (%0A) must neither split the line nor be lost (the batch says
 * such a name is not a DOI).
 */
// eslint-disable-next-line no-control-regex
const asLine = (doi: string): string => doi.replace(/[%\u0000-\u001f\u007f-\u009f]/g, encodeURIComponent)

/** A running doi-proxy at `server` (http://127.0.0.1:8000). */
export function httpAsker (server: string): Asker {
  const url = `${server.replace(/\/+$/, '')}/api/batch`
  return async (lines, onLine) => {
    let res: Response
    try {
      res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain; charset=utf-8', accept: 'application/x-ndjson' }, body: lines.join('\n') })
    } catch (err) {
      const cause = (err as { cause?: { code?: string, message?: string } }).cause
      throw new AskError(`cannot reach doi-proxy at ${server} (${cause?.code ?? cause?.message ?? String(err)}); start it, or pass --server URL or --upstream`)
    }
    if (res.status !== 200 || res.body === null) throw new AskError(`doi-proxy at ${server} answered ${res.status}: ${(await res.text()).slice(0, 300)}`)
    const answers: Array<Verdict & { input: string }> = []
    let rest = ''
    const decoder = new TextDecoder()
    for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
      const lines = (rest + decoder.decode(bytes, { stream: true })).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        answers.push(JSON.parse(line) as Verdict & { input: string })
        onLine()
      }
    }
    return answers
  }
}

/** An app built in this process (--upstream): the same batch code, resolving through its own upstream client. */
export function injectAsker (app: FastifyInstance): Asker {
  return async (lines, onLine) => {
    const res = await app.inject({ method: 'POST', url: '/api/batch', headers: { 'content-type': 'text/plain; charset=utf-8' }, payload: lines.join('\n') })
    if (res.statusCode !== 200) throw new AskError(`the batch answered ${res.statusCode}: ${res.body.slice(0, 300)}`)
    return res.body.split('\n').filter((l) => l !== '').map((l) => {
      onLine()
      return JSON.parse(l) as Verdict & { input: string }
    })
  }
}
