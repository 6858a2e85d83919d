/**
 * A memo for answers that depend only on a string key: bounded, and emptied at once when full (one
 * recomputation per key afterwards, no LRU bookkeeping on the hot path). For pure functions only.
 */
export function boundedMemo<V> (limit: number, compute: (key: string) => V): (key: string) => V {
  const known = new Map<string, V>()
  return (key) => {
    const hit = known.get(key)
    if (hit !== undefined) return hit
    const value = compute(key)
    if (known.size >= limit) known.clear()
    known.set(key, value)
    return value
  }
}
