/**
 * Lets one kind of log line through at most once per interval and says how many were held back.
 * During an upstream outage every request would otherwise log the same failure: thousands of lines
 * a second that say nothing new and cost memory and CPU exactly when the service is busiest.
 * Keys are small fixed sets (error codes), so the map stays small.
 */
export function createLogThrottle (intervalMs: number, now: () => number = Date.now) {
  const last = new Map<string, { at: number, suppressed: number }>()
  return function throttled (key: string, emit: (suppressed: number) => void): void {
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
