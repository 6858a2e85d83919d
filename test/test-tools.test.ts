import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { findOnPath } from './support/test-tools.js'

// `npm test` on a machine without the programs the tests drive: it stops in seconds with the install line.

/** A PATH of one directory holding node, npm and sh, and `extra` programs (each a script that exits 0). */
function pathWith(extra: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-path-'))
  onTestFinished(() => {
    rmSync(dir, { recursive: true, force: true })
  })
  for (const name of ['node', 'npm', 'sh']) {
    const real = name === 'node' ? process.execPath : findOnPath([name])
    if (real !== undefined) symlinkSync(real, join(dir, name))
  }
  for (const name of extra) {
    writeFileSync(join(dir, name), '#!/bin/sh\nexit 0\n')
    chmodSync(join(dir, name), 0o755)
  }
  return dir
}

const env = (path: string): NodeJS.ProcessEnv => {
  const { CHROMIUM_PATH: _ignored, ...rest } = process.env
  return { ...rest, PATH: path }
}

describe('npm test checks the programs it needs before anything else', () => {
  it('without Chromium, `npm test` fails at once with the line that installs it, before type-checking', () => {
    const started = Date.now()
    const run = spawnSync('npm', ['test'], { env: env(pathWith(['redis-server'])), encoding: 'utf8', timeout: 60_000 })
    const output = run.stdout + run.stderr
    expect(run.status).not.toBe(0)
    expect(output).toContain('apt-get install -y --no-install-recommends chromium')
    expect(output).not.toContain('redis-server:')
    // The check is the pretest step: neither tsc nor vitest ran.
    expect(output).not.toContain('tsc -p tsconfig.json')
    expect(Date.now() - started).toBeLessThan(30_000)
  }, 60_000)

  it('names redis-server and its install line when it is missing too', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-test-tools.ts'], {
      env: env(pathWith([])),
      encoding: 'utf8'
    })
    expect(run.status).toBe(1)
    expect(run.stderr).toContain('apt-get install -y --no-install-recommends chromium')
    expect(run.stderr).toContain('apt-get install -y --no-install-recommends redis-server')
  })

  it('passes quietly when both are on PATH, or Chromium is named by CHROMIUM_PATH', () => {
    const both = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-test-tools.ts'], {
      env: env(pathWith(['chromium', 'redis-server'])),
      encoding: 'utf8'
    })
    expect([both.status, both.stderr]).toEqual([0, ''])
    const named = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-test-tools.ts'], {
      env: { ...env(pathWith(['redis-server'])), CHROMIUM_PATH: '/opt/chrome/chrome' },
      encoding: 'utf8'
    })
    expect([named.status, named.stderr]).toEqual([0, ''])
  })
})

// npm 11 runs a dependency's install script with a warning unless package.json's allowScripts reviews it
// (`--strict-allow-scripts` refuses it): every one in the lock file is named there (README, "Dependencies and why").
describe("the dependencies' install scripts", () => {
  it('each package of package-lock.json that has one is named in allowScripts, and no other', () => {
    const read = (file: string): unknown => JSON.parse(readFileSync(new URL(`../${file}`, import.meta.url), 'utf8'))
    const lock = read('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> }
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
    const { allowScripts } = read('package.json') as { allowScripts: Record<string, boolean> }
    expect(withScripts).toContain('better-sqlite3') // the health history's SQLite (issue 42): built from source here
    expect([...new Set(withScripts)].sort()).toEqual(Object.keys(allowScripts).sort())
  })
})
