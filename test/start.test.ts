import { spawnSync } from 'node:child_process'
import { existsSync, rmSync, statSync, utimesSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { BUILD_STAMP, buildIsStale } from '../scripts/build-if-stale.js'

// `npm start` builds dist/ when it is missing or older than src/, and only then (scripts/build-if-stale.ts).

const prestart = (): { output: string; status: number | null } => {
  const run = spawnSync('npm', ['run', 'prestart', '--silent'], { encoding: 'utf8', timeout: 280_000 })
  return { output: run.stdout + run.stderr, status: run.status }
}

describe('npm start builds only when dist/ is stale', () => {
  it('without a build stamp (a fresh clone) it builds; run again, it does not', () => {
    rmSync(BUILD_STAMP, { force: true })
    const first = prestart()
    expect(first.status).toBe(0)
    expect(first.output).toContain('running npm run build')
    expect(existsSync('dist/main.js')).toBe(true)
    const stamp = statSync(BUILD_STAMP).mtimeMs
    const second = prestart()
    expect(second.status).toBe(0)
    expect(second.output).not.toContain('running npm run build')
    expect(statSync(BUILD_STAMP).mtimeMs).toBe(stamp)
  }, 300_000) // two runs of tsc on a busy machine

  it('a source newer than the last build makes it stale', () => {
    if (buildIsStale()) prestart()
    expect(buildIsStale()).toBe(false)
    const { atime, mtime } = statSync(BUILD_STAMP)
    try {
      // As if src/main.ts had been edited after the build: the stamp an hour older than it.
      const source = statSync('src/main.ts').mtime
      utimesSync(BUILD_STAMP, atime, new Date(source.getTime() - 3_600_000))
      expect(buildIsStale()).toBe(true)
    } finally {
      utimesSync(BUILD_STAMP, atime, mtime)
    }
    expect(buildIsStale()).toBe(false)
  }, 300_000)
})
