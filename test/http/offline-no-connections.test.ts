import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { InjectOptions } from 'fastify'
import { pino } from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { buildApp } from '../../src/app.js'
import { buildConfig } from '../../src/config/schema.js'
import type { Config } from '../../src/config/schema.js'
import { admin, str } from '../support/records.js'

// Issue 45 item 2: OFFLINE=true opens no connection, whatever else is configured. Every outbound setting
// (the upstream, the open-access provider, the metadata agencies, RECORD_TO) points at one real server on
// 127.0.0.1 that counts the connections made to it, and every connection the process begins anywhere is
// counted too (node's net and undici's diagnostics channels), while each kind of request is asked.

/** A real HTTP server that counts connections and the paths asked; it answers 404 to everything. */
async function socketCounter(): Promise<{
  origin: string
  host: string
  connections: () => number
  paths: string[]
  close: () => Promise<void>
}> {
  let connections = 0
  const paths: string[] = []
  const sockets = new Set<Socket>()
  const server = createServer((req, res) => {
    paths.push(req.url ?? '')
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"responseCode":100,"handle":"x"}')
  })
  server.on('connection', (socket: Socket) => {
    connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    connections: () => connections,
    paths,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

/** Every client connection this process begins, to any address: node's net sockets and undici's connects. */
function countOutgoing(): { count: () => number; stop: () => void } {
  let count = 0
  const seen = (): void => {
    count++
  }
  const channels = ['net.client.socket', 'undici:client:beforeConnect']
  for (const name of channels) subscribe(name, seen)
  return {
    count: () => count,
    stop: () => {
      for (const name of channels) unsubscribe(name, seen)
    }
  }
}

const HOME = '203.0.113.9'

/** A local store whose held DOI has a content-negotiation location on the counter, and its prefix record. */
async function localStore(counter: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'offline-store-'))
  onTestFinished(async () => {
    await rm(dir, { recursive: true, force: true })
  })
  const loc = `<locations><location id="1" href="https://publisher.example/held" weight="1" /><location id="conneg" weight="0" http_role="conneg" href_template="${counter}/meta/{hdl}" /></locations>`
  const lines = [
    { handle: '10.5555', values: [admin(), str(1, 'HS_SERV', '10.SERV/CROSSREF')] },
    { handle: '10.5555/held', values: [admin(), str(1, 'URL', 'https://publisher.example/held'), str(2, '10320/loc', loc)] }
  ]
  await writeFile(join(dir, 'held.ndjson'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  return dir
}

/** Every outbound setting on, each pointing at the counter. */
async function everyOutboundSetting(
  counter: { origin: string; host: string },
  provider: 'unpaywall' | 'openalex',
  offline: boolean
): Promise<Config> {
  const recordTo = await mkdtemp(join(tmpdir(), 'offline-record-'))
  onTestFinished(async () => {
    await rm(recordTo, { recursive: true, force: true })
  })
  return {
    ...buildConfig(undefined, {}),
    offline,
    upstreamUrl: `${counter.origin}/api/handles`,
    upstreamRetries: 0,
    cacheFile: undefined,
    maxEventLoopDelayMs: 0,
    localStoreDir: await localStore(counter.origin),
    recordTo,
    contactEmail: 'library@example.edu',
    metadataMode: 'fetch',
    metadataHosts: [counter.host],
    oaProvider: provider,
    unpaywallUrl: `${counter.origin}/v2`,
    unpaywallEmail: 'library@example.edu',
    openalexUrl: counter.origin,
    oaBudgetMs: 2000,
    localServices: [
      { id: 'anywhere', name: 'Open access first', networks: ['0.0.0.0/0', '::/0'], prefixes: [], linkout: ['open-access', 'registered'] }
    ]
  }
}

/** Each kind of request, for the held DOI and for one not held: redirect, REST API, negotiation, open access, batch, Which RA?, OpenURL. */
async function askEverything(app: Awaited<ReturnType<typeof buildApp>>): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {}
  const ask = async (name: string, opts: InjectOptions): Promise<void> => {
    statuses[name] = (await app.inject(opts)).statusCode
  }
  await ask('redirect, with the open-access step', { url: '/10.5555/held', remoteAddress: HOME })
  await ask('redirect, not held', { url: '/10.5555/missing', remoteAddress: HOME })
  await ask('REST API', { url: '/api/handles/10.5555/held' })
  await ask('REST API, not held', { url: '/api/handles/10.5555/missing' })
  await ask('metadata negotiation', { url: '/10.5555/held', headers: { accept: 'application/vnd.citationstyles.csl+json' } })
  await ask('batch', {
    method: 'POST',
    url: '/api/batch',
    headers: { 'content-type': 'text/plain' },
    payload: '10.5555/held\n10.5555/missing\n10.6666/other\n'
  })
  await ask('Which RA?', { url: '/doiRA/10.5555/held,10.5555/missing,10.6666/other' })
  await ask('OpenURL', { url: '/openurl?id=doi:10.5555/held', remoteAddress: HOME })
  await ask('OpenURL, not held', { url: '/openurl?rft_id=info:doi/10.5555/missing', remoteAddress: HOME })
  return statuses
}

async function run(provider: 'unpaywall' | 'openalex', offline: boolean) {
  const counter = await socketCounter()
  onTestFinished(counter.close)
  const outgoing = countOutgoing()
  onTestFinished(outgoing.stop)
  const logs: Array<{ msg: string }> = []
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        logs.push(JSON.parse(line) as { msg: string })
      }
    }
  )
  const app = await buildApp(await everyOutboundSetting(counter, provider, offline), { logger })
  // Listening too: an online server asks the upstream once as it starts.
  await app.listen({ port: 0, host: '127.0.0.1' })
  let closed = false
  onTestFinished(async () => {
    if (!closed) await app.close()
  })
  const statuses = await askEverything(app)
  const openAccessShown = (JSON.parse((await app.inject('/status.json')).body) as { openAccess: unknown }).openAccess
  // What is begun in the background (a refresh, an open-access answer past its budget) is begun by now.
  await new Promise((resolve) => setTimeout(resolve, 300))
  await app.close()
  closed = true
  return {
    statuses,
    connections: counter.connections(),
    paths: counter.paths,
    outgoing: outgoing.count(),
    logs: logs.map((l) => l.msg),
    openAccessShown
  }
}

describe('OFFLINE=true opens no connection, whatever else is configured', { timeout: 30_000 }, () => {
  it.each(['unpaywall', 'openalex'] as const)(
    'with OA_PROVIDER=%s, METADATA_MODE=fetch and RECORD_TO, every kind of request is answered and no socket is opened',
    async (provider) => {
      const { statuses, connections, paths, outgoing, logs, openAccessShown } = await run(provider, true)
      expect(statuses).toMatchObject({
        'redirect, with the open-access step': 302,
        'REST API': 200,
        'metadata negotiation': 302,
        batch: 200,
        'Which RA?': 200,
        OpenURL: 302
      })
      expect({ connections, paths, outgoing }).toEqual({ connections: 0, paths: [], outgoing: 0 })
      // The operator is told once why the open-access step is skipped, and /status shows no provider.
      expect(logs.filter((m) => m.startsWith('offline (OFFLINE=true): the open-access provider is not asked'))).toHaveLength(1)
      expect(openAccessShown).toBeNull()
    }
  )

  it('the same settings online do reach the counter: the upstream, the provider and the agency (so the test above can see a connection)', async () => {
    const { connections, paths, outgoing } = await run('unpaywall', false)
    expect(connections).toBeGreaterThan(0)
    expect(outgoing).toBeGreaterThan(0)
    expect(paths.some((p) => p.startsWith('/api/handles/'))).toBe(true)
    expect(paths.some((p) => p.startsWith('/v2/10.5555'))).toBe(true)
    expect(paths.some((p) => p.startsWith('/meta/'))).toBe(true)
  })
})
