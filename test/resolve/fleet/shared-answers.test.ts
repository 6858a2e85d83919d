import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { closeRedis, createRedisClient, waitConnected } from '../../../src/resolve/fleet/redis.js'
import type { RedisClient } from '../../../src/resolve/fleet/redis.js'
import { createSharedAnswers } from '../../../src/resolve/fleet/shared-answers.js'
import type { SharedAnswer, SharedAnswersOptions } from '../../../src/resolve/fleet/shared-answers.js'
import { TestRedis, useTestRedis } from '../../support/redis.js'

// Issue 41: a DOI's retraction and landing verdicts, shared by the replicas through one real redis-server,
// fetched once across them; Redis absent or failing is Redis without the answer.
const server = useTestRedis()
const clients: RedisClient[] = []

afterEach(async () => {
  await Promise.all(clients.splice(0).map(async (client) => await closeRedis(client, 500)))
})

/** One replica's connection, made as the app makes it (no offline queue, commands time out). */
async function replicaClient(url = server().url): Promise<RedisClient> {
  const client = createRedisClient({ topology: { kind: 'server', url }, commandTimeoutMs: 200, connectTimeoutMs: 500 })
  clients.push(client)
  await waitConnected(client, 2_000)
  return client
}

interface Verdict {
  verdict: string
}

const CODEC = {
  encode: (value: Verdict): string => JSON.stringify(value),
  decode: (text: string): Verdict | undefined => {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null && typeof (value as Verdict).verdict === 'string' ? (value as Verdict) : undefined
  }
}

function replica(redis: RedisClient | undefined, opts: Partial<SharedAnswersOptions<Verdict>> = {}) {
  return createSharedAnswers<Verdict>({ redis, prefix: 'doi-proxy:landing:1:', codec: CODEC, lockMs: 2_000, pollMs: 10, ...opts })
}

/** A fetch that counts its calls and answers after `ms`. */
function slowFetch(verdict: string, ms: number, ttlMs = 60_000) {
  const calls = { n: 0 }
  const fetch = async (): Promise<SharedAnswer<Verdict>> => {
    calls.n++
    await sleep(ms)
    return { value: { verdict }, ttlMs }
  }
  return { calls, fetch }
}

describe('answers shared by replicas', () => {
  it('two replicas asking for one DOI at once fetch it once: one fetches, the other reads its answer', async () => {
    const [a, b] = [replica(await replicaClient()), replica(await replicaClient())]
    const { calls, fetch } = slowFetch('alive', 150)
    const outcomes = await Promise.all([a.once('10.1/x', fetch), b.once('10.1/x', fetch)])
    expect(calls.n).toBe(1)
    expect(outcomes.map((o) => o.from).sort()).toEqual(['fetched', 'shared'])
    for (const outcome of outcomes) expect(outcome).toMatchObject({ value: { verdict: 'alive' } })
  })

  it('an answer is kept for its time: a later asker reads it with what is left of it, and does not fetch', async () => {
    const a = replica(await replicaClient())
    await a.once('10.1/x', slowFetch('dead', 0, 30_000).fetch)
    const later = slowFetch('alive', 0)
    const outcome = await replica(await replicaClient()).once('10.1/x', later.fetch)
    expect(later.calls.n).toBe(0)
    expect(outcome).toMatchObject({ from: 'shared', value: { verdict: 'dead' } })
    const ttlMs = outcome.from === 'gave-up' ? 0 : outcome.ttlMs
    expect(ttlMs).toBeGreaterThan(25_000)
    expect(ttlMs).toBeLessThanOrEqual(30_000)
    expect(await server().client().pttl('doi-proxy:landing:1:answer:10.1/x')).toBeGreaterThan(25_000)
  })

  it('get and put: an answer written is read back; one not kept (0 s) is never written', async () => {
    const a = replica(await replicaClient())
    await a.put('10.1/kept', { verdict: 'alive' }, 5_000)
    await a.put('10.1/not-kept', { verdict: 'alive' }, 0)
    expect(await a.get('10.1/kept')).toMatchObject({ value: { verdict: 'alive' } })
    expect(await a.get('10.1/not-kept')).toBeUndefined()
    expect(await server().client().exists('doi-proxy:landing:1:answer:10.1/not-kept')).toBe(0)
  })

  it('whatever else Redis holds under the key is no answer: the replica fetches its own', async () => {
    const admin = server().client()
    await admin.set('doi-proxy:landing:1:answer:10.1/x', '{"verdict": 7}', 'PX', 60_000)
    await admin.set('doi-proxy:landing:1:answer:10.1/y', 'x'.repeat(2_000), 'PX', 60_000)
    const a = replica(await replicaClient(), { maxChars: 1_000 })
    const { calls, fetch } = slowFetch('alive', 0)
    expect(await a.once('10.1/x', fetch)).toMatchObject({ from: 'fetched', value: { verdict: 'alive' } })
    expect(await a.once('10.1/y', fetch)).toMatchObject({ from: 'fetched' })
    expect(calls.n).toBe(2)
    admin.disconnect()
  })

  it("a waiting replica gives up when the lock's time is up, and never fetches a second time meanwhile", async () => {
    const [a, b] = [replica(await replicaClient(), { lockMs: 300 }), replica(await replicaClient(), { lockMs: 300 })]
    const holder = slowFetch('alive', 1_000)
    const waiter = slowFetch('dead', 0)
    const held = a.once('10.1/x', holder.fetch)
    await sleep(50)
    const started = performance.now()
    expect(await b.once('10.1/x', waiter.fetch)).toEqual({ from: 'gave-up' })
    expect(performance.now() - started).toBeLessThan(900)
    expect(waiter.calls.n).toBe(0)
    await held
  })

  it('a fetch that fails lets its lock go: the waiting replica stops waiting, the next asker fetches', async () => {
    const [a, b] = [replica(await replicaClient(), { lockMs: 5_000 }), replica(await replicaClient(), { lockMs: 5_000 })]
    const failing = a.once('10.1/x', async () => {
      await sleep(100)
      throw new Error('Crossref did not answer')
    })
    await sleep(20)
    const started = performance.now()
    const waiting = b.once('10.1/x', slowFetch('none', 0).fetch)
    await expect(failing).rejects.toThrow('Crossref did not answer')
    expect(await waiting).toEqual({ from: 'gave-up' })
    expect(performance.now() - started).toBeLessThan(2_000)
    const next = slowFetch('none', 0)
    expect(await b.once('10.1/x', next.fetch)).toMatchObject({ from: 'fetched' })
    expect(next.calls.n).toBe(1)
  })

  it("a fetch that outlives its lock does not take away the next holder's lock", async () => {
    const [a, b] = [replica(await replicaClient(), { lockMs: 100 }), replica(await replicaClient(), { lockMs: 5_000 })]
    const first = a.once('10.1/x', slowFetch('alive', 300, 0).fetch) // its lock expires after 100 ms
    await sleep(150)
    const second = b.once('10.1/x', slowFetch('alive', 500, 0).fetch) // takes the lock anew
    await first
    await sleep(50)
    expect(await server().client().exists('doi-proxy:landing:1:lock:10.1/x')).toBe(1)
    await second
    expect(await server().client().exists('doi-proxy:landing:1:lock:10.1/x')).toBe(0)
  })

  it('a reader who leaves stops waiting at once, with its reason', async () => {
    const [a, b] = [replica(await replicaClient()), replica(await replicaClient())]
    const held = a.once('10.1/x', slowFetch('alive', 500).fetch)
    await sleep(20)
    const left = new AbortController()
    const waiting = b.once('10.1/x', slowFetch('dead', 0).fetch, left.signal)
    await sleep(50)
    left.abort(new Error('the reader left'))
    await expect(waiting).rejects.toThrow('the reader left')
    await held
  })
})

describe('without Redis', () => {
  it('no Redis configured: each asker fetches', async () => {
    const alone = replica(undefined)
    const { calls, fetch } = slowFetch('alive', 0)
    expect(await alone.once('10.1/x', fetch)).toMatchObject({ from: 'fetched' })
    expect(await alone.once('10.1/x', fetch)).toMatchObject({ from: 'fetched' })
    expect(await alone.get('10.1/x')).toBeUndefined()
    expect(calls.n).toBe(2)
  })

  it('Redis stopped: the replica fetches at once, waiting for no one', async () => {
    const down = await TestRedis.start()
    const client = await replicaClient(down.url)
    await down.kill()
    await sleep(50)
    const a = replica(client, { lockMs: 5_000 })
    const { calls, fetch } = slowFetch('alive', 0)
    const started = performance.now()
    expect(await a.once('10.1/x', fetch)).toMatchObject({ from: 'fetched', value: { verdict: 'alive' } })
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(calls.n).toBe(1)
    await down.close()
  })

  it('Redis stopping while a replica waits: it fetches itself rather than waiting out the lock', async () => {
    const down = await TestRedis.start()
    const [a, b] = [replica(await replicaClient(down.url), { lockMs: 10_000 }), replica(await replicaClient(down.url), { lockMs: 10_000 })]
    const held = a.once('10.1/x', slowFetch('alive', 1_200).fetch)
    await sleep(50)
    const own = slowFetch('dead', 0)
    const waiting = b.once('10.1/x', own.fetch)
    await sleep(50)
    await down.kill()
    const started = performance.now()
    expect(await waiting).toMatchObject({ from: 'fetched', value: { verdict: 'dead' } })
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(own.calls.n).toBe(1)
    await held
    await down.close()
  })
})
