import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { memoryWarning, memoryWarningMessage } from '../../src/main/memory-limit.js'
import type { MemoryWarning } from '../../src/main/memory-limit.js'
import { startServer, workersListening } from '../support/server-process.js'

// A record cache larger than the container's memory allows: a warning at start (src/main/memory-limit.ts).
const MIB = 1024 * 1024
const DEFAULT_CACHE = 256 * MIB
const warning = (limitMiB: number, workers: number, cacheMaxBytes: number, suggestedMiB: number | undefined): MemoryWarning => ({
  limitMiB,
  workers,
  cacheMaxBytes,
  suggestedCacheMaxBytes: suggestedMiB === undefined ? undefined : suggestedMiB * MIB
})

describe('whether the record cache fits in the memory limit', () => {
  const vectors: Array<{ why: string; limit: number | undefined; workers: number; cache: number; expected: MemoryWarning | undefined }> = [
    // No limit, as process.constrainedMemory() says it: undefined (Node 18), 0 (the docs from Node 22), 2^64 (Node 20 here).
    { why: 'no limit: undefined', limit: undefined, workers: 1, cache: DEFAULT_CACHE, expected: undefined },
    { why: 'no limit: 0', limit: 0, workers: 1, cache: DEFAULT_CACHE, expected: undefined },
    { why: 'no limit: 2^64', limit: 2 ** 64, workers: 1, cache: DEFAULT_CACHE, expected: undefined },
    // An unlimited cgroup v1 reads 2^63 − 4096 (PAGE_COUNTER_MAX pages).
    { why: 'no limit: an unlimited cgroup v1', limit: 9223372036854771712, workers: 1, cache: DEFAULT_CACHE, expected: undefined },
    // Measured: the default cache in 400 MiB died of heap out of memory after ~110,000 DOIs; (400 − 128) / 3 = 90.67.
    {
      why: 'the default cache in 400 MiB',
      limit: 400 * MIB,
      workers: 1,
      cache: DEFAULT_CACHE,
      expected: warning(400, 1, DEFAULT_CACHE, 90)
    },
    // Measured: 64 MiB in 400 MiB served 160,000 DOIs, RssAnon flat at ~215 MiB; 128 + 3 × 64 = 320.
    { why: '64 MiB in 400 MiB', limit: 400 * MIB, workers: 1, cache: 64 * MIB, expected: undefined },
    // The model's edge: exactly 128 + 3 × cache fits, a byte less does not (and the suggestion rounds down).
    { why: 'exactly the need', limit: 320 * MIB, workers: 1, cache: 64 * MIB, expected: undefined },
    { why: 'a byte short', limit: 320 * MIB - 1, workers: 1, cache: 64 * MIB, expected: { ...warning(319, 1, 64 * MIB, 63) } },
    // Each worker holds a whole cache: two need twice; the suggestion is per worker, (1024 / 2 − 128) / 3 = 128.
    { why: 'two workers in 1 GiB', limit: 1024 * MIB, workers: 2, cache: DEFAULT_CACHE, expected: warning(1024, 2, DEFAULT_CACHE, 128) },
    { why: 'two workers in 2 GiB', limit: 2048 * MIB, workers: 2, cache: DEFAULT_CACHE, expected: undefined },
    // The smallest suggestion is 1 MiB: (131 − 128) / 3.
    { why: 'room for 1 MiB', limit: 131 * MIB, workers: 1, cache: 16 * MIB, expected: warning(131, 1, 16 * MIB, 1) },
    // Less than 1 MiB of cache left over each worker's 128 MiB: no suggestion (the limit is too small).
    { why: 'room for less than 1 MiB', limit: 130 * MIB, workers: 1, cache: 16 * MIB, expected: warning(130, 1, 16 * MIB, undefined) },
    {
      why: 'too many workers for the limit',
      limit: 256 * MIB,
      workers: 2,
      cache: 64 * MIB,
      expected: warning(256, 2, 64 * MIB, undefined)
    },
    { why: 'a limit below one worker', limit: 100 * MIB, workers: 1, cache: 1024, expected: warning(100, 1, 1024, undefined) }
  ]
  for (const v of vectors) {
    it(v.why, () => {
      expect(memoryWarning(v.limit, v.workers, v.cache)).toEqual(v.expected)
    })
  }
})

describe('what the warning says', () => {
  it('names the limit, the setting and the value to set', () => {
    const text = memoryWarningMessage(warning(400, 1, DEFAULT_CACHE, 90))
    expect(text).toContain('the record cache may not fit in the memory limit (400 MiB for the server, CACHE_MAX_BYTES=268435456)')
    expect(text).toContain('out-of-memory error')
    expect(text).toContain('set CACHE_MAX_BYTES=94371840 (90 MiB) or less')
  })

  it('says when the limit is too small for the workers whatever the cache', () => {
    const text = memoryWarningMessage(warning(256, 2, 64 * MIB, undefined))
    expect(text).toContain('256 MiB is too small for 2 workers')
    expect(text).toContain('lower WORKERS or raise the limit')
    expect(text).not.toContain('set CACHE_MAX_BYTES')
  })
})

// The real entry point in a memory cgroup (v1, as on this machine; Docker's --memory makes one too).
// Making a cgroup needs root and a writable v1 memory controller: skipped without them (CI as a user).
const CGROUP_BASE = '/sys/fs/cgroup/memory'
const cgroupWritable = ((): boolean => {
  if (!existsSync(join(CGROUP_BASE, 'memory.limit_in_bytes'))) return false
  try {
    accessSync(CGROUP_BASE, constants.W_OK)
    return true
  } catch {
    return false
  }
})()

let cgroups = 0
/** A memory cgroup of `mib` MiB, and the wrap that runs a command in it; removed (its processes killed) when the test ends. */
function memoryCgroup(mib: number): readonly string[] {
  const dir = join(CGROUP_BASE, `doi-proxy-test-${process.pid}-${++cgroups}`)
  mkdirSync(dir)
  writeFileSync(join(dir, 'memory.limit_in_bytes'), String(mib * MIB))
  onTestFinished(async () => {
    // Only our server's processes are in it (the cgroup is this test's).
    for (let i = 0; i < 100; i++) {
      const pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)
      if (pids.length === 0) break
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {} // already gone
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    rmdirSync(dir)
  })
  // The shell joins the cgroup, then becomes the server (exec: the same pid; its workers are forked into it).
  return ['sh', '-c', `echo $$ > ${dir}/cgroup.procs && exec "$@"`, 'sh']
}

interface LogLine {
  level: number
  msg: string
  setting?: string
  memoryLimitMiB?: number
  workers?: number
  suggested?: number
}
const WARNING = 'the record cache may not fit in the memory limit'
const memoryWarnings = (output: string): LogLine[] =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => l.msg.includes(WARNING))

describe.skipIf(!cgroupWritable)('the server in a memory-limited container (root: a cgroup v1 of its own)', () => {
  it('warns at start that the default cache does not fit in 400 MiB, and what to set', { timeout: 60_000 }, async () => {
    const wrap = memoryCgroup(400)
    const { output } = await startServer({ WORKERS: '1', LOG_FORMAT: 'json' }, { wrap })
    const lines = memoryWarnings(output())
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 40, setting: 'CACHE_MAX_BYTES', memoryLimitMiB: 400, workers: 1, suggested: 90 * MIB })
  })

  it('says nothing when the cache fits', { timeout: 60_000 }, async () => {
    const wrap = memoryCgroup(400)
    const { output } = await startServer({ WORKERS: '1', LOG_FORMAT: 'json', CACHE_MAX_BYTES: String(64 * MIB) }, { wrap })
    expect(memoryWarnings(output())).toEqual([])
  })

  it('with WORKERS, warns once from the primary, counting every worker’s cache', { timeout: 90_000 }, async () => {
    const wrap = memoryCgroup(1024)
    const started = await startServer({ WORKERS: '2', LOG_FORMAT: 'json' }, { wrap })
    await workersListening(started, 2)
    const lines = memoryWarnings(started.output())
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ memoryLimitMiB: 1024, workers: 2, suggested: 128 * MIB })
  })
})
