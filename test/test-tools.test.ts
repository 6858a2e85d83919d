import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
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
