import { execFile, spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import type { RedisOptions } from 'ioredis'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { createRedisClient } from '../../src/resolve/fleet/redis.js'
import type { RedisClient } from '../../src/resolve/fleet/redis.js'
import { openssl } from './tls.js'

/**
 * Real redis-server processes on 127.0.0.1 and free ports, with no persistence, for tests of the shared
 * tier: one server (optionally with a password and an ACL user, or TLS with a throw-away CA), a master
 * with a replica watched by three Sentinels, a three-master Cluster. redis-server must be installed
 * (.ci/run installs the Debian package when it is missing): without it the tests fail with that message,
 * they are never skipped silently.
 */
export interface TestRedisOptions {
  /** `requirepass`: the default user's password. */
  password?: string
  /** ACL users, each as a `user` line of redis.conf: `doi on >secret ~doi-proxy:* +@all`. */
  users?: string[]
  /** Serve TLS only (no plain port), with a certificate for 127.0.0.1 and localhost signed by this CA. */
  tls?: TestCa
  /** More redis.conf directives as command-line arguments. */
  args?: string[]
}

function requireRedisServer(): void {
  const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  if (found.error !== undefined || found.status !== 0) {
    throw new Error('redis-server is not installed: `apt-get install -y redis-server` (Debian/Ubuntu); .ci/run installs it')
  }
}

export class TestRedis {
  private child: ChildProcess | undefined
  // Its own working directory: a replica writes the master's data there (dump.rdb) whatever `save` says,
  // and a server started in the same directory would load it.
  private readonly dir = mkdtempSync(join(tmpdir(), 'doi-proxy-redis-'))
  private constructor(
    readonly port: number,
    private readonly opts: TestRedisOptions
  ) {}

  /** The server's URL, without credentials: `rediss://` when it serves TLS. */
  get url(): string {
    return `${this.opts.tls === undefined ? 'redis' : 'rediss'}://127.0.0.1:${this.port}`
  }

  get address(): string {
    return `127.0.0.1:${this.port}`
  }

  static async start(opts: TestRedisOptions = {}): Promise<TestRedis> {
    requireRedisServer()
    const redis = new TestRedis(await freePort(), opts)
    await redis.run()
    return redis
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  /** (Re)start the server on its port; nothing when it runs. */
  async run(): Promise<void> {
    if (this.running) return
    const { tls } = this.opts
    const args = [
      ...(tls === undefined
        ? ['--port', String(this.port)]
        : [
            '--port',
            '0',
            '--tls-port',
            String(this.port),
            '--tls-cert-file',
            tls.certFile,
            '--tls-key-file',
            tls.keyFile,
            '--tls-ca-cert-file',
            tls.caFile,
            '--tls-auth-clients',
            'no'
          ]),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--enable-debug-command',
      'yes',
      '--loglevel',
      'warning',
      ...(this.opts.password === undefined ? [] : ['--requirepass', this.opts.password]),
      ...(this.opts.users ?? []).flatMap((user) => ['--user', ...user.split(' ')]),
      ...(this.opts.args ?? [])
    ]
    const child = spawn('redis-server', args, { stdio: 'ignore' })
    this.child = child
    await waitForPong(this.port, this.clientOptions(), () => child.exitCode)
  }

  /** Kill the server at once (SIGKILL), as a crash would. */
  async kill(): Promise<void> {
    await killChild(this.child)
  }

  /** Our own connection options: the admin password and the CA. */
  clientOptions(): RedisOptions {
    return {
      ...(this.opts.password === undefined ? {} : { password: this.opts.password }),
      ...(this.opts.tls === undefined ? {} : { tls: { ca: readFileSync(this.opts.tls.caFile, 'utf8') } })
    }
  }

  /** A client of our own, for looking at or planting keys. */
  client(): Redis {
    const client = new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 1, ...this.clientOptions() })
    client.on('error', () => {})
    return client
  }

  async close(): Promise<void> {
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** A throw-away certificate authority and a server certificate for 127.0.0.1 and localhost (openssl). */
export interface TestCa {
  dir: string
  caFile: string
  certFile: string
  keyFile: string
  close: () => void
}

export async function makeTestCa(): Promise<TestCa> {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-ca-'))
  const run = async (...args: string[]): Promise<void> => await openssl(dir, ...args)
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  await run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=doi-proxy test CA')
  await run('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  await run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'san.ext'
  )
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'server.crt'),
    keyFile: join(dir, 'server.key'),
    close: () => rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A master with one replica, watched by three Sentinels (quorum 2) that give up on a master after
 * 500 ms, so a failover takes about a second. With `password`, master and replica require it.
 */
export class TestSentinels {
  readonly masterName = 'doiproxy'
  private constructor(
    readonly servers: TestRedis[],
    private readonly sentinels: ChildProcess[],
    readonly sentinelPorts: number[],
    private readonly dir: string
  ) {}

  static async start(opts: { password?: string } = {}): Promise<TestSentinels> {
    requireRedisServer()
    const auth = opts.password === undefined ? {} : { password: opts.password, args: ['--masterauth', opts.password] }
    const master = await TestRedis.start(auth)
    const replica = await TestRedis.start({ ...auth, args: [...(auth.args ?? []), '--replicaof', '127.0.0.1', String(master.port)] })
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-sentinel-'))
    const ports: number[] = []
    const children: ChildProcess[] = []
    const group = new TestSentinels([master, replica], children, ports, dir)
    try {
      for (let i = 0; i < 3; i++) {
        const port = await freePort()
        const file = join(dir, `sentinel-${port}.conf`)
        writeFileSync(
          file,
          [
            `port ${port}`,
            'bind 127.0.0.1',
            `dir ${dir}`,
            `sentinel monitor ${group.masterName} 127.0.0.1 ${master.port} 2`,
            `sentinel down-after-milliseconds ${group.masterName} 500`,
            `sentinel failover-timeout ${group.masterName} 3000`,
            ...(opts.password === undefined ? [] : [`sentinel auth-pass ${group.masterName} ${opts.password}`]),
            ''
          ].join('\n')
        )
        const child = spawn('redis-server', [file, '--sentinel', '--loglevel', 'warning'], { stdio: 'ignore' })
        ports.push(port)
        children.push(child)
        await waitForPong(port, {}, () => child.exitCode)
      }
      // Ready when every Sentinel knows the replica and the two other Sentinels (a failover needs both).
      await until(async () => {
        for (const port of ports) {
          const [replicas, master] = await sentinelAsk(
            port,
            ['SENTINEL', 'REPLICAS', group.masterName],
            ['SENTINEL', 'MASTER', group.masterName]
          )
          const fields = pairs(master)
          if ((replicas as unknown[]).length === 0 || fields['num-other-sentinels'] !== '2') return false
        }
        const client = replica.client()
        try {
          return /master_link_status:up/.test(await client.info('replication'))
        } finally {
          client.disconnect()
        }
      }, 'the Sentinels never saw the replica and each other')
    } catch (err) {
      await group.close()
      throw err
    }
    return group
  }

  get sentinelList(): string {
    return this.sentinelPorts.map((port) => `127.0.0.1:${port}`).join(',')
  }

  /** The server the Sentinels name as master now. */
  async master(): Promise<TestRedis> {
    const [addr] = await sentinelAsk(this.sentinelPorts[0] ?? 0, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.masterName])
    const port = Number((addr as string[])[1])
    const found = this.servers.find((s) => s.port === port)
    if (found === undefined) throw new Error(`the Sentinels name an unknown master on port ${port}`)
    return found
  }

  /** Promote the replica (SENTINEL FAILOVER) and resolve once the Sentinels name it and it accepts writes. */
  async failover(): Promise<TestRedis> {
    const before = await this.master()
    await sentinelAsk(this.sentinelPorts[0] ?? 0, ['SENTINEL', 'FAILOVER', this.masterName])
    let after = before
    await until(async () => {
      after = await this.master()
      if (after === before) return false
      const client = after.client()
      try {
        return /role:master/.test(await client.info('replication'))
      } finally {
        client.disconnect()
      }
    }, 'the failover never ended')
    return after
  }

  async close(): Promise<void> {
    await Promise.all([...this.sentinels.map(killChild), ...this.servers.map(async (s) => await s.close())])
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Three masters of a Redis Cluster (no replicas), each with a third of the slots. */
export class TestCluster {
  private constructor(
    readonly masters: TestRedis[],
    private readonly dir: string
  ) {}

  /** `users`: ACL users on every node, as TestRedisOptions' (the default user stays open, for the test's own clients). */
  static async start(opts: { users?: string[] } = {}): Promise<TestCluster> {
    requireRedisServer()
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-cluster-'))
    const masters: TestRedis[] = []
    const cluster = new TestCluster(masters, dir)
    try {
      for (let i = 0; i < 3; i++) {
        const port = await freePort()
        masters.push(
          await TestRedis.start({
            args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '1000'],
            ...(opts.users === undefined ? {} : { users: opts.users })
          })
        )
      }
      try {
        await promisify(execFile)('redis-cli', [
          '--cluster',
          'create',
          ...masters.map((m) => m.address),
          '--cluster-replicas',
          '0',
          '--cluster-yes'
        ])
      } catch (err) {
        const { code, stdout, stderr } = err as { code?: unknown; stdout?: string; stderr?: string }
        throw new Error(
          code === 'ENOENT'
            ? 'redis-cli is not installed: `apt-get install -y redis-tools`; .ci/run installs it'
            : `redis-cli --cluster create failed: ${stdout}${stderr}`
        )
      }
      await until(async () => {
        for (const master of masters) {
          const client = master.client()
          try {
            if (!/cluster_state:ok/.test(await client.cluster('INFO'))) return false
          } finally {
            client.disconnect()
          }
        }
        return true
      }, 'the cluster never came up')
    } catch (err) {
      await cluster.close()
      throw err
    }
    return cluster
  }

  get nodeList(): string {
    return this.masters.map((m) => m.address).join(',')
  }

  async close(): Promise<void> {
    await Promise.all(this.masters.map(async (m) => await m.close()))
    rmSync(this.dir, { recursive: true, force: true })
  }
}

async function killChild(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

async function waitForPong(port: number, options: RedisOptions, exitCode: () => number | null): Promise<void> {
  const client = new Redis(port, '127.0.0.1', { ...options, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    for (let i = 0; i < 200; i++) {
      if (exitCode() !== null) throw new Error(`redis-server on port ${port} exited with ${exitCode()}`)
      try {
        await client.connect()
        if ((await client.ping()) === 'PONG') return
      } catch {
        /* not listening yet */
      }
      client.disconnect()
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`redis-server did not answer on port ${port}`)
  } finally {
    client.disconnect()
  }
}

async function sentinelAsk(port: number, ...commands: string[][]): Promise<unknown[]> {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    const out: unknown[] = []
    for (const [name = '', ...args] of commands) out.push(await client.call(name, ...args))
    return out
  } finally {
    client.disconnect()
  }
}

function pairs(flat: unknown): Record<string, string> {
  const list = flat as string[]
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i] as string] = list[i + 1] as string
  return out
}

async function until(check: () => Promise<boolean>, message: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    try {
      if (await check()) return
    } catch {
      /* not yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(message)
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      srv.close(() => resolve(port))
    })
  })
}

/**
 * One redis-server for the tests of a file (or a describe block), emptied before each test: `redis()` is
 * the server, started in beforeAll and stopped in afterAll.
 */
export function useTestRedis(): () => TestRedis {
  let server: TestRedis | undefined
  const started = (): TestRedis => {
    if (server === undefined) throw new Error('useTestRedis: the server is started in beforeAll; ask for it inside a test or hook')
    return server
  }
  beforeAll(async () => {
    server = await TestRedis.start()
  })
  afterAll(async () => {
    await server?.close()
  })
  beforeEach(async () => {
    const client = started().client()
    await client.flushall()
    client.disconnect()
  })
  return started
}

/**
 * Replicas' connections to one test server, ready when answered (nothing queues while connecting: a command before
 * then goes without Redis), each closed after the test. `timeoutMs` is both the command and the connect timeout.
 */
export function useReplicaConnections(redis: () => TestRedis, timeoutMs: number): () => Promise<RedisClient> {
  const clients: RedisClient[] = []
  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect()
  })
  return async () => {
    const client = createRedisClient({
      topology: { kind: 'server', url: redis().url },
      commandTimeoutMs: timeoutMs,
      connectTimeoutMs: timeoutMs
    })
    clients.push(client)
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
    return client
  }
}
