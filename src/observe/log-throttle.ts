/**
 * Lets one kind of log line through at most once per interval and says how many were held back.
 * During an upstream outage every request would otherwise log the same failure: thousands of lines
 * a second that say nothing new and cost memory and CPU exactly when the service is busiest.
 * Keys are small fixed sets (error codes), so the map stays small.
 */
export function createLogThrottle(intervalMs: number, now: () => number = Date.now) {
  const last = new Map<string, { at: number; suppressed: number }>()
  return function throttled(key: string, emit: (suppressed: number) => void): void {
    const at = now()
    const entry = last.get(key)
    if (entry !== undefined && at - entry.at < intervalMs) {
      entry.suppressed++
      return
    }
    emit(entry?.suppressed ?? 0)
    last.set(key, { at, suppressed: 0 })
  }
}

/**
 * Changes of a state (a connection lost, regained): each kind is logged as it happens, at most once per
 * interval; the changes held back meanwhile are told together in one line when that interval ends
 * (`summary`: how many of each kind). So every change is logged at least once, however close the next
 * one comes, and a connection that flaps costs a few lines per interval, not one per flap.
 */
export function createChangeLog<K extends string>(
  intervalMs: number,
  summary: (held: Partial<Record<K, number>>) => void,
  now: () => number = Date.now
) {
  const lastAt = new Map<K, number>()
  let held: Partial<Record<K, number>> = {}
  let timer: NodeJS.Timeout | undefined
  function flush(): void {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    const told = held
    held = {}
    if (Object.keys(told).length > 0) summary(told)
  }
  return {
    change(kind: K, emit: () => void): void {
      const at = now()
      const last = lastAt.get(kind)
      if (last === undefined || at - last >= intervalMs) {
        lastAt.set(kind, at)
        emit()
        return
      }
      held[kind] = (held[kind] ?? 0) + 1
      if (timer === undefined) {
        timer = setTimeout(flush, last + intervalMs - at)
        timer.unref() // a process that is ending says what it held in flush(), called as it closes
      }
    },
    /** Tell what is held now (the process is closing). */
    flush
  }
}
