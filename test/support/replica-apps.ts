import { onTestFinished } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { AppDeps } from '../../src/app.js'
import type { Config } from '../../src/config/schema.js'
import { testConfig } from './app.js'
import { FakeUpstream } from './fake-upstream.js'
import { PROBE_RECORDS, admin, str } from './records.js'
import type { HandleValue } from '../../src/handle/types.js'

/** The probe records and `10.5555/topo-0` … `topo-59`, each redirecting to http://example.org/topo-<n>. */
export const TOPOLOGY_RECORDS: Record<string, HandleValue[]> = { ...PROBE_RECORDS }
for (let i = 0; i < 60; i++) TOPOLOGY_RECORDS[`10.5555/topo-${i}`] = [admin(), str(1, 'URL', `http://example.org/topo-${i}`)]

/** A fake upstream with TOPOLOGY_RECORDS, closed when the test ends. */
export async function topologyUpstream(): Promise<FakeUpstream> {
  const upstream = await FakeUpstream.start(TOPOLOGY_RECORDS)
  onTestFinished(() => upstream.close())
  return upstream
}

/** One replica: a whole app on the shared upstream, with the Redis settings in `overrides`; closed when the test ends. */
export async function replicaApp(upstream: FakeUpstream, overrides: Partial<Config>, deps: AppDeps = {}): Promise<FastifyInstance> {
  const config = testConfig(upstream.url, {
    upstreamRetries: 0,
    // These tests are about Redis: a busy test machine's slow Redis replies (over the default 100 ms under
    // load) must not count as timeouts; a test of timeouts sets its own. (testConfig sheds no load either.)
    redisCommandTimeoutMs: 1000,
    ...overrides
  })
  const app = await buildApp(config, deps)
  await app.ready()
  onTestFinished(async () => {
    await app.close()
  })
  return app
}

export async function metric(app: FastifyInstance, pattern: RegExp): Promise<number> {
  const m = pattern.exec((await app.inject({ url: '/metrics' })).body)
  return m === null ? 0 : Number(m[1])
}

export const sharedUp = async (app: FastifyInstance): Promise<boolean> => (await metric(app, /^doi_proxy_shared_cache_up (\d+)/m)) === 1

export async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the condition never held')
}
