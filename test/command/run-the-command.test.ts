import { spawn } from 'node:child_process'
import { copyFile, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { setup } from '../support/app.js'
import { PROBE_RECORDS } from '../support/records.js'
import { ranToEnd } from '../support/server-process.js'
import type { Run } from '../support/server-process.js'

// Issue 45 item 11: every way the README gives to run `doi-proxy`, tried for real: from the clone (an npm
// script, npx), from another project (npm exec --package= the clone or a tarball, npm pack then install),
// and, with no Docker engine here, the image's Dockerfile read for the command on PATH. The clone is a
// fresh one (the repository's files, no dist/) in a temporary folder, so its builds never race
// test/start.test.ts's over this repository's dist/. Nothing reaches the internet: installs are --offline
// from npm's cache (filled by `npm ci`), or from a registry on 127.0.0.1 serving the locked versions'
// metadata (their tarballs come from the same cache, by integrity).

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const PKG = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
  name: string
  version: string
  license: string
  bin: Record<string, string>
  dependencies: Record<string, string>
  engines: Record<string, string>
}
const LOCK = JSON.parse(await readFile(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
const README = await readFile(join(REPO, 'README.md'), 'utf8')
const DOCKERFILE = await readFile(join(REPO, 'Dockerfile'), 'utf8')

interface LockEntry {
  name?: string
  version?: string
  integrity?: string
  dev?: boolean
  link?: boolean
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: unknown
  bin?: unknown
  engines?: unknown
}

/** The environment of a user's shell: none of the npm_* variables of the `npm test` running us. */
function userEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')))
  return { ...env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' }
}

async function sh(command: string, args: string[], cwd: string): Promise<Run> {
  const child = spawn(command, args, { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  return await ranToEnd(child)
}

const USAGE = /^doi-proxy: a self-hosted DOI resolver\n\nUsage:\n/

/** The production dependencies as package-lock.json locks them (the paths under node_modules/, and each entry). */
function lockedProduction(): Array<[string, LockEntry]> {
  return Object.entries(LOCK.packages).filter(([path, e]) => path !== '' && e.dev !== true && e.link !== true)
}

/** What a fresh clone holds that building and packing read; its node_modules are the repository's (as after npm ci). */
const CLONED = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'src', 'scripts', 'bin', 'config']

let work: string
let clone: string
let tarball: string
let packed: string[]

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'doi-proxy-command-'))
  clone = join(work, 'doi-proxy')
  for (const path of CLONED) await cp(join(REPO, path), join(clone, path), { recursive: true, preserveTimestamps: true })
  await symlink(join(REPO, 'node_modules'), join(clone, 'node_modules'))
  // npm pack as a user runs it in a fresh clone: its prepack builds dist/ first.
  const pack = await sh('npm', ['pack', '--json', '--pack-destination', work], clone)
  expect(pack.code, pack.stderr).toBe(0)
  const [report] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  tarball = join(work, report!.filename)
  packed = report!.files.map((f) => f.path)
}, 300_000) // a build on a busy machine

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
})

/** A doi-proxy on 127.0.0.1 over a fake registry, and a project with one registered and one unregistered DOI. */
async function projectToCheck(): Promise<{ server: string; dir: string }> {
  const { app } = await setup({ records: PROBE_RECORDS })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const dir = await mkdtemp(join(work, 'project-'))
  await writeFile(join(dir, 'refs.md'), '# Refs\n\nhttps://doi.org/10.5555/plain and doi:10.5555/missing\n')
  return { server: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, dir }
}

function expectChecked(run: Run): void {
  expect(run.stdout).toBe(
    'refs.md:3: 10.5555/missing is not registered\nChecked 2 DOIs (2 distinct) in 1 file: 1 registered, 1 not registered, 0 could not be checked.\n'
  )
  expect(run.code).toBe(1)
}

describe('npm pack: the tarball', () => {
  it('holds the command, the compiled code it runs and the sample config, and none of the sources', () => {
    const bin = PKG.bin['doi-proxy']!
    expect(packed).toEqual(
      expect.arrayContaining([bin, 'dist/command/cli.js', 'dist/main.js', 'package.json', 'config/sample-records/sample.ndjson'])
    )
    expect(packed.filter((p) => /^(src|test|bench|scripts|node_modules|docs)\//.test(p) || p === 'dist/.build-stamp')).toEqual([])
  })
})

describe('from the clone', { timeout: 120_000 }, () => {
  it('npm run doi-proxy -- … runs the command', async () => {
    const run = await sh('npm', ['run', 'doi-proxy', '--silent', '--', '--help'], clone)
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(USAGE)
  })

  it('npm run doi-proxy -- … in a folder of the clone takes relative paths from that folder', async () => {
    const { server } = await projectToCheck()
    const sub = join(clone, 'notes')
    await mkdir(sub, { recursive: true })
    await writeFile(join(sub, 'refs.md'), '# Refs\n\nhttps://doi.org/10.5555/plain and doi:10.5555/missing\n')
    const run = await sh('npm', ['run', 'doi-proxy', '--silent', '--', 'check', '--server', server, 'refs.md'], sub)
    expectChecked(run)
  })

  it("npx doi-proxy … finds the clone's own command, once built", async () => {
    const run = await sh('npx', ['--offline', 'doi-proxy', '--help'], clone)
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(USAGE)
  })

  it('a clone never built says so and how, instead of "not found"', async () => {
    const unbuilt = await mkdtemp(join(work, 'unbuilt-'))
    await mkdir(join(unbuilt, 'bin'))
    await copyFile(join(REPO, PKG.bin['doi-proxy']!), join(unbuilt, PKG.bin['doi-proxy']!))
    const run = await sh(process.execPath, [join(unbuilt, PKG.bin['doi-proxy']!), 'check', 'docs/'], unbuilt)
    expect(run.code).toBe(69)
    expect(run.stderr).toMatch(
      /^doi-proxy: not built yet .*: run `npm run build` in .*, or run the command there as `npm run doi-proxy -- …`, which builds first\n$/
    )
  })
})

describe('from another project', { timeout: 180_000 }, () => {
  it('npm exec --package=<the clone> -- doi-proxy check … checks its DOIs', async () => {
    const { server, dir } = await projectToCheck()
    expectChecked(
      await sh('npm', ['exec', '--yes', '--offline', `--package=${clone}`, '--', 'doi-proxy', 'check', '--server', server, '.'], dir)
    )
  })

  it('npm pack, then install the tarball: npx doi-proxy check … checks its DOIs', async () => {
    const { server, dir } = await projectToCheck()
    // The project's lockfile holds the tarball and the versions doi-proxy's own lockfile has, so that
    // `npm ci --offline` installs from npm's cache alone (`npm install ../doi-proxy-0.1.0.tgz` is the same online).
    const name = tarball.slice(work.length + 1)
    await copyFile(tarball, join(dir, name))
    const manifest = { name: 'my-docs', version: '1.0.0', private: true, devDependencies: { [PKG.name]: `file:${name}` } }
    const packages: Record<string, unknown> = {
      '': { name: 'my-docs', version: '1.0.0', devDependencies: manifest.devDependencies },
      [`node_modules/${PKG.name}`]: {
        version: PKG.version,
        resolved: `file:${name}`,
        dev: true,
        license: PKG.license,
        dependencies: PKG.dependencies,
        bin: PKG.bin,
        engines: PKG.engines
      }
    }
    for (const [path, entry] of lockedProduction()) packages[path] = { ...entry, dev: true }
    await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
    await writeFile(
      join(dir, 'package-lock.json'),
      JSON.stringify({ name: 'my-docs', version: '1.0.0', lockfileVersion: 3, requires: true, packages }, null, 2)
    )
    // Without install scripts: better-sqlite3's would fetch its prebuilt binary from GitHub (no test reaches the
    // internet) or compile SQLite for minutes; `check` never opens SQLite (it loads its native code on first open).
    const install = await sh('npm', ['ci', '--offline', '--ignore-scripts'], dir)
    expect(install.code, install.stderr).toBe(0)
    expectChecked(await sh('npx', ['--offline', 'doi-proxy', 'check', '--server', server, 'refs.md'], dir))
    expectChecked(await sh(join(dir, 'node_modules', '.bin', 'doi-proxy'), ['check', '--server', server, 'refs.md'], dir))
  })

  it('npm exec --package=<the tarball> -- doi-proxy check … checks its DOIs', async () => {
    const { server, dir } = await projectToCheck()
    const registry = await lockedRegistry()
    const run = await sh(
      'npm',
      [
        'exec',
        '--yes',
        '--ignore-scripts', // as above: no install script reaches the internet or compiles
        `--registry=${registry.url}`,
        '--prefer-offline',
        `--package=${tarball}`,
        '--',
        'doi-proxy',
        'check',
        '--server',
        server,
        '.'
      ],
      dir
    )
    expectChecked(run)
    expect(registry.asked.length).toBeGreaterThan(0)
  })
})

describe('from the Docker image (no engine here: its Dockerfile, read)', () => {
  const runtime = DOCKERFILE.slice(DOCKERFILE.lastIndexOf('\nFROM '))

  it("puts the package's command on PATH as doi-proxy, with the files it runs", () => {
    const bin = PKG.bin['doi-proxy']!
    const workdir = /^WORKDIR (\S+)$/m.exec(runtime)?.[1]
    expect(workdir).toBe('/app')
    expect(runtime).toMatch(new RegExp(`ln -s ${workdir}/${bin.replace(/\./g, '\\.')} /usr/local/bin/doi-proxy`))
    // The command's folder, and what it imports (dist/ from the build stage), are in the image; executable.
    expect(runtime).toMatch(new RegExp(`^COPY [^\\n]*--chmod=755 ${bin.split('/')[0]} \\./${bin.split('/')[0]}$`, 'm'))
    expect(runtime).toMatch(/^COPY --from=build [^\n]* \/app\/dist \.\/dist$/m)
    expect(/^USER (\S+)$/m.exec(runtime)?.index ?? 0).toBeGreaterThan(runtime.indexOf('/usr/local/bin/doi-proxy'))
  })

  it('the README and the GitHub Actions recipe run `doi-proxy check` in the image', async () => {
    expect(README).toMatch(/^docker run --rm --network host -v "\$PWD:\/work" -w \/work doi-proxy doi-proxy check docs\/$/m)
    const recipe = await readFile(join(REPO, 'docs', 'checking-dois.md'), 'utf8')
    expect(recipe).toMatch(/registry\.example\/doi-proxy:1\.0\n\s+doi-proxy check --format github/)
  })
})

describe('the README', () => {
  it('gives each way tried here, and only those', () => {
    const block = /<!-- run-the-command -->\n```sh\n([\s\S]*?)```/.exec(README)?.[1]
    expect(block).toBeDefined()
    const commands = block!
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => l.replace(/\s+#.*$/, ''))
    expect(commands).toEqual([
      'npm run doi-proxy -- check docs/',
      'npm run build && npx doi-proxy check docs/',
      'npm exec --package=../doi-proxy -- doi-proxy check docs/',
      '(cd ../doi-proxy && npm pack)',
      `npm exec --package=../doi-proxy/${PKG.name}-${PKG.version}.tgz -- doi-proxy check docs/`,
      `npm install --save-dev ../doi-proxy/${PKG.name}-${PKG.version}.tgz && npx doi-proxy check docs/`,
      'docker run --rm --network host -v "$PWD:/work" -w /work doi-proxy doi-proxy check docs/'
    ])
    expect(tarball.endsWith(`/${PKG.name}-${PKG.version}.tgz`)).toBe(true)
  })
})

/**
 * An npm registry on 127.0.0.1 that knows only the production dependencies, at the versions
 * package-lock.json locks: each package's metadata, made from its lock entries. It serves no tarball:
 * npm takes them from its cache by their integrity (what `npm ci` put there).
 */
async function lockedRegistry(): Promise<{ url: string; asked: string[] }> {
  const byName = new Map<string, Record<string, unknown>>()
  for (const [path, e] of lockedProduction()) {
    const name = e.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
    const versions = byName.get(name) ?? {}
    versions[e.version!] = {
      name,
      version: e.version,
      dependencies: e.dependencies ?? {},
      optionalDependencies: e.optionalDependencies ?? {},
      peerDependencies: e.peerDependencies ?? {},
      ...(e.peerDependenciesMeta === undefined ? {} : { peerDependenciesMeta: e.peerDependenciesMeta }),
      ...(e.bin === undefined ? {} : { bin: e.bin }),
      ...(e.engines === undefined ? {} : { engines: e.engines }),
      dist: { integrity: e.integrity, tarball: `http://127.0.0.1:0/${name}/-/${name.split('/').pop()!}-${e.version!}.tgz` }
    }
    byName.set(name, versions)
  }
  const asked: string[] = []
  const server = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '/').slice(1))
    asked.push(name)
    const versions = byName.get(name)
    if (versions === undefined) return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}')
    const latest = Object.keys(versions).at(-1)!
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, 'dist-tags': { latest }, versions }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => {
    await new Promise((resolve) => server.close(resolve))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, asked }
}
