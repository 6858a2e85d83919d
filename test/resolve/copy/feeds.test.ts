import { gzipSync } from 'node:zlib'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFeedClient, FeedError } from '../../../src/resolve/copy/feeds.js'
import type { FeedClient, FeedClientOptions } from '../../../src/resolve/copy/feeds.js'
import { crossrefWork, FakeAgencyFeeds } from '../../support/fake-agency-feeds.js'

// The polite fetch of the agencies' update pages (plan-43 §1.12): one at a time, Retry-After honoured and
// capped, 429/5xx asked again a bounded number of times, every request timed out whole, bodies bounded.

const UA = 'doi-proxy/test (mailto:ops@example.org)'
let fake: FakeAgencyFeeds
let client: FeedClient | undefined

const works = Array.from({ length: 3 }, (_, i) => crossrefWork(`10.5555/w${i}`, `https://example.org/w${i}`, '2026-11-20T00:00:00Z'))
const pageUrl = (): string => `${fake.url}/works?filter=from-update-date:2026-11-01&rows=1000&cursor=*&mailto=ops%40example.org`

function start(opts: Partial<FeedClientOptions> = {}): FeedClient {
  client = createFeedClient({ userAgent: UA, timeoutMs: 2_000, retries: 2, baseDelayMs: 20, minIntervalMs: 0, ...opts })
  return client
}

beforeEach(async () => {
  fake = await FakeAgencyFeeds.start({ works })
})
afterEach(async () => {
  await client?.close()
  client = undefined
  await fake.close()
})

describe('the feed client', () => {
  it("sends the project's User-Agent and reads the page as JSON", async () => {
    const page = (await start().getJson(pageUrl())) as { message: { items: unknown[] } }
    expect(page.message.items).toHaveLength(3)
    expect(fake.seen[0]!.userAgent).toBe(UA)
    expect(fake.seen[0]!.mailto).toBe('ops@example.org')
  })

  it('asks one page at a time however many callers', async () => {
    fake.mode = { slowMs: 50 }
    const feeds = start()
    await Promise.all(Array.from({ length: 4 }, () => feeds.getJson(pageUrl())))
    expect(fake.seen).toHaveLength(4)
    expect(fake.peak).toBe(1)
  })

  it('leaves at least its interval between the starts of two requests', async () => {
    const feeds = start({ minIntervalMs: 300 })
    await Promise.all([feeds.getJson(pageUrl()), feeds.getJson(pageUrl()), feeds.getJson(pageUrl())])
    const gaps = fake.seen.slice(1).map((s, i) => s.at - fake.seen[i]!.at)
    expect(gaps.every((gap) => gap >= 290)).toBe(true)
  })

  it('waits the Retry-After of a 429 before asking again', async () => {
    fake.mode = { busy: 429, retryAfter: '1', times: 1 }
    await start().getJson(pageUrl())
    expect(fake.seen).toHaveLength(2)
    expect(fake.seen[1]!.at - fake.seen[0]!.at).toBeGreaterThanOrEqual(950)
  })

  it('caps a Retry-After of an hour at its longest wait', async () => {
    fake.mode = { busy: 503, retryAfter: '3600', times: 1 }
    const started = performance.now()
    await start({ maxPauseMs: 100 }).getJson(pageUrl())
    expect(fake.seen).toHaveLength(2)
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it('asks again after a 500, then gives up after its tries, saying so', async () => {
    fake.mode = { fail: 1 }
    await expect(start().getJson(pageUrl())).resolves.toBeDefined()
    fake.mode = { fail: Infinity }
    const err = (await start()
      .getJson(pageUrl())
      .catch((e: unknown) => e)) as FeedError
    expect(err).toBeInstanceOf(FeedError)
    expect(err.kind).toBe('unavailable')
    expect(err.message).toMatch(/gave no page after 3 tries: HTTP 500/)
  })

  it('does not ask again when refused (an expired cursor: HTTP 400)', async () => {
    fake.mode = { status: 400, times: 5 }
    const err = (await start()
      .getJson(pageUrl())
      .catch((e: unknown) => e)) as FeedError
    expect([err.kind, err.status]).toEqual(['refused', 400])
    expect(fake.seen).toHaveLength(1)
  })

  it('times out a page that does not come whole in REGISTRY_COPY_UPDATE_TIMEOUT_MS, and asks again', async () => {
    fake.mode = { slowMs: 5_000 }
    const started = performance.now()
    const err = (await start({ timeoutMs: 200, retries: 1 })
      .getJson(pageUrl())
      .catch((e: unknown) => e)) as FeedError
    expect(err.kind).toBe('unavailable')
    expect(err.message).toMatch(/no whole answer within 200 ms/)
    expect(fake.seen).toHaveLength(2)
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it('asks again for a body cut short', async () => {
    fake.mode = { truncated: 1 }
    await expect(start().getJson(pageUrl())).resolves.toBeDefined()
    expect(fake.seen).toHaveLength(2)
  })

  it('stops at once when interrupted, the request in flight cut', async () => {
    fake.mode = { slowMs: 5_000 }
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const started = performance.now()
    const err = (await start()
      .getJson(pageUrl(), controller.signal)
      .catch((e: unknown) => e)) as FeedError
    expect(err.kind).toBe('interrupted')
    expect(performance.now() - started).toBeLessThan(1_000)
  })
})

describe('answers it will not hold', () => {
  let server: ReturnType<typeof createServer>
  let url: string
  let answer: (res: import('node:http').ServerResponse) => void
  beforeEach(async () => {
    server = createServer((_req, res) => answer(res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/works`
  })
  afterEach(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  it('refuses a body larger than its bound', async () => {
    answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(`"${'x'.repeat(5000)}"`)
    const err = (await start({ maxBodyBytes: 1000 })
      .getJson(url)
      .catch((e: unknown) => e)) as FeedError
    expect([err.kind, err.message]).toEqual(['unreadable', `the answer of ${new URL(url).origin} is larger than 1000 bytes`])
  })

  it('refuses a gzip bomb: the bound holds for the decoded bytes', async () => {
    const bomb = gzipSync(Buffer.alloc(10_000_000, 0x20))
    answer = (res) => res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb)
    const err = (await start({ maxBodyBytes: 1_000_000 })
      .getJson(url)
      .catch((e: unknown) => e)) as FeedError
    expect(err.kind).toBe('unreadable')
  })

  it('reads a gzipped page', async () => {
    answer = (res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync('{"data":[]}'))
    await expect(start().getJson(url)).resolves.toEqual({ data: [] })
  })

  it('says a page that is not JSON is unreadable', async () => {
    answer = (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>')
    const err = (await start()
      .getJson(url)
      .catch((e: unknown) => e)) as FeedError
    expect([err.kind, err.message]).toEqual(['unreadable', `the answer of ${new URL(url).origin} is not JSON`])
  })
})
