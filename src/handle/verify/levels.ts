import { VERIFY_LEVELS } from './types.js'
import type { VerifyLevel } from './types.js'

/** The longest part of a refused value quoted back: a message never echoes a whole hostile query. */
const QUOTED_MAX = 40

/**
 * The levels of a comma list (`check --verify`, `?verify=`, VERIFY_LEVELS): each of metadata, retraction,
 * landing (spaces around them ignored, each once), in that order whatever the list's; the empty list is
 * none. A string: why the list is refused, naming the word that is not a level.
 */
export function parseVerifyLevels(raw: string): VerifyLevel[] | string {
  const asked = new Set<string>()
  for (const item of raw.split(',')) {
    const word = item.trim()
    if (word === '') continue
    if (!isVerifyLevel(word)) return `${JSON.stringify(word.slice(0, QUOTED_MAX))} is not a verify level (metadata, retraction or landing)`
    asked.add(word)
  }
  return VERIFY_LEVELS.filter((level) => asked.has(level))
}

export function isVerifyLevel(word: string): word is VerifyLevel {
  return (VERIFY_LEVELS as readonly string[]).includes(word)
}
