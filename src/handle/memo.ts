import { LRUCache } from 'lru-cache'

/**
 * A memo for answers that depend only on a string key: bounded, least recently used out first
 * (lru-cache). For pure functions only. An undefined answer is not kept: it is computed again each time.
 */
export function boundedMemo<V>(limit: number, compute: (key: string) => V): (key: string) => V {
  const known = new LRUCache<string, V & {}>({ max: limit })
  return (key) => {
    const hit = known.get(key)
    if (hit !== undefined) return hit
    const value = compute(key)
    known.set(key, value as V & {}) // set(key, undefined) keeps nothing, which is right for an undefined answer
    return value
  }
}
