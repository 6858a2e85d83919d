import { execFileSync, spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync
} from 'node:fs'
import { connect as http2Connect } from 'node:http2'
import { request as httpsRequest } from 'node:https'
import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { X509Certificate } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { buildConfig } from '../src/config/schema.js'
import { setup } from './support/app.js'
import { envOf, replicas } from './support/compose.js'
import { selfSignedCert } from './support/tls.js'

// The files in deploy/ as an operator installs them, checked by the real tools: nginx (Debian's
// package; .ci/run installs it) started with the shipped deploy/nginx.conf in front of a real doi-proxy.

const NGINX_CONF = readFileSync(new URL('../deploy/nginx.conf', import.meta.url), 'utf8')

/** `text` with `from` replaced everywhere; throws when it is not there, so a changed file fails loudly. */
function substitute(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`deploy/nginx.conf no longer contains ${JSON.stringify(from)}`)
  return text.split(from).join(to)
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

const DEPLOYMENT_DOC = readFileSync(new URL('../docs/deployment.md', import.meta.url), 'utf8')

/** The lines (continuations joined) of docs/deployment.md's shell block that holds `marker`. */
function docLines(marker: string): string[] {
  const block = [...DEPLOYMENT_DOC.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').find((b) => b.includes(marker))
  if (block === undefined) throw new Error(`docs/deployment.md no longer shows ${JSON.stringify(marker)}`)
  return block.replace(/\\\n\s*/g, '').split('\n')
}

/** docs/deployment.md's one command starting with `start` in the block that holds `marker`. */
function docCommand(marker: string, start: string): string {
  const line = docLines(marker).find((l) => l.startsWith(start))
  if (line === undefined) throw new Error(`docs/deployment.md no longer runs ${JSON.stringify(start)} beside ${JSON.stringify(marker)}`)
  return line
}

/** docs/deployment.md's commands that make a throw-away certificate for a trial: its lines up to openssl's. */
function trialCertificateCommands(): string {
  const lines = docLines('--cacert tls/fullchain.pem')
  return lines.slice(0, lines.findIndex((l) => l.startsWith('openssl ')) + 1).join('\n')
}

/** The output of docs/deployment.md's `sed` command beside `marker`, run on the repository's deploy/ files. */
function docSed(marker: string, output: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-doc-'))
  try {
    symlinkSync(fileURLToPath(new URL('../deploy', import.meta.url)), join(dir, 'deploy'))
    execFileSync('bash', ['-euc', docCommand(marker, 'sed ')], { cwd: dir, stdio: 'pipe' })
    return readFileSync(join(dir, output), 'utf8')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A real doi-proxy on a free loopback port, the fake upstream behind it, behind one proxy as compose
 * runs the replicas (their TRUST_PROXY) and only `statusAllow` may see /status; closed when the test ends.
 */
async function startDoiProxy(statusAllow: string[]): Promise<number> {
  const { trustProxy } = buildConfig(undefined, { TRUST_PROXY: envOf(replicas[0]?.[1] ?? {}).TRUST_PROXY ?? '' })
  const { app } = await setup({ overrides: { trustProxy, statusAllow } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return (app.server.address() as AddressInfo).port
}

/** Polls `ready` every 50 ms until it is true, for at most 10 s; `failed` says why it never will be. */
async function waitFor(what: string, ready: () => Promise<boolean>, failed: () => string | undefined = () => undefined): Promise<void> {
  for (let i = 0; ; i++) {
    const reason = failed()
    if (reason !== undefined) throw new Error(reason)
    if (await ready().catch(() => false)) return
    if (i > 200) throw new Error(`${what} did not happen within 10 s`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** One HTTP/2 request over TLS trusting only `ca` (for the host `servername` when given): the response's headers. */
async function askHttp2(
  origin: string,
  path: string,
  ca: string,
  servername?: string
): Promise<{ alpn: string | false | undefined; headers: Record<string, unknown> }> {
  const session = http2Connect(origin, { ca, servername })
  try {
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = session.request({
        ':path': path,
        ...(servername !== undefined ? { ':authority': `${servername}:${new URL(origin).port}` } : {})
      })
      req.on('response', (h) => {
        resolve(h)
        req.close()
      })
      req.on('error', reject)
      req.end()
    })
    return { alpn: session.alpnProtocol, headers }
  } finally {
    session.close()
  }
}

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/**
 * One HTTP/1.1 request, over TLS trusting only `ca` when it is given, for the host `servername` when
 * it is given (the certificate's name and the Host header); `localAddress` picks the client's address.
 */
async function ask(
  url: string,
  opts: { ca?: string; servername?: string; localAddress?: string; headers?: Record<string, string> } = {}
): Promise<Answer> {
  const send = url.startsWith('https:') ? httpsRequest : httpRequest
  return await new Promise((resolve, reject) => {
    const headers = { ...(opts.servername !== undefined ? { Host: `${opts.servername}:${new URL(url).port}` } : {}), ...opts.headers }
    const req = send(url, { ca: opts.ca, servername: opts.servername, localAddress: opts.localAddress, headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => {
        body += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer from ${url}`)))
    req.on('error', reject)
    req.end()
  })
}

describe('deploy/nginx.conf in front of doi-proxy, with a throw-away certificate', () => {
  let dir = ''
  let ca = ''
  let httpPort = 0
  let httpsPort = 0

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'doi-proxy-nginx-'))
    // Run as root, nginx's workers are another user (nobody, without a `user` directive), who must read the webroot.
    chmodSync(dir, 0o755)
    mkdirSync(join(dir, 'acme', '.well-known', 'acme-challenge'), { recursive: true })
    // The throw-away certificate exactly as docs/deployment.md makes it for a trial (its shell lines
    // up to the openssl command, run in the temporary directory): TLS_DIR=./tls.
    execFileSync('bash', ['-euc', trialCertificateCommands()], { cwd: dir, stdio: 'pipe' })
    const live = join(dir, 'tls')
    ca = readFileSync(join(live, 'fullchain.pem'), 'utf8')
    writeFileSync(join(dir, 'acme', '.well-known', 'acme-challenge', 'token-1'), 'token-1.key-authorization')
  })

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  /**
   * A real doi-proxy (the fake upstream behind it) with `statusAllow`, and nginx in front of it from
   * the shipped file (or `source`, its `upstreams` lines pointed at doi-proxy) with the certificate in
   * `tlsDir`, on free ports; both stopped when the test ends.
   */
  async function start(
    opts: { statusAllow?: string[]; source?: string; upstreams?: string[]; tlsDir?: string } = {}
  ): Promise<ChildProcess> {
    const { source = NGINX_CONF, upstreams = [1, 2, 3].map((n) => `server doi-proxy-${n}:8000 `), tlsDir = join(dir, 'tls') } = opts
    const appPort = await startDoiProxy(opts.statusAllow ?? ['127.0.0.0/8'])
    httpPort = await freePort()
    httpsPort = await freePort()

    let conf = source
    conf = substitute(conf, 'listen 80;', `listen 127.0.0.1:${httpPort};`)
    conf = substitute(conf, 'listen 443 ssl http2;', `listen 127.0.0.1:${httpsPort} ssl http2;`)
    for (const upstream of upstreams) conf = substitute(conf, upstream, `server 127.0.0.1:${appPort} `)
    conf = substitute(conf, '/etc/nginx/tls/', `${tlsDir}/`)
    conf = substitute(conf, '/var/www/certbot', join(dir, 'acme'))
    conf = substitute(conf, '/var/log/nginx/', `${dir}/`)
    // Everything nginx writes goes to the temporary directory, so it needs no root and no /var.
    conf = substitute(
      conf,
      'http {',
      `http {\n  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t}_temp;`).join('\n  ')}`
    )
    writeFileSync(join(dir, 'nginx.conf'), conf)

    let nginxOutput = ''
    const nginx = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr', '-g', `daemon off; pid ${dir}/nginx.pid;`], {
      stdio: ['ignore', 'pipe', 'pipe']
    })
    nginx.stdout.on('data', (c: Buffer) => {
      nginxOutput += c.toString()
    })
    nginx.stderr.on('data', (c: Buffer) => {
      nginxOutput += c.toString()
    })
    onTestFinished(() => {
      nginx.kill('SIGQUIT')
    })
    // Up once its health check answers on the plain port.
    await waitFor(
      'nginx starting',
      async () => (await ask(`http://127.0.0.1:${httpPort}/nginx-health`)).status === 200,
      () => (nginx.exitCode !== null ? `nginx exited ${nginx.exitCode}: ${nginxOutput}` : undefined)
    )
    return nginx
  }

  /** The SHA-256 fingerprint of the certificate nginx serves on its https port right now. */
  async function servedFingerprint(): Promise<string> {
    return await new Promise((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: httpsPort, servername: 'localhost', rejectUnauthorized: false }, () => {
        resolve(socket.getPeerCertificate().fingerprint256)
        socket.end()
      })
      socket.on('error', reject)
    })
  }

  it('resolves a DOI over https and HTTP/2, with HSTS', async () => {
    await start()
    const { alpn, headers } = await askHttp2(`https://127.0.0.1:${httpsPort}`, '/10.5555/plain', ca)
    expect(alpn).toBe('h2')
    expect(headers[':status']).toBe(302)
    expect(headers.location).toBe('http://example.org/plain')
    expect(headers['strict-transport-security']).toBe('max-age=63072000')
  })

  it('resolves through the one-host form docs/deployment.md makes with sed (one doi-proxy on 127.0.0.1:8000)', async () => {
    const oneHost = docSed('nginx-one-host.conf', 'nginx-one-host.conf')
    expect(oneHost.match(/^\s*server \S+:8000/gm)).toEqual(['    server 127.0.0.1:8000'])
    await start({ source: oneHost, upstreams: ['server 127.0.0.1:8000 '] })
    const answer = await ask(`https://127.0.0.1:${httpsPort}/10.5555/plain`, { ca })
    expect(answer.status).toBe(302)
    expect(answer.headers.location).toBe('http://example.org/plain')
  })

  it('keeps HSTS on error answers too (a DOI that does not exist)', async () => {
    await start()
    const answer = await ask(`https://127.0.0.1:${httpsPort}/10.5555/does-not-exist`, { ca })
    expect(answer.status, answer.body).toBe(404)
    expect(answer.headers['strict-transport-security']).toBe('max-age=63072000')
  })

  it('sends plain http to https with the same path and query (308: a POST stays a POST)', async () => {
    await start()
    const answer = await ask(`http://127.0.0.1:${httpPort}/10.5555/plain?noredirect=1`)
    expect(answer.status).toBe(308)
    expect(answer.headers.location).toBe('https://127.0.0.1/10.5555/plain?noredirect=1')
  })

  it("answers certbot's challenge over plain http from the webroot", async () => {
    await start()
    const answer = await ask(`http://127.0.0.1:${httpPort}/.well-known/acme-challenge/token-1`)
    expect(answer.status).toBe(200)
    expect(answer.body).toBe('token-1.key-authorization')
  })

  it("passes the reader's address on, and doi-proxy trusts it (TRUST_PROXY): /status for an allowed reader only", async () => {
    await start({ statusAllow: ['127.0.0.2/32'] })
    // nginx itself reaches doi-proxy from 127.0.0.1: only the passed-on address can be 127.0.0.2.
    expect((await ask(`https://127.0.0.1:${httpsPort}/status`, { ca, localAddress: '127.0.0.2' })).status).toBe(200)
    // A reader who writes the header itself is not believed: nginx overwrites it.
    const forged = await ask(`https://127.0.0.1:${httpsPort}/status`, {
      ca,
      localAddress: '127.0.0.1',
      headers: { 'X-Forwarded-For': '127.0.0.2' }
    })
    expect(forged.status).toBe(403)
  })

  it('serves a renewed certificate once deploy/certbot-deploy-hook has run, without a restart', async () => {
    // Its own copy of the certificate directory, so the other tests keep the one they trust.
    const tlsDir = join(dir, 'tls-renewed')
    cpSync(join(dir, 'tls'), tlsDir, { recursive: true })
    const nginx = await start({ tlsDir })
    const before = await servedFingerprint()
    // What certbot hands the hook: the new certificate's live directory in RENEWED_LINEAGE.
    const lineage = join(dir, 'renewed')
    mkdirSync(lineage, { recursive: true })
    const { key, cert } = await selfSignedCert({ commonName: 'renewed', altNames: 'DNS:localhost', days: 1 })
    writeFileSync(join(lineage, 'privkey.pem'), key)
    writeFileSync(join(lineage, 'fullchain.pem'), cert)
    const renewed = new X509Certificate(readFileSync(join(lineage, 'fullchain.pem'))).fingerprint256
    // SIGHUP is what `nginx -s reload` and `systemctl reload nginx` send.
    const hook = run(fileURLToPath(new URL('../deploy/certbot-deploy-hook', import.meta.url)), [], {
      RENEWED_LINEAGE: lineage,
      TLS_DIR: tlsDir,
      RELOAD: `kill -HUP ${nginx.pid ?? 0}`
    })
    expect(hook.code, hook.stderr).toBe(0)
    await waitFor('the renewed certificate served', async () => (await servedFingerprint()) === renewed)
    expect(before).not.toBe(renewed)
    expect(nginx.exitCode).toBeNull()
  })
})

/** Whether `command` is on PATH. */
function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'pipe' })
    return true
  } catch {
    return false
  }
}

/** One tool's run: its exit code and what it said. */
function run(command: string, args: string[], env: Record<string, string> = {}): { code: number; stdout: string; stderr: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, ...env } })
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr }
}

// CI installs Debian's docker-compose (.ci/run); no Docker engine is needed to check a file.
describe.skipIf(!has('docker-compose'))(
  'docker-compose.yml, checked by docker-compose config (skipped without it: Debian package docker-compose)',
  () => {
    const root = fileURLToPath(new URL('..', import.meta.url))

    it("is valid compose, without a word, with .env.example's settings", () => {
      const checked = spawnSync('docker-compose', ['--env-file', '.env.example', 'config', '-q'], { cwd: root, encoding: 'utf8' })
      expect(checked.stderr).toBe('')
      expect(checked.status).toBe(0)
    })

    it('is valid compose, without a word, with nothing set (every variable has its default)', () => {
      const empty = join(mkdtempSync(join(tmpdir(), 'doi-proxy-env-')), 'empty.env')
      writeFileSync(empty, '')
      onTestFinished(() => {
        rmSync(join(empty, '..'), { recursive: true, force: true })
      })
      const checked = spawnSync('docker-compose', ['--env-file', empty, 'config', '-q'], {
        cwd: root,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' }
      })
      expect(checked.stderr).toBe('')
      expect(checked.status).toBe(0)
    })
  }
)

describe('docs/deployment.md', () => {
  it('names only deploy/ files that exist', () => {
    const named = new Set([...DEPLOYMENT_DOC.matchAll(/(?<![\w/])deploy\/([\w.-]+)/g)].map((m) => m[1] ?? ''))
    expect([...named].sort()).toEqual(expect.arrayContaining(['Caddyfile', 'certbot-deploy-hook', 'doi-proxy.service', 'nginx.conf']))
    for (const name of named) expect(existsSync(fileURLToPath(new URL(`../deploy/${name}`, import.meta.url))), name).toBe(true)
  })
})

const UNIT = readFileSync(new URL('../deploy/doi-proxy.service', import.meta.url), 'utf8')
/** The unit's `Key=value` lines (a key may repeat). */
const unitLines = UNIT.split('\n')
  .filter((l) => /^\w+=/.test(l))
  .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const)
const unitValue = (key: string): string[] => unitLines.filter(([k]) => k === key).map(([, v]) => v)

// CI installs the systemd package (.ci/run); a machine without systemd-analyze skips these two.
describe.skipIf(!has('systemd-analyze'))(
  'deploy/doi-proxy.service, checked by systemd-analyze (skipped without it: Debian package systemd)',
  () => {
    /** The unit in a temporary directory, with this machine's node in ExecStart (verify checks the binary exists). */
    function unitHere(): string {
      const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-unit-'))
      onTestFinished(() => {
        rmSync(dir, { recursive: true, force: true })
      })
      const file = join(dir, 'doi-proxy.service')
      writeFileSync(file, UNIT.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `))
      return file
    }

    it('verifies without a word (an unknown or misspelt setting would be named)', () => {
      const verified = run('systemd-analyze', ['verify', '--man=no', unitHere()])
      expect(verified.stderr).toBe('')
      expect(verified.code).toBe(0)
    })

    it('is rated OK or better by systemd-analyze security (exposure at most 2 out of 10)', () => {
      const rated = run('systemd-analyze', ['security', '--offline=true', '--no-pager', unitHere()])
      const exposure = Number(/Overall exposure level for doi-proxy\.service: ([\d.]+)/.exec(rated.stdout)?.[1])
      expect(exposure, rated.stdout + rated.stderr).toBeLessThanOrEqual(2)
    })
  }
)

describe('the comments of deploy/, the Dockerfile and docker-compose.yml', () => {
  it('name only test files that exist', () => {
    const root = fileURLToPath(new URL('..', import.meta.url))
    const files = [
      'Dockerfile',
      'docker-compose.yml',
      ...readdirSync(join(root, 'deploy'), { recursive: true, encoding: 'utf8' }).map((f) => `deploy/${f}`)
    ]
    const named = files
      .filter((f) => statSync(join(root, f)).isFile())
      .flatMap((f) => [...readFileSync(join(root, f), 'utf8').matchAll(/(?<![\w/])test\/[\w/.-]+\.ts/g)].map((m) => [f, m[0]] as const))
    expect(named.length).toBeGreaterThan(0)
    for (const [file, test] of named) expect(existsSync(join(root, test)), `${file} names ${test}`).toBe(true)
  })
})

describe('deploy/doi-proxy.service, read', () => {
  it('restarts after a crash, but not after a bad setting (exit code 78), which would fail again', () => {
    expect(unitValue('Restart')).toEqual(['on-failure'])
    expect(unitValue('RestartPreventExitStatus')).toEqual(['78'])
  })

  it('runs node itself with the hardening an operator expects', () => {
    expect(unitValue('ExecStart')).toEqual(['/usr/bin/node /opt/doi-proxy/dist/main.js'])
    for (const [key, value] of [
      ['DynamicUser', 'yes'],
      ['ProtectSystem', 'strict'],
      ['NoNewPrivileges', 'yes'],
      ['StateDirectory', 'doi-proxy'],
      ['PrivateTmp', 'yes'],
      ['KillSignal', 'SIGTERM']
    ]) {
      expect(unitValue(key ?? ''), key).toEqual([value])
    }
  })

  /** The environment doi-proxy gets from the unit's Environment= lines, %S (the state root) as /var/lib. */
  function unitEnv(): Record<string, string> {
    return Object.fromEntries(
      unitValue('Environment')
        .flatMap((v) => v.split(' '))
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1).replace('%S', '/var/lib')])
    )
  }

  it('keeps the snapshot in its StateDirectory, serves no samples and listens on loopback only', () => {
    const config = buildConfig(undefined, unitEnv())
    expect(config.cacheFile).toBe(`/var/lib/${unitValue('StateDirectory')[0] ?? ''}/cache.snapshot`)
    expect(config.localStoreDir).toBeUndefined()
    expect(config.host).toBe('127.0.0.1')
    expect(config.trustProxy).toBe(1)
  })

  it('keeps the health history in its StateDirectory too, once health is on (issue 42)', () => {
    const config = buildConfig(undefined, { ...unitEnv(), HEALTH_WATCH: '10.5555' })
    expect(config.healthDb).toBe(`/var/lib/${unitValue('StateDirectory')[0] ?? ''}/health.sqlite`)
  })

  it('starts with the settings docs/deployment.md writes to its environment file', () => {
    const lines = docLines('/etc/doi-proxy/doi-proxy.env')
    const file = lines.slice(lines.findIndex((l) => l.includes('tee /etc/doi-proxy/doi-proxy.env')) + 1, lines.indexOf('EOF'))
    expect(unitValue('EnvironmentFile')).toEqual(['-/etc/doi-proxy/doi-proxy.env'])
    const env = { ...unitEnv(), ...Object.fromEntries(file.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) }
    const config = buildConfig(undefined, env)
    expect(config.publicBaseUrl).toBe('https://doi.library.example')
    expect(config.contactEmail).toBe('library-systems@university.example')
  })

  it('gives the graceful shutdown time to finish before systemd kills it', () => {
    const config = buildConfig(undefined, unitEnv())
    expect(Number(/^(\d+)$/.exec(unitValue('TimeoutStopSec')[0] ?? '')?.[1]) * 1000).toBeGreaterThan(
      config.drainDelayMs + config.shutdownGraceMs
    )
  })
})

// CI installs Debian's caddy (.ci/run); a machine without it skips these.
describe.skipIf(!has('caddy'))('deploy/Caddyfile, checked by caddy (skipped without it: Debian package caddy)', () => {
  /** Caddy's own files (its data and config directories) in a temporary directory. */
  function caddyEnv(): Record<string, string> {
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-caddy-'))
    onTestFinished(() => {
      rmSync(dir, { recursive: true, force: true })
    })
    return { XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir, HOME: dir }
  }
  const caddyfile = fileURLToPath(new URL('../deploy/Caddyfile', import.meta.url))

  it('is valid and formatted as caddy fmt writes it', () => {
    const validated = run('caddy', ['validate', '--config', caddyfile, '--adapter', 'caddyfile'], caddyEnv())
    expect(validated.code, validated.stderr).toBe(0)
    expect(validated.stderr).not.toContain('not formatted')
    expect(run('caddy', ['fmt', caddyfile]).stdout).toBe(readFileSync(caddyfile, 'utf8'))
  })

  it('serves the domain over https only, with HSTS on every answer, from doi-proxy on 127.0.0.1:8000', () => {
    const adapted = run('caddy', ['adapt', '--config', caddyfile, '--adapter', 'caddyfile'], caddyEnv())
    expect(adapted.code, adapted.stderr).toBe(0)
    const config = JSON.parse(adapted.stdout) as { apps: { http: { servers: Record<string, { listen: string[]; routes: unknown[] }> } } }
    const servers = Object.values(config.apps.http.servers)
    // One https server: Caddy adds the http→https redirect and the certificate by itself for a domain.
    expect(servers.map((s) => s.listen)).toEqual([[':443']])
    const text = JSON.stringify(servers[0]?.routes)
    expect(text).toContain('"host":["doi.library.example"]')
    expect(text).toMatch(
      /"handler":"headers","response":\{"set":\{"Strict-Transport-Security":\["max-age=63072000"\]\}\}.*"handler":"reverse_proxy","upstreams":\[\{"dial":"127\.0\.0\.1:8000"\}\]/
    )
  })

  it("takes the operator's domain and address from docs/deployment.md's sed", () => {
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-caddy-doc-'))
    onTestFinished(() => {
      rmSync(dir, { recursive: true, force: true })
    })
    writeFileSync(join(dir, 'Caddyfile'), docSed('/etc/caddy/Caddyfile', 'Caddyfile'))
    const adapted = run('caddy', ['adapt', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], caddyEnv())
    expect(adapted.code, adapted.stderr).toBe(0)
    expect(adapted.stdout).toContain('"host":["doi.your-library.example"]')
    expect(adapted.stdout).toContain('"email":"you@your-library.example"')
  })

  /**
   * The shipped Caddyfile run for real for `localhost` (Caddy's own CA) on free ports, in front of a
   * real doi-proxy where only `statusAllow` may see /status; stopped when the test ends.
   */
  async function runCaddy(statusAllow = ['127.0.0.0/8']): Promise<{ http: number; https: number; ca: string }> {
    const upstream = await startDoiProxy(statusAllow)
    const [http, https, admin] = [await freePort(), await freePort(), await freePort()]
    const env = caddyEnv()
    const caddy = spawn('caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'], {
      env: {
        ...process.env,
        ...env,
        DOI_PROXY_SITE: 'localhost',
        DOI_PROXY_UPSTREAM: `127.0.0.1:${upstream}`,
        CADDY_ADMIN: `localhost:${admin}`,
        CADDY_HTTP_PORT: String(http),
        CADDY_HTTPS_PORT: String(https)
      },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let output = ''
    caddy.stdout.on('data', (c: Buffer) => {
      output += c.toString()
    })
    caddy.stderr.on('data', (c: Buffer) => {
      output += c.toString()
    })
    onTestFinished(() => {
      caddy.kill('SIGTERM')
    })
    const root = join(env.XDG_DATA_HOME ?? '', 'caddy', 'pki', 'authorities', 'local', 'root.crt')
    // Up once doi-proxy answers through it (Caddy's own empty answer for an unknown host has no HSTS).
    await waitFor(
      'Caddy serving https',
      async () =>
        existsSync(root) &&
        (await ask(`https://127.0.0.1:${https}/healthz`, { ca: readFileSync(root, 'utf8'), servername: 'localhost' })).headers[
          'strict-transport-security'
        ] !== undefined,
      () => (caddy.exitCode !== null ? `caddy exited ${caddy.exitCode}: ${output}` : undefined)
    )
    return { http, https, ca: readFileSync(root, 'utf8') }
  }

  it('resolves a DOI over https and HTTP/2 with HSTS, run for real', async () => {
    const caddy = await runCaddy()
    const { alpn, headers } = await askHttp2(`https://127.0.0.1:${caddy.https}`, '/10.5555/plain', caddy.ca, 'localhost')
    expect(alpn).toBe('h2')
    expect(headers[':status']).toBe(302)
    expect(headers.location).toBe('http://example.org/plain')
    expect(headers['strict-transport-security']).toBe('max-age=63072000')
  })

  it('sends plain http to https (308), run for real', async () => {
    const caddy = await runCaddy()
    const answer = await ask(`http://127.0.0.1:${caddy.http}/10.5555/plain?noredirect=1`, { servername: 'localhost' })
    expect(answer.status).toBe(308)
    expect(answer.headers.location).toMatch(/^https:\/\/localhost(:\d+)?\/10\.5555\/plain\?noredirect=1$/)
  })

  it("passes the reader's address on, never one the reader writes: /status for an allowed reader only, run for real", async () => {
    const caddy = await runCaddy(['127.0.0.2/32'])
    const status = `https://127.0.0.1:${caddy.https}/status`
    const allowed = await ask(status, { ca: caddy.ca, servername: 'localhost', localAddress: '127.0.0.2' })
    expect(allowed.status).toBe(200)
    expect(allowed.body).toContain('<html')
    const forged = await ask(status, {
      ca: caddy.ca,
      servername: 'localhost',
      localAddress: '127.0.0.1',
      headers: { 'X-Forwarded-For': '127.0.0.2' }
    })
    expect(forged.status).toBe(403)
  })

  it('takes the domain from DOI_PROXY_SITE', () => {
    const adapted = run('caddy', ['adapt', '--config', caddyfile, '--adapter', 'caddyfile'], {
      ...caddyEnv(),
      DOI_PROXY_SITE: 'doi.other.example'
    })
    expect(adapted.stdout).toContain('"host":["doi.other.example"]')
  })
})
