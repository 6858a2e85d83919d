/**
 * How many cores a container may use, from cgroup v2's `cpu.max` ("QUOTA PERIOD", or "max PERIOD"
 * for no limit). `os.availableParallelism()` counts the host's cores and ignores the quota, so a
 * container limited to 2 CPUs on a 64-core host would otherwise start 64 workers.
 * Pure: main.ts reads the file and passes its text.
 */
export function cpusFromCgroup(cpuMax: string | undefined): number | undefined {
  if (cpuMax === undefined) return undefined
  const m = /^\s*(max|\d+)\s+(\d+)\s*$/.exec(cpuMax)
  if (m === null || m[1] === 'max') return undefined
  const quota = Number(m[1])
  const period = Number(m[2])
  if (!(quota > 0) || !(period > 0)) return undefined
  // 1.5 CPUs is one worker busy and half a core for the rest (GC, the primary): round down, at least 1.
  return Math.max(1, Math.floor(quota / period))
}

/** WORKERS=0: the container's quota when it has one, else the cores we may run on. */
export function defaultWorkers(cpuMax: string | undefined, availableParallelism: number): number {
  return Math.max(1, Math.min(cpusFromCgroup(cpuMax) ?? availableParallelism, availableParallelism))
}
