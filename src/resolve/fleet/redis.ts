import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Cluster, Redis } from 'ioredis'
import type { ClusterOptions, RedisOptions } from 'ioredis'
import { ConfigError } from '../../config/schema.js'
import type { Config } from '../../config/schema.js'

/**
 * The Redis (or Valkey) connection of the shared tier and the rate limiter (behaviour.md §11), through
 * ioredis' own support for each way of running Redis: one server (`redis://`, `rediss://` for TLS, a
 * password or an ACL user in the URL), a Sentinel-watched master (followed through failovers) or a
 * Cluster (keys spread over its masters). Every limit explicit: a command that takes longer than
 * commandTimeoutMs fails (the caller goes on without Redis), nothing queues while disconnected (a
 * command then fails at once), a dropped connection fails its pending commands at once, and ioredis
 * reconnects by itself with a capped backoff.
 */
export type RedisClient = Redis | Cluster

export type RedisTopology =
  { kind: 'server'; url: string } | { kind: 'sentinel'; sentinels: HostPort[]; master: string } | { kind: 'cluster'; nodes: HostPort[] }

export interface HostPort {
  host: string
  port: number
}

export interface RedisSettings {
  topology: RedisTopology
  /** Credentials for Sentinel's master and replicas or the cluster's nodes (a server's are in its URL). */
  username?: string | undefined
  password?: string | undefined
  /** PEM text of the certificate authorities a `rediss://` server's certificate must chain to (else the system's). */
  tlsCa?: string | undefined
  commandTimeoutMs: number
  connectTimeoutMs: number
}

/** The settings a Redis connection is made from. */
export type RedisSettingKey =
  | 'redisUrl'
  | 'redisSentinels'
  | 'redisSentinelMaster'
  | 'redisClusterNodes'
  | 'redisUsername'
  | 'redisPassword'
  | 'redisTlsCaFile'
  | 'redisCommandTimeoutMs'
  | 'redisConnectTimeoutMs'

/** The Redis settings of a Config (one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES), or undefined without any. */
export function redisSettingsOf(config: Pick<Config, RedisSettingKey>): RedisSettings | undefined {
  let topology: RedisTopology
  if (config.redisUrl !== undefined) topology = { kind: 'server', url: config.redisUrl }
  else if (config.redisSentinels.length > 0) {
    topology = { kind: 'sentinel', sentinels: config.redisSentinels.map(hostPort), master: config.redisSentinelMaster ?? '' }
  } else if (config.redisClusterNodes.length > 0) topology = { kind: 'cluster', nodes: config.redisClusterNodes.map(hostPort) }
  else return undefined
  return {
    topology,
    username: config.redisUsername,
    password: config.redisPassword,
    // Read once at start: a missing file stops the start with its name (main.ts reports the error).
    tlsCa: config.redisTlsCaFile === undefined ? undefined : readCa(config.redisTlsCaFile),
    commandTimeoutMs: config.redisCommandTimeoutMs,
    connectTimeoutMs: config.redisConnectTimeoutMs
  }
}

/** The CA's PEM text; a file that holds no certificate is refused at start, not met as a TLS failure at each connect. */
function readCa(file: string): string {
  const refuse = (why: string): never => {
    throw new ConfigError(`invalid setting redisTlsCaFile (REDIS_TLS_CA_FILE): ${JSON.stringify(file)} ${why}`)
  }
  let text = ''
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    refuse(`cannot be read: ${(err as Error).message}`)
  }
  // The first certificate of the file is parsed here; a bundle's others are TLS's to read.
  const problem = pemProblem(text)
  if (problem !== undefined) refuse(`holds no PEM certificate (-----BEGIN CERTIFICATE-----): ${problem}`)
  return text
}

/** Why `text` does not start with a PEM certificate, or undefined when it does. */
function pemProblem(text: string): string | undefined {
  try {
    return new X509Certificate(text).raw.length > 0 ? undefined : 'an empty certificate'
  } catch (err) {
    return (err as Error).message
  }
}

/** `host:port` (IPv6 in brackets) as checked by the config schema. */
export function hostPort(text: string): HostPort {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(text)
  return { host: m?.[1] ?? text, port: Number(m?.[2] ?? 6379) }
}

/** A Redis URL as it may be shown (logs, status, errors): its password replaced by `***`. */
export function redactRedisUrl(url: string): string {
  return url.replace(/^(rediss?:\/\/[^:@/]*):[^@/]*@/, '$1:***@')
}

/** Where we connect, for a log line: never a password. */
export function describeRedis(topology: RedisTopology): string {
  const list = (nodes: HostPort[]): string => nodes.map((n) => `${n.host}:${n.port}`).join(',')
  switch (topology.kind) {
    case 'server':
      return redactRedisUrl(topology.url)
    case 'sentinel':
      return `sentinel master ${topology.master} via ${list(topology.sentinels)}`
    case 'cluster':
      return `cluster via ${list(topology.nodes)}`
  }
}

// Reconnect after 100 ms, 200 ms, 400 ms… at most every 5 s, for ever.
export function reconnectDelayMs(attempt: number): number {
  return Math.min(5_000, 100 * 2 ** Math.min(Math.max(attempt - 1, 0), 6))
}

export function createRedisClient(settings: RedisSettings): RedisClient {
  const { topology } = settings
  const perConnection = {
    commandTimeout: settings.commandTimeoutMs,
    connectTimeout: settings.connectTimeoutMs,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // A name in CLIENT LIST, so an operator sees who is connected.
    connectionName: 'doi-proxy',
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password })
  } satisfies RedisOptions
  let client: RedisClient
  if (topology.kind === 'cluster') {
    client = new Cluster(topology.nodes, {
      enableOfflineQueue: false,
      clusterRetryStrategy: reconnectDelayMs,
      // A slot moving (resharding, a replica promoted) is followed; a cluster that is down is not waited
      // for: its command fails at once and the lookup goes on with the local cache.
      maxRedirections: 4,
      retryDelayOnFailover: 50,
      retryDelayOnClusterDown: 50,
      retryDelayOnTryAgain: 50,
      slotsRefreshTimeout: settings.connectTimeoutMs,
      redisOptions: perConnection
    } satisfies ClusterOptions)
  } else {
    const options: RedisOptions = {
      ...perConnection,
      enableOfflineQueue: false,
      retryStrategy: reconnectDelayMs,
      lazyConnect: false
    }
    if (topology.kind === 'sentinel') {
      Object.assign(options, {
        sentinels: topology.sentinels,
        name: topology.master,
        sentinelRetryStrategy: reconnectDelayMs,
        sentinelCommandTimeout: settings.commandTimeoutMs * 10,
        // Told by the sentinels (+switch-master) when a replica is promoted, not only on the next error.
        failoverDetector: true,
        // A master demoted to a replica answers writes with READONLY: reconnect, and ask the sentinels again.
        reconnectOnError: (err: Error) => err.message.startsWith('READONLY')
      } satisfies RedisOptions)
      client = new Redis(options)
    } else {
      if (settings.tlsCa !== undefined && topology.url.startsWith('rediss:')) options.tls = { ca: settings.tlsCa }
      client = new Redis(topology.url, options)
    }
  }
  // Errors are reported by whoever uses the client (throttled); without a listener ioredis prints each one.
  client.on('error', () => {})
  return client
}

/**
 * The nodes of REDIS_CLUSTER_NODES that answered they are no cluster node ("cluster support disabled":
 * a single Redis server named there), heard from now on; always empty for a client that is no cluster.
 * So the start can say so, not that Redis is not reachable.
 */
export function notClusterNodes(client: RedisClient): () => string[] {
  const nodes = new Set<string>()
  if (client instanceof Cluster) {
    client.on('node error', (err: Error, node: string) => {
      if (/cluster support disabled/i.test(err.message)) nodes.add(node)
    })
  }
  return () => [...nodes]
}

/**
 * Resolves true once the client is connected (a cluster: to each of its masters), or false after `ms`:
 * the start never waits longer, never fails.
 */
export async function waitConnected(client: RedisClient, ms: number): Promise<boolean> {
  const until = performance.now() + ms
  if (!(await waitReady(client, ms))) return false
  if (!(client instanceof Cluster)) return true
  // A cluster is ready once it knows its slots; its other nodes' connections open after. A first
  // command sent meanwhile waits for one and may take more than its timeout: open them all now.
  let timer: NodeJS.Timeout | undefined
  const pinged = await Promise.race([
    Promise.all(client.nodes('master').map(async (node) => await node.ping())).then(
      () => true,
      () => false
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, until - performance.now()))
    })
  ])
  clearTimeout(timer)
  return pinged
}

/**
 * Whether the client connected but its own first commands (the ready check) timed out since this was
 * called: Redis accepts connections and answers, slower than REDIS_COMMAND_TIMEOUT_MS, so the client
 * never becomes ready. `stop()` removes the listener.
 */
export function watchSlowSetup(client: RedisClient): { slow: () => boolean; stop: () => void } {
  let slow = false
  const onError = (err: Error): void => {
    if (err.message === 'Command timed out') slow = true
  }
  client.on('error', onError)
  return {
    slow: () => slow,
    stop: () => {
      client.off('error', onError)
    }
  }
}

async function waitReady(client: RedisClient, ms: number): Promise<boolean> {
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
export async function closeRedis(client: RedisClient, ms: number): Promise<void> {
  if (client.status === 'end') return
  if (client.status !== 'ready') {
    client.disconnect()
    return
  }
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    client.quit().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms)
    })
  ])
  clearTimeout(timer)
  client.disconnect()
}
