// The floor: what bare node:http does on this machine. Every request gets the same 302 and a
// small body the size of our redirect page, so the ratio "ours / floor" is the cost of being a resolver.
import { createServer } from 'node:http'

const LOCATION = 'https://publisher.example/article/10.1234/floor'
const BODY = Buffer.from(`<html><head><title>Handle Redirect</title></head>\n<body><a href="${LOCATION}">${LOCATION}</a></body></html>`)
const HEADERS = {
  location: LOCATION,
  'content-type': 'text/html; charset=utf-8',
  'content-length': String(BODY.length)
}

const server = createServer((_req, res) => {
  res.writeHead(302, HEADERS)
  res.end(BODY)
})
server.keepAliveTimeout = 5_000

const port = Number(process.env.PORT ?? 8001)
server.listen(port, process.env.HOST ?? '127.0.0.1')
process.on('SIGTERM', () => server.close(() => process.exit(0)))
// Started by the bench runner with stdin as a pipe: when the runner dies, so do we.
if (!process.stdin.isTTY) process.stdin.on('close', () => process.exit(0)).resume()
