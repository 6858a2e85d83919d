import { Redis } from 'ioredis'

/**
 * The Redis (or Valkey) connection of the shared tier and the rate limiter (behaviour.md §11).
 * Every limit explicit: a command that takes longer than commandTimeoutMs fails (the caller goes on
 * without Redis), nothing queues while disconnected (a command then fails at once), a dropped
 * connection fails its pending commands at once, and ioredis reconnects by itself with a capped backoff.
 */
export interface RedisSettings {
  url: string
  commandTimeoutMs: number
  connectTimeoutMs: number
}

// Reconnect after 100 ms, 200 ms, 400 ms… at most every 5 s, for ever.
export function reconnectDelayMs (attempt: number): number {
  return Math.min(5_000, 100 * 2 ** Math.min(Math.max(attempt - 1, 0), 6))
}

export function createRedisClient (settings: RedisSettings): Redis {
  const client = new Redis(settings.url, {
    commandTimeout: settings.commandTimeoutMs,
    connectTimeout: settings.connectTimeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelayMs,
    // A name in CLIENT LIST, so an operator sees who is connected.
    connectionName: 'doi-proxy',
    lazyConnect: false
  })
  // Errors are reported by whoever uses the client (throttled); without a listener ioredis prints each one.
  client.on('error', () => {})
  return client
}

/** Resolves true once the client is connected, or false after `ms`: the start never waits longer, never fails. */
export async function waitConnected (client: Redis, ms: number): Promise<boolean> {
  if (client.status === 'ready') return true
  return await new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer)
      client.off('ready', onReady)
      resolve(ok)
    }
    const onReady = (): void => done(true)
    const timer = setTimeout(() => done(false), ms)
    client.on('ready', onReady)
  })
}

/** Close politely (QUIT), or at once when Redis does not answer. */
export async function closeRedis (client: Redis, ms: number): Promise<void> {
  if (client.status === 'end') return
  if (client.status !== 'ready') {
    client.disconnect()
    return
  }
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    client.quit().catch(() => {}),
    new Promise<void>((resolve) => { timer = setTimeout(resolve, ms) })
  ])
  clearTimeout(timer)
  client.disconnect()
}
