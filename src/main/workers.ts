import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { defaultWorkers } from './cpu-quota.js'

/** The server processes WORKERS asks for: itself, or for 0 one per core the container may use (cgroup cpu.max, else the machine's). */
export function workerCount (workers: number): number {
  return workers === 0 ? defaultWorkers(readCpuMax(), availableParallelism()) : workers
}

function readCpuMax (): string | undefined {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8')
  } catch {
    return undefined
  }
}
