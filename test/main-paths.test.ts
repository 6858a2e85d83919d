import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { checkPaths, pathProblem } from '../src/main/paths.js'
import { defaultConfig, OPTIONS } from '../src/config/schema.js'
import type { Config, PathUse } from '../src/config/schema.js'
import { spawnSync } from 'node:child_process'
import { NOBODY, startOutcome } from './support/server-process.js'

// Every setting that names a file or directory is checked at start the same way (src/main/paths.ts):
// the table's `path` says which, and this walks the table, so a setting added with one is covered.

const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-paths-'))
// Permissions mean nothing to root: the checks of permissions run as another user (nobody) when the
// tests run as root, as CI does; that user must be able to reach the paths.
chmodSync(dir, 0o755)
afterAll(() => {
  chmodSync(readOnlyDir, 0o755)
  rmSync(dir, { recursive: true, force: true })
})
const aFile = join(dir, 'a-file')
writeFileSync(aFile, 'not a directory\n')
const unreadable = join(dir, 'unreadable')
writeFileSync(unreadable, 'secret\n')
chmodSync(unreadable, 0o000)
mkdirSync(join(dir, 'a-directory'))
// A cache snapshot is replaced by renaming a new file over it: what matters is its directory.
const readOnlyDir = join(dir, 'read-only-directory')
mkdirSync(readOnlyDir)
const snapshotInReadOnlyDir = join(readOnlyDir, 'cache.snapshot')
writeFileSync(snapshotInReadOnlyDir, '')
chmodSync(readOnlyDir, 0o555)
// A directory anyone may write into, so that the user checking (nobody, under root) may replace a file there.
const writableDir = join(dir, 'writable-directory')
mkdirSync(writableDir)
chmodSync(writableDir, 0o777)
const readOnlySnapshot = join(writableDir, 'cache.snapshot')
writeFileSync(readOnlySnapshot, '')
chmodSync(readOnlySnapshot, 0o444)
const asUser = process.getuid?.() === 0 ? NOBODY : undefined
// The paths whose problem is a permission: checked as another user when the tests run as root. That
// user must reach the repository's code too: in a checkout under a directory closed to others
// (e.g. /root) those checks cannot run, and say so instead.
const reachable =
  asUser === undefined ||
  spawnSync(
    process.execPath,
    ['-e', `require('fs').accessSync(${JSON.stringify(new URL('../src/main/paths.ts', import.meta.url).pathname)})`],
    { ...asUser }
  ).status === 0
const PERMISSIONS = new Set(reachable ? [unreadable, snapshotInReadOnlyDir] : [])
const permissionsCanRun = reachable ? it : it.skip

/** pathProblem as the user these tests run as, or as nobody when that is root. */
function pathProblemAsUser(path: string, use: PathUse): string | undefined {
  if (asUser === undefined) return pathProblem(path, use)
  const code = `import(${JSON.stringify(new URL('../src/main/paths.ts', import.meta.url).pathname)}).then((m) => { process.stdout.write(JSON.stringify(m.pathProblem(${JSON.stringify(path)}, ${JSON.stringify(use)}) ?? null)) })`
  const run = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { ...asUser, encoding: 'utf8', timeout: 30_000 })
  if (run.status !== 0) throw new Error(`pathProblem as uid ${asUser.uid} failed: ${run.stderr}`)
  return (JSON.parse(run.stdout) as string | null) ?? undefined
}

/** Paths each use cannot work with (those in PERMISSIONS checked as another user when run by root). */
const BAD: Record<PathUse, string[]> = {
  'file to read': [join(dir, 'missing'), join(dir, 'a-directory'), ...(reachable ? [unreadable] : [])],
  'directory to read': [join(dir, 'missing'), aFile],
  'file to write': [join(dir, 'a-directory'), join(aFile, 'under', 'cache.snapshot'), ...(reachable ? [snapshotInReadOnlyDir] : [])],
  'directory to write': [aFile, join(aFile, 'under')]
}

/** What a setting needs besides itself to mean anything (else another setting's check speaks first). */
const NEEDS: Partial<Record<keyof Config, Record<string, string>>> = {
  oaSnapshotFile: { OA_PROVIDER: 'file' },
  redisTlsCaFile: { REDIS_URL: 'rediss://127.0.0.1:1' },
  retractionsFile: { RETRACTIONS_FROM: 'file' },
  healthDb: { HEALTH_WATCH: '10.5555' } // used (and checked) only with health on
}

const withPath = Object.entries(OPTIONS).flatMap(([key, option]) =>
  option.path === undefined ? [] : [{ key, env: option.env, use: option.path }]
)

describe('the settings that name a file or directory', () => {
  it('are all marked in the table: each whose variable says it names a path has a `path`, and only those', () => {
    const named = Object.values(OPTIONS)
      .filter((o) => /_(FILE|DIR|DATABASE|PATH|DB)$|^RECORD_TO$|^REGISTRY_COPY$/.test(o.env))
      .map((o) => o.env)
    expect(withPath.map((s) => s.env).sort()).toEqual(named.sort())
    expect(named.length).toBeGreaterThanOrEqual(6)
  })

  it("are each named in docs/operations.md's table of start-up errors", () => {
    const row =
      readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8')
        .split('\n')
        .find((l) => l.startsWith('| a setting naming a file or directory')) ?? ''
    for (const { env } of withPath) expect(row, env).toContain(`\`${env}\``)
  })

  permissionsCanRun('accept a read-only file to write in a directory that can be written into (it is replaced, not written)', () => {
    expect(pathProblemAsUser(readOnlySnapshot, 'file to write')).toBeUndefined()
  })

  permissionsCanRun('refuse a writable file to write in a directory that cannot be written into (it cannot be replaced)', () => {
    expect(pathProblemAsUser(snapshotInReadOnlyDir, 'file to write')).toMatch(
      /^cannot be replaced: its directory ".*read-only-directory" cannot be written into \(EACCES\)$/
    )
  })

  it('accept their defaults in a fresh clone (data/ is created for the cache snapshot)', () => {
    expect(() => {
      checkPaths(defaultConfig())
    }).not.toThrow()
  })
})

// Real processes, one after another: a loaded machine can take several seconds to start each.
describe(
  'a start with a setting naming a path it cannot use stops with one line naming the setting and the path, exit code 78',
  { timeout: 60_000 },
  () => {
    const cases = withPath.flatMap(({ key, env, use }) => BAD[use].map((bad) => ({ key, env, use, bad })))
    it.each(cases)('$env ($use) = $bad', async ({ key, env, bad }) => {
      const { code, output, listened } = await startOutcome(
        { ...NEEDS[key as keyof Config], [env]: bad },
        PERMISSIONS.has(bad) && asUser !== undefined ? { user: asUser } : {}
      )
      expect(listened, output).toBe(false)
      expect(
        output.split('\n').filter((l) => l !== ''),
        output
      ).toEqual([expect.stringMatching(new RegExp(`^doi-proxy: invalid setting ${key} \\(${env}\\): ${escape(JSON.stringify(bad))} `))])
      expect(code).toBe(78)
    })
  }
)

describe('a start with a file that is there but cannot be used stops the same way', { timeout: 60_000 }, () => {
  const corruptGzip = join(dir, 'feed.jsonl.gz')
  writeFileSync(corruptGzip, Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x67, 0x61, 0x72, 0x62]))
  const text = join(dir, 'country.mmdb')
  writeFileSync(text, 'this is not a MaxMind database\n')
  it.each([
    { key: 'oaSnapshotFile', env: 'OA_SNAPSHOT_FILE', bad: corruptGzip, why: 'a truncated gzip feed' },
    { key: 'geoipDatabase', env: 'GEOIP_DATABASE', bad: text, why: 'a text file as the country database' },
    { key: 'redisTlsCaFile', env: 'REDIS_TLS_CA_FILE', bad: text, why: 'a text file as the certificate authority' }
  ])('$env: $why', async ({ key, env, bad }) => {
    const { code, output, listened } = await startOutcome({ ...NEEDS[key as keyof Config], [env]: bad })
    expect(listened, output).toBe(false)
    expect(
      output.split('\n').filter((l) => l !== ''),
      output
    ).toEqual([expect.stringMatching(new RegExp(`^doi-proxy: invalid setting ${key} \\(${env}\\): ${escape(JSON.stringify(bad))} `))])
    expect(code).toBe(78)
  })
})

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
