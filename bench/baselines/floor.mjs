// The floor: what bare node:http does on this machine, answering every request with one fixed answer.
// With FLOOR_ANSWER=<file.json> ({ status, headers: [[name, value], …], body: base64, keepAliveTimeoutS })
// it writes exactly the answer our server gave for the scenario (bench/lib/floor-answer.ts captures it:
// same status, same headers in the same order, same body; Node adds Date, Connection and Keep-Alive
// itself, as it does for ours), so "ours ÷ floor" is the cost of being a resolver and nothing else.
// Without it: a 302 with a body the size of our redirect page (the client-ceiling check and zipf use it).
// With FLOOR_ANSWERS=<file.json> ({ answers: [[path, answer], …] }, bench/lib/floor-answer.ts writeAnswersFile):
// each path's own captured answer, looked up by the request's path with its query (POST /api/batch and
// POST /api/batch?verify=… are two answers), as ours writes a different answer per DOI. A request with a
// body (a POST) is read to its end before it is answered, as ours must read a batch before answering it.
// With FLOOR_EMPTY=1: a 204 with no body, the least a node:http server can answer.
// With FLOOR_WORKERS=N (N > 1): N processes sharing the port through node:cluster, as our server runs
// with WORKERS=N, so that both have the same number of processes on the same cores.
import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const workers = Number(process.env.FLOOR_WORKERS ?? 1)
if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork()
  const stopAll = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGTERM')
    process.exit(0)
  }
  process.on('SIGTERM', stopAll)
  if (!process.stdin.isTTY) process.stdin.on('close', stopAll).resume()
} else {
  serve()
}

function serve() {
  const LOCATION = 'https://publisher.example/article/10.1234/floor'
  let status = 302
  let body = Buffer.from(`<html><head><title>Handle Redirect</title></head>\n<body><a href="${LOCATION}">${LOCATION}</a></body></html>`)
  let headers = [
    ['location', LOCATION],
    ['content-type', 'text/html; charset=utf-8'],
    ['content-length', String(body.length)]
  ]
  let keepAliveS = 5
  const byPath = new Map()

  if (process.env.FLOOR_ANSWER !== undefined && process.env.FLOOR_ANSWER !== '') {
    const answer = JSON.parse(readFileSync(process.env.FLOOR_ANSWER, 'utf8'))
    status = answer.status
    headers = answer.headers
    body = Buffer.from(answer.body, 'base64')
    keepAliveS = answer.keepAliveTimeoutS ?? keepAliveS
  } else if (process.env.FLOOR_ANSWERS !== undefined && process.env.FLOOR_ANSWERS !== '') {
    // Each path's own answer ({ answers: [[path, answer], …] }), found by the request's path: the least a
    // server that writes a different answer per path must do. A path not in the file gets the first.
    const { answers } = JSON.parse(readFileSync(process.env.FLOOR_ANSWERS, 'utf8'))
    for (const [path, a] of answers) byPath.set(path, { status: a.status, flat: a.headers.flat(), body: Buffer.from(a.body, 'base64') })
    const first = answers[0][1]
    status = first.status
    headers = first.headers
    body = Buffer.from(first.body, 'base64')
    keepAliveS = first.keepAliveTimeoutS ?? keepAliveS
  } else if (process.env.FLOOR_EMPTY === '1') {
    status = 204
    headers = []
    body = Buffer.alloc(0)
  }
  // writeHead takes a flat [name, value, name, value, …] array and keeps that order.
  const flat = headers.flat()

  const server =
    byPath.size === 0
      ? createServer((_req, res) => {
          res.writeHead(status, flat)
          res.end(body)
        })
      : createServer((req, res) => {
          const a = byPath.get(req.url) ?? byPath.values().next().value
          const answer = () => {
            res.writeHead(a.status, a.flat)
            res.end(a.body)
          }
          // GET and HEAD carry no body: answered at once, so the GET floors cost what they did before.
          if (req.method === 'GET' || req.method === 'HEAD') answer()
          else req.on('end', answer).resume()
        })
  server.keepAliveTimeout = keepAliveS * 1000

  const port = Number(process.env.PORT ?? 8001)
  server.listen(port, process.env.HOST ?? '127.0.0.1')
  process.on('SIGTERM', () => server.close(() => process.exit(0)))
  // Started by the bench runner with stdin as a pipe: when the runner dies, so do we (a worker: when the primary does).
  if (cluster.isWorker) process.on('disconnect', () => process.exit(0))
  else if (!process.stdin.isTTY) process.stdin.on('close', () => process.exit(0)).resume()
}
