import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buildConfig, ConfigError } from '../../src/config/schema.js'
import { checkPaths, registryCopyProblem } from '../../src/main/paths.js'
import { NOBODY } from '../support/server-process.js'

const PATHS = new URL('../../src/main/paths.ts', import.meta.url).pathname

/** registryCopyProblem as this user, or as nobody when this is root (to whom every file is writable). */
function problemAsUser(dir: string, updateHours: number): string | undefined {
  if (process.getuid?.() !== 0) return registryCopyProblem({ registryCopy: dir, registryCopyUpdateHours: updateHours })
  const code = `import(${JSON.stringify(PATHS)}).then((m) => { process.stdout.write(JSON.stringify(m.registryCopyProblem({ registryCopy: ${JSON.stringify(dir)}, registryCopyUpdateHours: ${updateHours} }) ?? null)) })`
  const run = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { ...NOBODY, encoding: 'utf8', timeout: 30_000 })
  if (run.status !== 0) throw new Error(`registryCopyProblem as nobody failed: ${run.stderr}`)
  return (JSON.parse(run.stdout) as string | null) ?? undefined
}

// Issue 43: the registry copy's settings, checked once at start, each message naming the setting and the value
// (plan-43 §3).

describe('the settings of the registry copy', () => {
  it('by default there is no copy, a week of freshness, no updates, no size cap, 256 MiB kept free', () => {
    const config = buildConfig(undefined, {})
    expect(config.registryCopy).toBeUndefined()
    expect(config.registryCopyMaxAgeSeconds).toBe(604_800)
    expect(config.registryCopyUpdateHours).toBe(0)
    expect(config.registryCopyMaxBytes).toBe(0)
    expect(config.registryCopyMinFreeBytes).toBe(256 * 1024 * 1024)
    expect(config.registryCopyMaxRecordBytes).toBe(4 * 1024 * 1024)
    expect(config.registryCopyCitationQueue).toBe(64)
    expect(config.registryCopyUpdateTimeoutMs).toBe(60_000)
    expect(config.dataciteApiUrl).toBe('https://api.datacite.org')
  })

  it.each([
    [{ REGISTRY_COPY: '/srv/copy' }, 'registryCopy', '/srv/copy'],
    [{ REGISTRY_COPY: '' }, 'registryCopy', undefined], // empty: no copy
    [{ REGISTRY_COPY_MAX_AGE_SECONDS: '0' }, 'registryCopyMaxAgeSeconds', 0], // online, a stand-in only
    [{ REGISTRY_COPY_MAX_BYTES: '0' }, 'registryCopyMaxBytes', 0],
    [{ REGISTRY_COPY_MAX_BYTES: String(64 * 1024 * 1024) }, 'registryCopyMaxBytes', 64 * 1024 * 1024],
    [{ REGISTRY_COPY: '/srv/copy', REGISTRY_COPY_UPDATE_HOURS: '24' }, 'registryCopyUpdateHours', 24],
    [{ DATACITE_API_URL: 'http://127.0.0.1:9/' }, 'dataciteApiUrl', 'http://127.0.0.1:9']
  ])('%j reads as %s %j', (env, key, value) => {
    expect(buildConfig(undefined, env)[key as keyof ReturnType<typeof buildConfig>]).toEqual(value)
  })

  it.each([
    [
      { REGISTRY_COPY_MAX_AGE_SECONDS: '-1' },
      'invalid setting registryCopyMaxAgeSeconds (env REGISTRY_COPY_MAX_AGE_SECONDS): expected an integer from 0 to 315360000, got "-1"'
    ],
    [
      { REGISTRY_COPY_UPDATE_HOURS: '721' },
      'invalid setting registryCopyUpdateHours (env REGISTRY_COPY_UPDATE_HOURS): expected an integer from 0 to 720, got "721"'
    ],
    [
      { REGISTRY_COPY_MAX_BYTES: '1000000' },
      'invalid setting registryCopyMaxBytes (env REGISTRY_COPY_MAX_BYTES): expected 0 or an integer from 67108864 to 1125899906842624, got "1000000"'
    ],
    [
      { REGISTRY_COPY_MIN_FREE_BYTES: 'lots' },
      'invalid setting registryCopyMinFreeBytes (env REGISTRY_COPY_MIN_FREE_BYTES): expected an integer, got "lots"'
    ],
    [
      { REGISTRY_COPY_MAX_RECORD_BYTES: '1024' },
      'invalid setting registryCopyMaxRecordBytes (env REGISTRY_COPY_MAX_RECORD_BYTES): expected an integer from 65536 to 67108864, got "1024"'
    ],
    [
      { REGISTRY_COPY_CITATION_QUEUE: '0' },
      'invalid setting registryCopyCitationQueue (env REGISTRY_COPY_CITATION_QUEUE): expected an integer from 1 to 10000, got "0"'
    ],
    [
      { REGISTRY_COPY_UPDATE_TIMEOUT_MS: '999' },
      'invalid setting registryCopyUpdateTimeoutMs (env REGISTRY_COPY_UPDATE_TIMEOUT_MS): expected an integer from 1000 to 600000, got "999"'
    ],
    [
      { DATACITE_API_URL: 'api.datacite.org' },
      'invalid setting dataciteApiUrl (env DATACITE_API_URL): expected an http(s) URL, got "api.datacite.org"'
    ],
    [
      { REGISTRY_COPY_UPDATE_HOURS: '24' },
      'invalid setting registryCopyUpdateHours (REGISTRY_COPY_UPDATE_HOURS): 24 means something only with REGISTRY_COPY, the copy to update'
    ],
    [
      { REGISTRY_COPY: '/srv/copy', REGISTRY_COPY_UPDATE_HOURS: '24', OFFLINE: 'true' },
      'invalid setting registryCopyUpdateHours (REGISTRY_COPY_UPDATE_HOURS): 24 asks the agencies for updates, which OFFLINE forbids; set 0 offline'
    ]
  ])('%j is refused: %s', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(new ConfigError(message))
  })
})

describe("the copy's directory, checked at start", () => {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-paths-'))
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })
  const empty = join(dir, 'empty')
  mkdirSync(empty)
  const copy = join(dir, 'copy.v1') // a dot in its name: still a directory
  mkdirSync(copy)
  writeFileSync(join(copy, 'data.mdb'), '')

  it('a directory holding data.mdb is a copy; no copy set, nothing to check', () => {
    expect(registryCopyProblem({ registryCopy: copy, registryCopyUpdateHours: 0 })).toBeUndefined()
    expect(registryCopyProblem({ registryCopy: undefined, registryCopyUpdateHours: 0 })).toBeUndefined()
  })

  it('a directory without data.mdb stops the start, saying how to make one', () => {
    const config = buildConfig(undefined, { REGISTRY_COPY: empty, LOCAL_STORE_DIR: '', CACHE_FILE: '' })
    expect(() => checkPaths(config)).toThrow(
      new ConfigError(
        `invalid setting registryCopy (REGISTRY_COPY): ${JSON.stringify(empty)} holds no registry copy (no data.mdb); make one with doi-proxy import --to ${empty}`
      )
    )
  })

  it('a missing directory is refused as any directory to read', () => {
    const config = buildConfig(undefined, { REGISTRY_COPY: join(dir, 'nowhere'), LOCAL_STORE_DIR: '', CACHE_FILE: '' })
    expect(() => checkPaths(config)).toThrow(
      /invalid setting registryCopy \(REGISTRY_COPY\): ".*nowhere" does not exist; it must name a directory it can read/
    )
  })

  // Permissions mean nothing to root (CI): then the check runs as another user (nobody), as test/main-paths.test.ts does.
  it('an updating server needs the copy writable', () => {
    const readOnly = join(dir, 'read-only')
    mkdirSync(readOnly)
    writeFileSync(join(readOnly, 'data.mdb'), '')
    chmodSync(dir, 0o755)
    chmodSync(readOnly, 0o555)
    try {
      expect(problemAsUser(readOnly, 0)).toBeUndefined()
      expect(problemAsUser(readOnly, 6)).toMatch(
        /^cannot be written, and REGISTRY_COPY_UPDATE_HOURS updates it: give the server write access, or set REGISTRY_COPY_UPDATE_HOURS=0 \(a read-only copy\) \(EACCES\)$/
      )
    } finally {
      chmodSync(readOnly, 0o755)
    }
  })
})
