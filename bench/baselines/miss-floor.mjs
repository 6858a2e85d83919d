// The miss floor: what a miss costs bare Node here, for the cold scenario. A node:http server that, for
// every request, asks the upstream for the handle in its path with undici (a Pool with our default limits:
// 16 connections, keep-alive), reads the JSON, takes its first URL value and writes a 302 to it with our
// answer's headers and redirect page (captured from our server by the runner, bench/lib/floor-answer.ts;
// the URL put in its place, Content-Length counted). No cache, no queue, no checks: a resolver can only
// be slower, so "ours minus the miss floor" is what being a resolver adds to a miss.
//   PORT, UPSTREAM_URL (…/api/handles), MISS_FLOOR_ANSWER (a CapturedAnswer JSON with `url`: the URL to replace)
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { Pool } from 'undici'

const upstream = new URL(process.env.UPSTREAM_URL)
const basePath = upstream.pathname.replace(/\/+$/, '')
const pool = new Pool(upstream.origin, {
  connections: 16,
  pipelining: 1,
  keepAliveTimeout: 30_000,
  headersTimeout: 10_000,
  bodyTimeout: 10_000
})
const answer = JSON.parse(readFileSync(process.env.MISS_FLOOR_ANSWER, 'utf8'))
const page = Buffer.from(answer.body, 'base64').toString('utf8').split(answer.url)
const escape = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const server = createServer(async (req, res) => {
  try {
    const r = await pool.request({ path: `${basePath}${req.url}`, method: 'GET', headers: { accept: 'application/json' } })
    const record = await r.body.json()
    const url = record.values?.find((v) => v.type === 'URL')?.data?.value
    if (typeof url !== 'string') throw new Error(`no URL value for ${req.url}`)
    const body = page.join(escape(url))
    const headers = []
    for (const [name, value] of answer.headers) {
      const lower = name.toLowerCase()
      headers.push(
        name,
        lower === 'location' ? url : lower === 'content-length' ? String(Buffer.byteLength(body)) : lower === 'x-cache' ? 'MISS' : value
      )
    }
    res.writeHead(answer.status, headers)
    res.end(body)
  } catch (err) {
    res.writeHead(502, { 'content-type': 'text/plain' })
    res.end(String(err))
  }
})
server.keepAliveTimeout = (answer.keepAliveTimeoutS ?? 5) * 1000
server.listen(Number(process.env.PORT), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => process.exit(0)))
// Started by the bench runner with stdin as a pipe: when the runner dies, so do we.
if (!process.stdin.isTTY) process.stdin.on('close', () => process.exit(0)).resume()
