/**
 * `check --allow FILE`: DOIs a project cites before they are registered (a DOI reserved at DataCite or
 * Zenodo, written in CITATION.cff before the release that registers it). An allowed DOI that is not
 * registered is a notice, not a failure; one that is registered by now is a notice too, saying it can
 * leave the list. The file: one DOI a line, in any form check finds (10.1000/182, doi:…, a doi.org link),
 * matched without regard to case; `#` starts a comment (at the line's start or after a space: a DOI may
 * hold a `#`); blank lines are skipped. A line that is not one DOI is a usage error naming file and line.
 */
import { resolve } from 'node:path'
import { cacheKey } from '../../handle/name.js'
import { findDois } from './extract.js'
import { readBounded } from './read-bounded.js'

/** Where a DOI is allowed: the allow file (as named on the command line) and its line. */
export interface Allowed {
  file: string
  line: number
}

/** The DOIs allowed, by cacheKey (case folded), each with the first place that allows it. */
export type AllowList = Map<string, Allowed>

/** An allow file cannot be used: a usage error, its message naming the file (and line). */
export class AllowError extends Error {}

/** The most an allow file may hold (a list of DOIs; a few hundred bytes in practice). */
export const MAX_ALLOW_BYTES = 1024 * 1024

/** What a line says before its comment, trimmed. */
function withoutComment(line: string): string {
  const at = line.search(/(?:^|\s)#/)
  return (at < 0 ? line : line.slice(0, at)).trim()
}

/**
 * Adds the DOIs of one allow file's text to `into` (the first place a DOI is allowed is kept); throws an
 * AllowError naming `file` and the line that is not one DOI.
 */
export function addAllowed(text: string, file: string, into: AllowList): void {
  const lines = text.split(/\r?\n/)
  lines.forEach((raw, i) => {
    const content = withoutComment(raw)
    if (content === '') return
    const found = /\s/.test(content) ? [] : findDois(content, 'text')
    if (found.length !== 1) {
      const shown = content.length > 80 ? `${content.slice(0, 80)}…` : content
      throw new AllowError(
        `--allow ${file}:${i + 1}: ${JSON.stringify(shown)} is not one DOI (one DOI a line, such as 10.5281/zenodo.123; # starts a comment)`
      )
    }
    const key = cacheKey(found[0]!.doi)
    if (!into.has(key)) into.set(key, { file, line: i + 1 })
  })
}

/** The allow files named (relative to cwd), read under the limits of every file check reads. */
export async function readAllowLists(files: readonly string[], cwd: string): Promise<AllowList> {
  const allowed: AllowList = new Map()
  for (const file of files) {
    const read = await readBounded(resolve(cwd, file), MAX_ALLOW_BYTES, true)
    if (read === undefined) throw new AllowError(`--allow ${file}: no such file`)
    if ('reason' in read) throw new AllowError(`--allow ${file}: cannot be used (${read.reason})`)
    addAllowed(read.bytes.toString('utf8'), file, allowed)
  }
  return allowed
}
