/**
 * Which DOIs the health checker watches, by prefix (issue 42, plan D9), and the prefix a metric names: every
 * watched prefix by name, the first 100 others (from HEALTH_LIST_FILE or seen) by name too, then `other`, so a
 * list of a million prefixes cannot grow the metrics without bound.
 */

/** The other prefixes named in metrics before the rest share `other`. */
export const PREFIX_LABELS_MAX = 100
export const OTHER_PREFIX = 'other'

/** The prefix of a DOI's key, lower-cased (DOIs are case-insensitive); null for a prefix record (no '/'), never watched. */
export function prefixOfKey(key: string): string | null {
  const slash = key.indexOf('/')
  return slash <= 0 || slash === key.length - 1 ? null : key.slice(0, slash).toLowerCase()
}

/** A test of keys against HEALTH_WATCH: true when the key is a DOI (not a prefix record) of a watched prefix. */
export function watchedBy(prefixes: readonly string[]): (key: string) => boolean {
  const watched = new Set(prefixes.map((prefix) => prefix.toLowerCase()))
  return (key) => {
    const prefix = prefixOfKey(key)
    return prefix !== null && watched.has(prefix)
  }
}

/** The `prefix` label of a metric: watched prefixes and the first `max` others as they are, then `other`. */
export function prefixLabel(watched: readonly string[], max = PREFIX_LABELS_MAX): (prefix: string) => string {
  const named = new Set(watched.map((prefix) => prefix.toLowerCase()))
  const others = new Set<string>()
  return (prefix) => {
    const folded = prefix.toLowerCase()
    if (named.has(folded) || others.has(folded)) return folded
    if (others.size >= max) return OTHER_PREFIX
    others.add(folded)
    return folded
  }
}
