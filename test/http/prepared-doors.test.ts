import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../src/config/schema.js'
import type { HandleValue } from '../../src/handle/types.js'
import { setup } from '../support/app.js'
import { PROBE_RECORDS, admin, str } from '../support/records.js'

// A prepared answer reaches a reader through one of two doors (src/http/prepared-answers.ts): the route,
// which renders and keeps it, or the raw listener, which writes what was kept. Whatever decides the answer
// (Accept, Accept-Language, User-Agent, Host, the REST API, a query string, a local service) must give the
// same answer through either door. Over real HTTP: the listener's door is not reached by app.inject.

const NOW = Date.parse('2026-11-25T07:26:02.500Z')

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'

const RECORDS: Record<string, HandleValue[]> = {
  ...PROBE_RECORDS,
  '10.7000': [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/TEST</locs></HS_NAMESPACE>')],
  '10.SERV/TEST': [
    admin(),
    str(1, '10320/loc', '<locations><location weight="0" http_role="conneg" href_template="https://data.example/{hdl}"/></locations>')
  ],
  '10.7000/article': [admin(), str(1, 'URL', 'https://publisher.example/article')]
}

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

async function listening(
  overrides: Partial<Config> = {}
): Promise<{ app: FastifyInstance; ask: (path: string, headers?: Record<string, string>, method?: 'GET' | 'HEAD') => Promise<Answer> }> {
  // A fixed clock: the Expires of two answers a moment apart would differ by a second across a second's boundary.
  const { app } = await setup({ overrides, records: RECORDS, deps: { now: () => NOW } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const ask = async (path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<Answer> => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { method, headers })
    const body = await res.body.text()
    const { date: _date, 'keep-alive': _keepAlive, connection: _connection, ...rest } = res.headers
    return { status: res.statusCode, headers: rest, body }
  }
  return { app, ask }
}

async function preparedServed(app: FastifyInstance): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith('doi_proxy_prepared_answers_total '))
  return Number(line?.split(' ')[1] ?? 0)
}

/** Ask three times: the first may fetch, the second is the route's cached answer (kept), the third the listener's. */
async function throughBothDoors(
  app: FastifyInstance,
  ask: (path: string, headers?: Record<string, string>, method?: 'GET' | 'HEAD') => Promise<Answer>,
  path: string,
  headers: Record<string, string>,
  method: 'GET' | 'HEAD' = 'GET'
): Promise<{ route: Answer; listener: Answer; served: number }> {
  await ask(path, headers, method)
  const route = await ask(path, headers, method)
  const before = await preparedServed(app)
  const listener = await ask(path, headers, method)
  return { route, listener, served: (await preparedServed(app)) - before }
}

const VARIANTS: Array<{ name: string; path: string; headers: Record<string, string>; method?: 'HEAD' }> = [
  { name: 'a tool with no headers', path: '/10.5555/plain', headers: {} },
  {
    name: 'a browser',
    path: '/10.5555/plain',
    headers: { 'user-agent': FIREFOX, accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' }
  },
  { name: 'a BibTeX client (content negotiation)', path: '/10.7000/article', headers: { accept: 'application/x-bibtex' } },
  { name: 'a reader with a language', path: '/10.5555/plain', headers: { 'accept-language': 'fr-CH, fr;q=0.9' } },
  { name: 'a page in another origin (CORS)', path: '/10.5555/plain', headers: { origin: 'https://app.example' } },
  { name: 'a reader with a cookie', path: '/10.5555/plain', headers: { cookie: 'session=abc' } },
  { name: 'HEAD', path: '/10.5555/plain', headers: {}, method: 'HEAD' },
  { name: 'the not-found page', path: '/10.5555/nothing-here', headers: {} },
  { name: 'the not-found page on another Host', path: '/10.5555/nothing-here', headers: { host: 'doi.library.example' } },
  { name: 'the values page (nothing to redirect to)', path: '/10.5555/novalues', headers: {} },
  { name: 'the REST API', path: '/api/handles/10.5555/plain', headers: {} },
  { name: 'the REST API from another origin', path: '/api/handles/10.5555/plain', headers: { origin: 'https://app.example' } }
]

describe('either door gives the same answer', () => {
  for (const variant of VARIANTS) {
    it(`${variant.name}: the listener's answer is the route's, byte for byte`, async () => {
      const { app, ask } = await listening()
      const { route, listener, served } = await throughBothDoors(app, ask, variant.path, variant.headers, variant.method)
      expect(served).toBe(1)
      expect(listener).toEqual(route)
    })
  }

  it('two Hosts keep two not-found pages, each linking to its own host', async () => {
    const { app, ask } = await listening()
    const a = await throughBothDoors(app, ask, '/10.5555/nothing-here', { host: 'a.example' })
    const b = await throughBothDoors(app, ask, '/10.5555/nothing-here', { host: 'b.example' })
    expect(a.served + b.served).toBe(2)
    expect(a.listener.body).toContain('http://a.example/')
    expect(b.listener.body).toContain('http://b.example/')
    expect(b.listener.body).not.toContain('a.example')
  })

  it('a query string is answered by the route every time, the same as before', async () => {
    const { app, ask } = await listening()
    const { route, listener, served } = await throughBothDoors(app, ask, '/10.5555/plain?noredirect', {})
    expect(served).toBe(0)
    expect(listener).toEqual(route)
  })

  it("with a local service, every answer is the route's: who asks decides it", async () => {
    const campus = { id: 'sfx', name: 'Library', url: 'https://sfx.example.edu/?id=doi:{doi}', networks: ['127.0.0.0/8'], prefixes: [] }
    const { app, ask } = await listening({ localServices: [campus] })
    const browser = { 'user-agent': FIREFOX, accept: 'text/html' }
    expect((await ask('/10.5555/plain', browser)).headers.location).toBe('https://sfx.example.edu/?id=doi:10.5555%2Fplain')
    // Asked again within 10 s, the loop guard keeps the publisher's URL: still decided per reader, never kept.
    const { listener, served } = await throughBothDoors(app, ask, '/10.5555/plain', browser)
    expect(served).toBe(0)
    expect(listener.headers['cache-control']).toBe('private')
  })

  it("behind a trusted proxy, a page is the route's (it reads X-Forwarded-Host), a redirect may be the listener's", async () => {
    const { app, ask } = await listening({ trustProxy: true })
    const page = await throughBothDoors(app, ask, '/10.5555/nothing-here', { 'x-forwarded-host': 'doi.library.example' })
    expect(page.served).toBe(0)
    expect(page.listener.body).toContain('http://doi.library.example/')
    const redirect = await throughBothDoors(app, ask, '/10.5555/plain', {})
    expect(redirect.served).toBe(1)
    expect(redirect.listener).toEqual(redirect.route)
  })
})
