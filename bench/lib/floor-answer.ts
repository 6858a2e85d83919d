/**
 * Same-bytes floors: our server's answer for each path of a scenario, captured once (status, headers in
 * order, body), for bench/baselines/floor.mjs to write for every request of that path. Date, Connection and Keep-Alive are
 * left out (Node writes them itself for both, with the same keep-alive timeout); every other header
 * (Expires and Cache-Control included) is copied as a fixed string. A request with a body (POST /api/batch)
 * is captured by its method and body too: recordAnswers keeps what a real client sent and ours answered.
 */
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { TMP } from './processes.js'

export interface CapturedAnswer {
  status: number
  headers: Array<[string, string]>
  /** Base64. */
  body: string
  keepAliveTimeoutS?: number
}

/** What is asked besides the path and headers: the method (default GET) and a body, sent with its Content-Length. */
export interface Ask {
  method?: string
  body?: string
}

const NODE_WRITES = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding'])

/** The whole answer as received (every header but Date, in order, with its case), to check the floor against ours. */
export async function answerBytes(baseUrl: string, path: string, headers: Record<string, string> = {}, ask: Ask = {}): Promise<string> {
  const a = await captureAnswer(baseUrl, path, headers, new Set(['date']), ask)
  return JSON.stringify(a)
}

export async function captureAnswer(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
  leaveOut = NODE_WRITES,
  ask: Ask = {}
): Promise<CapturedAnswer> {
  const sent = ask.body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(ask.body)) }
  return await new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${path}`, { method: ask.method ?? 'GET', headers: sent }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const pairs: Array<[string, string]> = []
        let keepAliveTimeoutS: number | undefined
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i] ?? ''
          const value = res.rawHeaders[i + 1] ?? ''
          if (name.toLowerCase() === 'keep-alive') {
            const m = /timeout=(\d+)/.exec(value)
            if (m?.[1] !== undefined) keepAliveTimeoutS = Number(m[1])
          }
          if (!leaveOut.has(name.toLowerCase())) pairs.push([name, value])
        }
        resolve({
          status: res.statusCode ?? 0,
          headers: pairs,
          body: Buffer.concat(chunks).toString('base64'),
          ...(keepAliveTimeoutS === undefined ? {} : { keepAliveTimeoutS })
        })
      })
    })
    req.on('error', reject)
    req.end(ask.body)
  })
}

/** A request a client made through recordAnswers, and what ours answered it. */
export interface Recorded {
  /** The path with its query, as floor.mjs looks answers up (FLOOR_ANSWERS). */
  path: string
  headers: Record<string, string>
  ask: Required<Ask>
  answer: CapturedAnswer
}

/** The request headers a batch's answer depends on, handed on as the client sent them. */
const HANDED_ON = ['content-type', 'accept']

/**
 * Runs `work` against a stand-in for ours at `baseUrl` (work is given the stand-in's URL): each request is
 * read whole, asked again of ours with the same method, path, body and content headers (captureAnswer), and
 * ours's answer written back, so the client completes as against ours; returns each request and its answer,
 * for a floor that writes them (writeAnswersFile) keyed by the path and its query.
 */
export async function recordAnswers(baseUrl: string, work: (url: string) => Promise<void>): Promise<Recorded[]> {
  const recorded: Recorded[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const headers: Record<string, string> = {}
      for (const name of HANDED_ON) {
        const value = req.headers[name]
        if (typeof value === 'string') headers[name] = value
      }
      const ask = { method: req.method ?? 'GET', body: Buffer.concat(chunks).toString() }
      const path = req.url ?? '/'
      captureAnswer(baseUrl, path, headers, NODE_WRITES, ask).then(
        (answer) => {
          recorded.push({ path, headers, ask, answer })
          res.writeHead(answer.status, answer.headers.flat())
          res.end(Buffer.from(answer.body, 'base64'))
        },
        (err: Error) => {
          res.writeHead(502)
          res.end(err.message)
        }
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    await work(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  return recorded
}

let files = 0

/** Write the answer where floor.mjs (FLOOR_ANSWER) or miss-floor.mjs (with `url`, the URL it replaces) reads it; returns the file. */
export function writeAnswerFile(answer: CapturedAnswer & { url?: string }): string {
  const dir = join(TMP, 'floor-answers')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `answer-${process.pid}-${files++}.json`)
  writeFileSync(file, JSON.stringify(answer))
  return file
}

/**
 * Write each path's own answer where floor.mjs (FLOOR_ANSWERS) reads them: it writes the answer of the
 * path asked for, as ours does, instead of one answer for every path. Returns the file.
 */
export function writeAnswersFile(byPath: ReadonlyArray<readonly [string, CapturedAnswer]>): string {
  const dir = join(TMP, 'floor-answers')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `answers-${process.pid}-${files++}.json`)
  writeFileSync(file, JSON.stringify({ answers: byPath }))
  return file
}

/** "302, 9 headers, 245 bytes" for the console and RESULTS.md. */
export function describeAnswer(a: CapturedAnswer): string {
  return `${a.status}, ${a.headers.length} headers + Date/Connection/Keep-Alive, ${Buffer.from(a.body, 'base64').length} bytes of body`
}
