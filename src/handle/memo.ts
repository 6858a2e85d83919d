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

/**
 * A cache for the hottest keys (any kind, compared by identity) without per-hit bookkeeping: entries
 * live in a current generation; when it is full it becomes the previous one and the one before is
 * dropped; a hit in the previous generation moves the entry back into the current one. So at most
 * 2 × limit entries are held, and what is used keeps living.
 */
export function createHotCache<K, V> (limit: number) {
  let current = new Map<K, V>()
  let previous = new Map<K, V>()
  function set (key: K, value: V): void {
    if (current.size >= limit) {
      previous = current
      current = new Map()
    }
    current.set(key, value)
  }
  return {
    get (key: K): V | undefined {
      const hit = current.get(key)
      if (hit !== undefined) return hit
      const old = previous.get(key)
      if (old !== undefined) set(key, old)
      return old
    },
    set
  }
}
