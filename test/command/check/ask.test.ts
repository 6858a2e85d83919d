import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { askAll, AskError, httpAsker, injectAsker, keyOf } from '../../../src/command/check/ask.js'

interface Seen {
  url: string
  type: string
  body: string
}

/** A batch API on 127.0.0.1 answering NDJSON as a verifying doi-proxy does (issue 41's objects), a heartbeat first. */
async function batchServer(
  answer: (line: unknown) => unknown,
  opts: { heartbeat?: boolean } = {}
): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => (body += c))
    req.on('end', () => {
      seen.push({ url: req.url ?? '', type: req.headers['content-type'] ?? '', body })
      const lines: unknown[] = req.headers['content-type']?.startsWith('application/json')
        ? (JSON.parse(body) as unknown[])
        : body.split('\n')
      res.writeHead(200, { 'content-type': 'application/x-ndjson' })
      if (opts.heartbeat === true) res.write('\n')
      for (const line of lines) res.write(JSON.stringify(answer(line)) + '\n' + (opts.heartbeat === true ? '\n' : ''))
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server }
}

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map(async (s) => await new Promise((resolve) => s.close(resolve))))
})

const doiOf = (line: unknown): string => (typeof line === 'string' ? line : (line as { doi: string }).doi)
const VERIFIED = {
  metadata: {
    verdict: 'mismatch',
    mismatches: [{ field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' }],
    kind: 'other-work'
  },
  retraction: { verdict: 'retracted', notice: '10.5555/notice', date: '2021-03-04' },
  landing: { verdict: 'dead', status: 404, url: 'https://journal.test/a/1', evidence: 'HTTP 404' }
}
const registered = (line: unknown): object => ({
  input: doiOf(line),
  registered: true,
  doi: doiOf(line),
  url: 'https://journal.test/a/1',
  status: 302,
  ...VERIFIED
})
const noProgress = (): void => {}

describe('asking a doi-proxy to verify (POST /api/batch?verify=)', () => {
  it('without --verify, sends the DOIs as text, a DOI a line, with no query, as before', async () => {
    const { url, seen } = await batchServer((line) => ({ input: line, registered: true, doi: line, url: null, status: 302 }))
    await askAll([{ doi: '10.5555/a', cited: { title: 'ignored without levels' } }, '10.5555/b%'], httpAsker(url), noProgress)
    expect(seen).toEqual([{ url: '/api/batch', type: 'text/plain; charset=utf-8', body: '10.5555/a\n10.5555/b%25' }])
  })

  it('sends ?verify=LEVELS and JSON objects {doi, title, year, author}; a DOI cited without a title as a string', async () => {
    const { url, seen } = await batchServer(registered)
    await askAll(
      [
        { doi: '10.5555/a', cited: { title: 'Deep nets for cats', year: 2020, author: 'Smith, Anna' } },
        { doi: '10.5555/b', cited: { author: 'X' } },
        '10.5555/c'
      ],
      httpAsker(url, ['metadata', 'landing']),
      noProgress
    )
    expect(seen).toHaveLength(1)
    expect(seen[0]!.url).toBe('/api/batch?verify=metadata,landing')
    expect(seen[0]!.type).toBe('application/json; charset=utf-8')
    expect(JSON.parse(seen[0]!.body)).toEqual([
      { doi: '10.5555/a', title: 'Deep nets for cats', year: 2020, author: 'Smith, Anna' },
      '10.5555/b',
      '10.5555/c'
    ])
  })

  it("reads the three objects exactly as the issue names them, skipping the server's heartbeat lines", async () => {
    const { url } = await batchServer(registered, { heartbeat: true })
    const verdicts = await askAll(
      [{ doi: '10.5555/a', cited: { title: 'Deep nets for cats' } }],
      httpAsker(url, ['metadata', 'retraction', 'landing']),
      noProgress
    )
    expect(verdicts.get(keyOf({ doi: '10.5555/a', cited: { title: 'Deep nets for cats' } }))).toEqual({
      registered: true,
      doi: '10.5555/a',
      url: 'https://journal.test/a/1',
      status: 302,
      ...VERIFIED
    })
  })

  it('asks once per DOI and work cited: the same DOI under two titles is two lines, the same title twice one', async () => {
    const { url, seen } = await batchServer(registered)
    const a = { doi: '10.5555/A', cited: { title: 'One' } }
    const verdicts = await askAll(
      [a, { doi: '10.5555/a', cited: { title: 'One' } }, { doi: '10.5555/a', cited: { title: 'Two' } }],
      httpAsker(url, ['metadata']),
      noProgress
    )
    expect((JSON.parse(seen[0]!.body) as Array<{ title: string }>).map((l) => l.title)).toEqual(['One', 'Two'])
    expect(verdicts.size).toBe(2)
  })

  it('an older doi-proxy, whose registered lines carry no "metadata", is an error saying it does not verify', async () => {
    const { url } = await batchServer((line) => ({ input: doiOf(line), registered: true, doi: doiOf(line), url: null, status: 302 }))
    await expect(askAll(['10.5555/a'], httpAsker(url, ['metadata']), noProgress)).rejects.toThrow(
      new AskError(`doi-proxy at ${url} does not verify (its answers carry no "metadata"): update it, or check with --upstream`)
    )
  })

  it('a line not registered carries no objects and needs none', async () => {
    const { url } = await batchServer((line) => ({ input: doiOf(line), registered: false, doi: null, url: null, status: 404 }))
    const verdicts = await askAll(['10.5555/a'], httpAsker(url, ['metadata']), noProgress)
    expect(verdicts.get(keyOf('10.5555/a'))).toEqual({ registered: false, doi: null, url: null, status: 404 })
  })

  it.each([
    ['a verdict it does not know', { ...VERIFIED, landing: { ...VERIFIED.landing, verdict: 'gone' } }, 'answered a "landing" object'],
    [
      'a mismatch without values',
      { ...VERIFIED, metadata: { verdict: 'mismatch', mismatches: [{ field: 'title' }] } },
      'answered a "metadata" object'
    ],
    ['a status that is not one', { ...VERIFIED, landing: { ...VERIFIED.landing, status: 'x' } }, 'answered a "landing" object']
  ])('a hostile or broken server: %s is an error, never a crash', async (_name, objects, message) => {
    const { url } = await batchServer((line) => ({
      input: doiOf(line),
      registered: true,
      doi: doiOf(line),
      url: null,
      status: 302,
      ...objects
    }))
    await expect(askAll(['10.5555/a'], httpAsker(url, ['metadata', 'retraction', 'landing']), noProgress)).rejects.toThrow(message)
  })

  it('a line that is not JSON is an error naming it', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' })
      res.end('{"input": "10.5555/a", \n')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    await expect(askAll(['10.5555/a'], httpAsker(url), noProgress)).rejects.toThrow('answered a line that is not JSON')
  })

  it('--upstream (inject) sends the same request to the app in this process', async () => {
    const app = Fastify()
    const seen: Array<{ url: string; body: unknown }> = []
    app.post('/api/batch', async (request, reply) => {
      seen.push({ url: request.url, body: request.body })
      const lines = request.body as unknown[]
      return await reply.type('application/x-ndjson').send(lines.map((l) => JSON.stringify(registered(l)) + '\n\n').join(''))
    })
    const verdicts = await askAll([{ doi: '10.5555/a', cited: { title: 'T', year: 2001 } }], injectAsker(app, ['retraction']), noProgress)
    expect(seen).toEqual([{ url: '/api/batch?verify=retraction', body: [{ doi: '10.5555/a', title: 'T', year: 2001 }] }])
    expect([...verdicts.values()][0]).toEqual({
      registered: true,
      doi: '10.5555/a',
      url: 'https://journal.test/a/1',
      status: 302,
      retraction: VERIFIED.retraction
    })
    await app.close()
  })
})
