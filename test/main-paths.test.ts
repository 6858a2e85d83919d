import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { checkPaths, pathProblem } from '../src/main/paths.js'
import { defaultConfig, OPTIONS } from '../src/config/schema.js'
import type { Config, PathUse } from '../src/config/schema.js'
import { startOutcome } from './support/server-process.js'

// Every setting that names a file or directory is checked at start the same way (src/main/paths.ts):
// the table's `path` says which, and this walks the table, so a setting added with one is covered.

const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-paths-'))
afterAll(() => { chmodSync(readOnlyDir, 0o755); rmSync(dir, { recursive: true, force: true }) })
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
const readOnlySnapshot = join(dir, 'a-directory', 'cache.snapshot')
writeFileSync(readOnlySnapshot, '')
chmodSync(readOnlySnapshot, 0o444)
const notRoot = process.getuid?.() !== 0

/** Paths each use cannot work with. (Permissions mean nothing to root, so that case only for another user.) */
const BAD: Record<PathUse, string[]> = {
  'file to read': [join(dir, 'missing'), join(dir, 'a-directory'), ...(process.getuid?.() === 0 ? [] : [unreadable])],
  'directory to read': [join(dir, 'missing'), aFile],
  'file to write': [join(dir, 'a-directory'), join(aFile, 'under', 'cache.snapshot'), ...(notRoot ? [snapshotInReadOnlyDir] : [])],
  'directory to write': [aFile, join(aFile, 'under')]
}

/** What a setting needs besides itself to mean anything (else another setting's check speaks first). */
const NEEDS: Partial<Record<keyof Config, Record<string, string>>> = {
  oaSnapshotFile: { OA_PROVIDER: 'file' },
  redisTlsCaFile: { REDIS_URL: 'rediss://127.0.0.1:1' }
}

const withPath = Object.entries(OPTIONS).flatMap(([key, option]) => option.path === undefined ? [] : [{ key, env: option.env, use: option.path }])

describe('the settings that name a file or directory', () => {
  it('are all marked in the table: each whose variable says it names a path has a `path`, and only those', () => {
    const named = Object.values(OPTIONS).filter((o) => /_(FILE|DIR|DATABASE|PATH)$|^RECORD_TO$/.test(o.env)).map((o) => o.env)
    expect(withPath.map((s) => s.env).sort()).toEqual(named.sort())
    expect(named.length).toBeGreaterThanOrEqual(6)
  })

  it('are each named in docs/operations.md\'s table of start-up errors', () => {
    const row = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8').split('\n').find((l) => l.startsWith('| a setting naming a file or directory')) ?? ''
    for (const { env } of withPath) expect(row, env).toContain(`\`${env}\``)
  })

  // Permissions mean nothing to root: these two only for another user.
  it.runIf(notRoot)('accept a read-only file to write in a directory that can be written into (it is replaced, not written)', () => {
    expect(pathProblem(readOnlySnapshot, 'file to write')).toBeUndefined()
  })

  it.runIf(notRoot)('refuse a writable file to write in a directory that cannot be written into (it cannot be replaced)', () => {
    expect(pathProblem(snapshotInReadOnlyDir, 'file to write')).toMatch(/^cannot be replaced: its directory ".*read-only-directory" cannot be written into \(EACCES\)$/)
  })

  it('accept their defaults in a fresh clone (data/ is created for the cache snapshot)', () => {
    expect(() => { checkPaths(defaultConfig()) }).not.toThrow()
  })
})

// Real processes, one after another: a loaded machine can take several seconds to start each.
describe('a start with a setting naming a path it cannot use stops with one line naming the setting and the path, exit code 78', { timeout: 60_000 }, () => {
  const cases = withPath.flatMap(({ key, env, use }) => BAD[use].map((bad) => ({ key, env, use, bad })))
  it.each(cases)('$env ($use) = $bad', async ({ key, env, bad }) => {
    const { code, output, listened } = await startOutcome({ ...NEEDS[key as keyof Config], [env]: bad })
    expect(listened, output).toBe(false)
    expect(output.split('\n').filter((l) => l !== ''), output).toEqual([expect.stringMatching(new RegExp(`^doi-proxy: invalid setting ${key} \\(${env}\\): ${escape(JSON.stringify(bad))} `))])
    expect(code).toBe(78)
  })
})

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
    expect(output.split('\n').filter((l) => l !== ''), output).toEqual([expect.stringMatching(new RegExp(`^doi-proxy: invalid setting ${key} \\(${env}\\): ${escape(JSON.stringify(bad))} `))])
    expect(code).toBe(78)
  })
})

function escape (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
