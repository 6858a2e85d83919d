import pino from 'pino'
import { createMetrics } from '../../src/observe/metrics.js'
import { createRedisClient } from '../../src/resolve/fleet/redis.js'
import { createHealth } from '../../src/resolve/health/health-service.js'
import type { HealthSettings } from '../../src/resolve/health/health-service.js'
import { realChecker } from './health-checker.js'
import { fakeLookup } from './landing-dns.js'

/**
 * One replica of a fleet's health checking (issue 42), as a process a test can kill: the real checker (resolution
 * and issue 41's landing prober) in front of `upstream`, the history in its own SQLite file, the lease and the log in
 * the fleet's Redis, on the real clock. Run as
 * `node --import tsx test/support/health-replica.ts '<ReplicaOptions as JSON>'`; it prints `state <s>` each time
 * its checker's state changes (running, elsewhere, paused), and closes cleanly on SIGTERM.
 */
export interface ReplicaOptions {
  upstream: string
  redis: string
  names: Record<string, string>
  settings: HealthSettings
  leaseTtlMs: number
  leaseRenewMs: number
}

const opts = JSON.parse(process.argv[2] ?? '{}') as ReplicaOptions
const opened: Array<{ close: () => Promise<void> }> = []
const checker = await realChecker(
  { url: opts.upstream },
  { lookup: fakeLookup(opts.names), perHost: opts.settings.landingPerHost, keepVerdicts: false },
  opened
)
const redis = createRedisClient({ topology: { kind: 'server', url: opts.redis }, commandTimeoutMs: 1_000, connectTimeoutMs: 1_000 })
if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
const health = createHealth({
  settings: opts.settings,
  checker,
  redis,
  metrics: createMetrics(),
  log: pino({ level: 'warn' }, pino.destination(2)),
  now: Date.now,
  leaseTtlMs: opts.leaseTtlMs,
  leaseRenewMs: opts.leaseRenewMs
})
await health.start()

let said = ''
const watch = setInterval(() => {
  const { state } = health.checkerState()
  if (state !== said) process.stdout.write(`state ${state}\n`)
  said = state
}, 20)

async function stop(): Promise<never> {
  clearInterval(watch)
  await health.close()
  for (const o of opened.reverse()) await o.close()
  redis.disconnect()
  process.exit(0)
}

process.once('SIGTERM', () => {
  stop().catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
})
