import { onTestFinished } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { AppDeps } from '../../src/app.js'
import { buildConfig } from '../../src/config/schema.js'
import type { Config } from '../../src/config/schema.js'
import { FakeUpstream } from './fake-upstream.js'
import { PROBE_RECORDS } from './records.js'
import type { HandleValue } from '../../src/handle/types.js'

export interface TestSetup {
  app: FastifyInstance
  upstream: FakeUpstream
  config: Config
}

/**
 * The settings our test apps run on, in front of the fake upstream at `upstreamUrl`, with `overrides` last.
 * No local store unless a test asks for one: the sample store would answer for 10.5555 itself.
 * No cache file either (the default would write data/cache.snapshot under the repository).
 * No load shedding unless a test asks for it (test/http/protection.test.ts): on a busy machine an
 * event-loop delay over a second turned an expected answer into DP_OVERLOADED's 503.
 */
export function testConfig(upstreamUrl: string, overrides: Partial<Config> = {}): Config {
  return {
    ...buildConfig(undefined, {}),
    upstreamUrl,
    upstreamTimeoutMs: 2000,
    localStoreDir: undefined,
    cacheFile: undefined,
    maxEventLoopDelayMs: 0,
    ...overrides
  }
}

/**
 * A real fake upstream on 127.0.0.1 and our app pointed at it, both closed when the test ends.
 * `overrides` are config settings; `records` replace the probe records.
 */
export async function setup(
  opts: { overrides?: Partial<Config>; records?: Record<string, HandleValue[]>; deps?: AppDeps } = {}
): Promise<TestSetup> {
  const upstream = await FakeUpstream.start(opts.records ?? PROBE_RECORDS)
  const config = testConfig(upstream.url, opts.overrides)
  const app = await buildApp(config, opts.deps)
  await app.ready()
  onTestFinished(async () => {
    await app.close()
    await upstream.close()
  })
  return { app, upstream, config }
}

/**
 * Hold the event loop 2 s, as a CPU-bound overload would, for a test of load shedding (set its
 * maxEventLoopDelayMs to 50). under-pressure judges the mean delay of each 250 ms window (10 ms samples):
 * up to 25 quick samples and this one of 2 s average well over 50 ms, wherever the window began (600 ms
 * did not, when the window had begun 150 ms before).
 */
export async function overloadEventLoop(): Promise<void> {
  const until = Date.now() + 2000
  while (Date.now() < until) {
    /* busy */
  }
  await new Promise((resolve) => setTimeout(resolve, 1))
}
