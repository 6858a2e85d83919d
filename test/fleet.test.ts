import { describe, expect, it, onTestFinished } from 'vitest'
import { FakeUpstream } from './support/fake-upstream.js'
import { PROBE_RECORDS, admin, str } from './support/records.js'
import { startServer, workersListening } from './support/server-process.js'

// What one process of a host (WORKERS) tells the others, through the node:cluster primary: src/resolve/fleet/messages.ts.

/** A GET on a connection of its own: the cluster hands each to the workers in turn. */
async function get(port: number, path: string): Promise<Response> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual', headers: { connection: 'close' } })
  await res.arrayBuffer()
  return res
}

describe('WORKERS=2: one host to the registry', () => {
  it("after the registry's 429 with Retry-After, no worker asks it again before that time: the others answer 503 with the time left", async () => {
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { port, output } = await startServer({ UPSTREAM_URL: upstream.url, WORKERS: '2', UPSTREAM_RETRIES: '0' })
    await workersListening({ output }, 2)
    // Each worker's probe of the upstream at start: both done before the registry starts refusing.
    for (let i = 0; i < 600 && upstream.count('0.NA/10') < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    upstream.mode = { kind: 'status', status: 429, headers: { 'retry-after': '30' } }
    expect((await get(port, '/10.5555/first')).status).toBe(503)
    const asked = upstream.seen.length
    // The worker that was told passes it on through the primary: a message, not a request, so a moment.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const answers = []
    for (let i = 0; i < 6; i++) answers.push(await get(port, `/10.5555/other-${i}`))
    expect(answers.map((res) => res.status)).toEqual(Array(6).fill(503))
    for (const res of answers) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(20)
    expect(upstream.seen.length).toBe(asked)
  }, 45_000)
})

describe('WORKERS=2 without Redis: a purge reaches every worker', () => {
  it('DELETE /api/cache/{doi} on one worker drops the DOI\'s cached "not found" on the other too', async () => {
    const token = 'c'.repeat(40)
    const upstream = await FakeUpstream.start(PROBE_RECORDS)
    onTestFinished(() => upstream.close())
    const { port, output } = await startServer({
      UPSTREAM_URL: upstream.url,
      WORKERS: '2',
      ADMIN_TOKEN: token,
      NEGATIVE_TTL_SECONDS: '3600'
    })
    await workersListening({ output }, 2)
    // Each worker asks once, then keeps its "not found".
    for (let i = 0; i < 6; i++) expect((await get(port, '/10.5555/new')).status).toBe(404)
    expect(upstream.count('10.5555/new')).toBe(2)
    upstream.set('10.5555/new', [admin(), str(1, 'URL', 'http://example.org/new')])
    const res = await fetch(`http://127.0.0.1:${port}/api/cache/10.5555/new`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}`, connection: 'close' }
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ redis: 'none', told: 'host' })
    // The other worker is told through the primary: until then it may still answer 404. Then both find it.
    const allFound = async (): Promise<boolean> => {
      for (let i = 0; i < 4; i++) if ((await get(port, '/10.5555/new')).status !== 302) return false
      return true
    }
    let found = false
    for (let i = 0; i < 100 && !found; i++) found = await allFound()
    expect(found).toBe(true)
  }, 45_000)
})
