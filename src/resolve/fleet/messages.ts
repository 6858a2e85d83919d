import cluster from 'node:cluster'
import { randomUUID } from 'node:crypto'
import { Cluster } from 'ioredis'
import type { RedisClient } from './redis.js'

/**
 * What one process tells the others serving with it: the other workers of its host (WORKERS, through the
 * node:cluster primary, which relays) and, with Redis, every replica (pub/sub on `<prefix>v1:fleet`).
 * - `upstream-wait`: the registry answered 429 with a Retry-After; no process of the host asks it before
 *   `until` (epoch ms: one host, one clock). Told to the host only: the registry limits an address.
 * - `purge`: drop a record (DELETE /api/cache/{doi}) from every tier of every process.
 * - `health-seen`: DOIs of a watched prefix the upstream found (issue 42, src/resolve/health/seen.ts), each
 *   as the reader gave it, for the host's health database writer (worker 1) to watch. Told to the host
 *   only (with Redis, the fleet log carries them): at most MAX_SEEN_PER_MESSAGE, each a DOI (with a '/').
 * A message is checked as it arrives (a Redis others can write to may say anything); a process never
 * acts twice on its own.
 */
export type FleetMessage =
  { kind: 'upstream-wait'; until: number } | { kind: 'purge'; key: string } | { kind: 'health-seen'; dois: string[] }

/** Most DOIs one `health-seen` message names (a second's batch is cut into messages of this many). */
export const MAX_SEEN_PER_MESSAGE = 1000

/** The node:cluster message that carries a FleetMessage between a worker and the primary. */
const HOST_MESSAGE = 'doi-proxy:fleet'
// Longest cache key a purge may name (a handle's longest, four times over for escaping).
const MAX_KEY_LENGTH = 4 * 4096 + 64

interface Envelope {
  type: typeof HOST_MESSAGE
  from: string
  message: FleetMessage
}

export interface Fleet {
  /** Tell the other workers of this host (nothing without WORKERS). */
  tellHost(message: FleetMessage): void
  /**
   * Tell every process: this host's workers, and every replica through Redis. Resolves with how far it
   * went: 'redis' (published), 'host' (no Redis configured), or 'failed' (Redis configured, not told).
   */
  tellAll(message: FleetMessage): Promise<'redis' | 'host' | 'failed'>
  /** What the others tell this process. */
  onMessage(listener: (message: FleetMessage) => void): void
  close(): Promise<void>
}

export function createFleet(opts: { redis?: RedisClient | undefined; channel: string }): Fleet {
  const me = randomUUID()
  const listeners: Array<(message: FleetMessage) => void> = []
  // `viaRedis`: only purges are taken from Redis (anyone who may write there could otherwise hold every
  // replica's lookups with a wait); the registry's wait comes from this host's primary only.
  const deliver = (from: unknown, raw: unknown, viaRedis: boolean): void => {
    if (from === me) return
    const message = fleetMessageOf(raw)
    if (message === undefined || (viaRedis && message.kind !== 'purge')) return
    for (const listener of listeners) listener(message)
  }

  const inWorker = cluster.isWorker && process.send !== undefined
  const fromHost = (envelope: Partial<Envelope>): void => {
    if (envelope?.type === HOST_MESSAGE) deliver(envelope.from, envelope.message, false)
  }
  if (inWorker) process.on('message', fromHost)

  // A connection of its own: one that subscribes can do nothing else.
  const redis = opts.redis
  const subscriber: RedisClient | undefined =
    redis === undefined ? undefined : redis instanceof Cluster ? redis.duplicate() : redis.duplicate()
  if (subscriber !== undefined) {
    subscriber.on('error', () => {})
    const subscribe = (): void => {
      subscriber.subscribe(opts.channel).catch(() => {})
    }
    // ioredis subscribes again by itself after a reconnection.
    if (subscriber.status === 'ready') subscribe()
    else subscriber.once('ready', subscribe)
    subscriber.on('message', (channel: string, text: string) => {
      if (channel !== opts.channel) return
      try {
        const envelope = JSON.parse(text) as Partial<Envelope>
        deliver(envelope.from, envelope.message, true)
      } catch {
        /* not one of ours */
      }
    })
  }

  function tellHost(message: FleetMessage): void {
    if (!inWorker) return
    const envelope: Envelope = { type: HOST_MESSAGE, from: me, message }
    process.send?.(envelope)
  }

  return {
    tellHost,
    async tellAll(message) {
      tellHost(message)
      if (opts.redis === undefined) return 'host'
      try {
        await opts.redis.publish(opts.channel, JSON.stringify({ from: me, message }))
        return 'redis'
      } catch {
        return 'failed'
      }
    },
    onMessage(listener) {
      listeners.push(listener)
    },
    async close() {
      if (inWorker) process.off('message', fromHost)
      subscriber?.disconnect()
    }
  }
}

/** In the node:cluster primary (WORKERS > 1): pass each worker's fleet message on to every other worker. */
export function relayFleetMessages(): void {
  cluster.on('message', (from, envelope: Partial<Envelope>) => {
    if (envelope?.type !== HOST_MESSAGE) return
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker !== undefined && worker !== from && worker.isConnected()) worker.send(envelope)
    }
  })
}

/** A message as it must be, or undefined (exported for its tests). */
export function fleetMessageOf(raw: unknown): FleetMessage | undefined {
  const m = raw as { kind?: unknown; until?: unknown; key?: unknown; dois?: unknown } | null
  if (m === null || typeof m !== 'object') return undefined
  if (m.kind === 'upstream-wait' && typeof m.until === 'number' && Number.isFinite(m.until)) {
    return { kind: 'upstream-wait', until: m.until }
  }
  if (m.kind === 'purge' && typeof m.key === 'string' && m.key.length > 0 && m.key.length <= MAX_KEY_LENGTH) {
    return { kind: 'purge', key: m.key }
  }
  if (m.kind === 'health-seen' && Array.isArray(m.dois) && m.dois.length > 0 && m.dois.length <= MAX_SEEN_PER_MESSAGE) {
    const dois = m.dois as unknown[]
    if (dois.every((doi) => typeof doi === 'string' && doi.length <= MAX_KEY_LENGTH && doi.indexOf('/') > 0)) {
      return { kind: 'health-seen', dois: dois as string[] }
    }
  }
  return undefined
}
