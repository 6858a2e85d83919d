import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { FastifyInstance, LightMyRequestResponse as InjectResponse } from 'fastify'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'

// Issue 27: every example of the README's quick start is true on a machine without network, as a
// newcomer meets them: the defaults (the sample records, doi.org as the upstream) with the upstream
// unreachable, once as a host name that does not resolve and once as a refused connection.

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const QUICK_START = README.slice(README.indexOf('## Quick start'), README.indexOf('## Tests'))

/** The "Also try" table: each row's requests (the backticked paths of its first cell) and what it promises. */
function exampleRows(): Array<{ paths: string[]; answer: string; cell: string }> {
  return QUICK_START.split('\n')
    .filter((line) => /^\| `\//.test(line))
    .map((line) => {
      const [cell = '', answer = ''] = line.slice(1).split(' | ')
      return { paths: [...cell.matchAll(/`(\/[^`]*)`/g)].map((m) => m[1] ?? ''), answer, cell }
    })
}

/** What each request of the table must answer with no network; a row added without a check here fails. */
const CHECKS: Record<string, (res: InjectResponse) => void> = {
  '/': (res) => {
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('<form')
  },
  '/10.5555/sample?noredirect': (res) => {
    expect(res.statusCode).toBe(200)
    for (const column of ['Index', 'Type', 'Timestamp', 'Data']) expect(res.body).toContain(column)
  },
  '/10.5555/sample-alias': (res) => {
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toMatch(/\/10\.5555\/sample$/)
  },
  // Not a sample, so asked upstream: with no network, the page says why and how to run offline.
  '/10.5555/does-not-exist': (res) => {
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('We could not reach the DOI registry')
    expect(res.body).toContain('npm run start:offline')
    expect(res.body).not.toContain('usually brief')
  },
  '/api/handles/10.5555/sample?pretty': (res) => {
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(res.body)).toMatchObject({ responseCode: 1, handle: '10.5555/sample' })
  },
  '/doiRA/10.5555/sample': (res) => {
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(res.body)).toEqual([{ DOI: '10.5555/sample', RA: 'Crossref' }])
  },
  '/10.5072/sample-dataset': (res) => {
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/x-bibtex/)
    expect(res.body).toMatch(/^@/)
  },
  '/openurl?rft_id=info:doi/10.5555/sample': (res) => {
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://www.doi.org/')
  },
  '/settings': (res) => {
    expect(res.statusCode).toBe(200)
  },
  '/api/openapi.json': (res) => {
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(res.body)).toHaveProperty('openapi')
  },
  // Ready while cached and local answers can be given (docs/operations.md): an outage upstream is no reason to restart.
  '/healthz': (res) => {
    expect(res.statusCode).toBe(200)
  },
  '/readyz': (res) => {
    expect(res.statusCode).toBe(200)
  },
  '/metrics': (res) => {
    expect(res.statusCode).toBe(200)
  },
  '/status': (res) => {
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('The registry cannot be reached')
  },
  '/status.json': (res) => {
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(res.body)).toMatchObject({ upstream: { reachability: { state: 'unreachable' } } })
  },
  // The quick start watches nothing: the health pages say how to turn them on.
  '/health': (res) => {
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('HEALTH_WATCH')
  },
  '/health.json': (res) => {
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('HEALTH_WATCH')
  },
  '/health.csv': (res) => {
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('HEALTH_WATCH')
  }
}

/** Headers a row names besides its path (`with Accept: …`). */
function headersOf(cell: string): Record<string, string> {
  const accept = /with `Accept: ([^`]+)`/.exec(cell)?.[1]
  return accept === undefined ? {} : { accept }
}

/** A loopback port nothing listens on: connecting to it is refused. */
async function refusedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** The app as `npm start` builds it (README defaults), with the given upstream and no cache file. */
async function newcomerApp(upstreamUrl: string, offline = false): Promise<FastifyInstance> {
  // Load shedding is off: it answers to this machine's load (busy while the suite runs), not to the examples.
  const app = await buildApp({ ...buildConfig(undefined, {}), upstreamUrl, offline, cacheFile: undefined, maxEventLoopDelayMs: 0 })
  await app.ready()
  onTestFinished(async () => {
    await app.close()
  })
  // A newcomer's first request, which finds whether the upstream answers (a listening server's start-up probe would).
  await app.inject({ url: '/10.5555/does-not-exist' })
  return app
}

const NO_NETWORK: Array<[string, () => Promise<string>]> = [
  ['a host name that does not resolve', async () => 'http://doi-proxy-test.invalid/api/handles'],
  ['a refused connection', async () => `http://127.0.0.1:${await refusedPort()}/api/handles`]
]

describe("the README's quick start, on a machine without network", () => {
  it('has the examples this test checks, and a check for each', () => {
    const paths = exampleRows().flatMap((row) => row.paths)
    expect(paths.length).toBeGreaterThan(10)
    expect(paths.filter((p) => CHECKS[p] === undefined)).toEqual([])
  })

  it.each(NO_NETWORK)('with %s, every example answers as the README says', async (_name, upstream) => {
    const app = await newcomerApp(await upstream())
    for (const row of exampleRows()) {
      for (const path of row.paths) {
        const res = await app.inject({ url: path, headers: headersOf(row.cell) })
        try {
          CHECKS[path]?.(res)
        } catch (err) {
          throw new Error(`README example ${path}: ${(err as Error).message}`)
        }
      }
    }
  })

  it.each(NO_NETWORK)('with %s, the curl example answers exactly the status and headers shown', async (_name, upstream) => {
    const app = await newcomerApp(await upstream())
    const block = /```console\n\$ curl -i http:\/\/127\.0\.0\.1:8000(\S+)\n([^]*?)```/.exec(QUICK_START)
    expect(block).not.toBeNull()
    const [, path = '', transcript = ''] = block ?? []
    const [statusLine = '', ...headerLines] = transcript.split('\n\n')[0]?.split('\n') ?? []
    const res = await app.inject({ url: path })
    expect(`HTTP/1.1 ${res.statusCode} ${res.statusMessage}`).toBe(statusLine)
    for (const line of headerLines) {
      const [name = '', value = ''] = line.split(/: (.*)/)
      if (name === 'expires') continue // a date: only its presence is promised
      expect(res.headers[name], name).toBe(value)
    }
    expect(res.headers.expires).toBeDefined()
  })

  it('the README says what the offline mode answers instead: the sample records, and 404 for the rest', async () => {
    expect(QUICK_START).toContain('npm run start:offline')
    const app = await newcomerApp('http://doi-proxy-test.invalid/api/handles', true)
    const res = await app.inject({ url: '/10.5555/does-not-exist' })
    expect(res.statusCode).toBe(404)
    expect(QUICK_START).toContain("not in this resolver's local records")
    expect(res.body).toContain('DOI Not in This Resolver&#39;s Local Records')
    expect((await app.inject({ url: '/10.5555/sample' })).statusCode).toBe(302)
  })
})
