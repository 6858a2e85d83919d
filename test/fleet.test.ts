import { describe, expect, it, onTestFinished } from 'vitest'
import { FakeUpstream } from './support/fake-upstream.js'
import { PROBE_RECORDS } from './support/records.js'
import { startServer, workersListening } from './support/server-process.js'

// What one process of a host (WORKERS) tells the others, through the node:cluster primary: src/resolve/fleet.ts.

/** A GET on a connection of its own: the cluster hands each to the workers in turn. */
async function get (port: number, path: string): Promise<Response> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual', headers: { connection: 'close' } })
  await res.arrayBuffer()
  return res
}

describe('WORKERS=2: one host to the registry', () => {
  it('after the registry\'s 429 with Retry-After, no worker asks it again before that time: the others answer 503 with the time left', async () => {
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
