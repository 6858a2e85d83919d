/**
 * Cores for the servers under test and for everything else. On 2 shared cores the scheduler puts a
 * server, wrk and the fake upstream wherever it likes, and moves them: a server that shares its core
 * with wrk for a round loses that round. Pinned, every server under test runs on the same core, and the
 * load generator, the fake upstream and the runner on the other(s), so no server's figure depends on where
 * wrk happened to run. (The host's own noise stays: bench/README.md, "Pinned cores"; bench/count.ts counts
 * instead of timing.)
 */
import { spawnSync } from 'node:child_process'
import { availableParallelism } from 'node:os'

export interface Pinning {
  /** The core list (taskset -c) of the servers under test: ours, the floors, nginx. */
  servers: string
  /** The core list of the runner and what it starts besides them: wrk, the fake upstream, the agencies. */
  others: string
}

let current: Pinning | undefined

/** Whether `taskset` (util-linux) runs here. */
function tasksetWorks(): boolean {
  const r = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' })
  return r.error === undefined && r.status === 0
}

/**
 * Pin from now on: this process (and so every child it starts later) to every core but the last, the
 * servers under test (`serverPrefix`) to the last. Returns why not when it cannot: fewer than 2 cores,
 * or no taskset.
 */
export function pinCores(cores = availableParallelism()): Pinning | string {
  if (cores < 2) return 'one core: nothing to pin'
  if (!tasksetWorks()) return 'taskset is not installed (util-linux): not pinned'
  const last = cores - 1
  const pinning = { servers: String(last), others: last === 1 ? '0' : `0-${last - 1}` }
  // -a: every thread of the runner, its worker threads and libuv's included.
  const r = spawnSync('taskset', ['-a', '-p', '-c', pinning.others, String(process.pid)], { stdio: 'ignore' })
  if (r.status !== 0) return 'taskset could not pin the runner: not pinned'
  current = pinning
  return pinning
}

/** What a server under test's command runs under: `taskset -c <servers>` when pinned, nothing otherwise. */
export function serverPrefix(): readonly string[] | undefined {
  return current === undefined ? undefined : ['taskset', '-c', current.servers]
}

/** How RESULTS.md says it. */
export function describePinning(p: Pinning | string): string {
  return typeof p === 'string'
    ? `cores not pinned (${p})`
    : `pinned cores (taskset): every server under test on core ${p.servers}, alone; the runner, the load generator and the fake upstream on core ${p.others}`
}
