/**
 * The lines of a batch (POST /api/batch, docs/checking-dois.md): which lines are DOIs to look up, in
 * every form `/{doi}` accepts. Pure: the route reads the body, the resolver looks the names up.
 */
import { RESOLVER_URL, handleFromPath } from './name.js'
import { isDoiName } from './ra.js'

/**
 * One entry of a batch: a name to look up, or why it is not one. Every line that is not a DOI name (empty,
 * malformed, too long, or well-formed but not a DOI) is answered alike, without any lookup.
 */
export type BatchLine =
  | { kind: 'doi', input: string, handle: string }
  | { kind: 'invalid', input: string, message: string }

/**
 * The entries of a text/plain body: one a line (LF or CRLF), blank lines and lines starting with '#'
 * skipped. A CR anywhere but at the end stays in its line, where it is a control character, refused.
 */
export function textEntries (body: string): string[] {
  const entries: string[] = []
  for (const raw of body.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    const trimmed = line.trim()
    if (trimmed === '' || trimmed.startsWith('#')) continue
    entries.push(line)
  }
  return entries
}

/**
 * One entry as `GET /{entry}` reads its path (percent-decoding once; doi:, urn:doi:, info:doi/ and resolver
 * URLs stripped; behaviour.md §2), except that a pasted resolver URL's ?query and #fragment are dropped:
 * a batch answers for the plain DOI. A name that is neither a DOI (10.prefix/suffix) nor a shortDOI
 * (10/abc) is refused here, so no lookup is spent on it.
 */
export function parseBatchLine (input: string, maxLength: number): BatchLine {
  const trimmed = input.trim()
  if (trimmed === '') return { kind: 'invalid', input, message: 'not a DOI name: the line is empty' }
  const path = RESOLVER_URL.test(trimmed) ? trimmed.replace(/[?#].*$/s, '') : trimmed
  const parsed = handleFromPath(`/${path}`, { maxLength })
  if (!parsed.ok) return { kind: 'invalid', input, message: `not a DOI name: ${parsed.message}` }
  const { handle } = parsed
  if (handle === '') return { kind: 'invalid', input, message: 'not a DOI name: the line has no name after its prefix' }
  if (!isDoiName(handle) && !SHORT_DOI.test(handle)) {
    return { kind: 'invalid', input, message: `not a DOI name: ${JSON.stringify(clip(handle))} does not start with 10. and a prefix (10.1000/x) or 10/ (a shortDOI)` }
  }
  return { kind: 'doi', input, handle }
}

// shortDOI.org's names live under the handle prefix 10 and alias a DOI (https://shortdoi.org/).
const SHORT_DOI = /^10\/[^/]+$/

/** A name quoted in a message is at most 80 characters: the message stays one short line. */
function clip (s: string): string {
  return s.length <= 80 ? s : `${s.slice(0, 79)}…`
}
