/**
 * Same-bytes floors: our server's answer for each path of a scenario, captured once (status, headers in
 * order, body), for bench/baselines/floor.mjs to write for every request of that path. Date, Connection and Keep-Alive are
 * left out (Node writes them itself for both, with the same keep-alive timeout); every other header
 * (Expires and Cache-Control included) is copied as a fixed string.
 */
import { request } from 'node:http'
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

const NODE_WRITES = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding'])

/** The whole answer as received (every header but Date, in order, with its case), to check the floor against ours. */
export async function answerBytes(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  const a = await captureAnswer(baseUrl, path, headers, new Set(['date']))
  return JSON.stringify(a)
}

export async function captureAnswer(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
  leaveOut = NODE_WRITES
): Promise<CapturedAnswer> {
  return await new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${path}`, { method: 'GET', headers }, (res) => {
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
    req.end()
  })
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
