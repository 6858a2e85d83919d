import { baseType, chooseStoredType } from '../../handle/metadata-types.js'
import { cacheKey } from '../../handle/name.js'
import type { Csl } from '../../handle/copy/types.js'
import type { CopyTier } from './tier.js'

/**
 * Negotiated answers from the registry copy's metadata (issue 43, plan-43 §1.10): CSL-JSON as the copy holds
 * it (mapped at import), and, when a formatter is given, the other formats it renders from that CSL
 * (BibTeX, RIS, `text/x-bibliography` in the styles it holds: src/resolve/copy/citations.ts, wired by
 * src/services/copy.ts). Which type a request gets is the stored metadata's rule (chooseStoredType,
 * docs/metadata.md): the types offered are CSL-JSON and the formatter's.
 */

export const CSL_JSON = 'application/vnd.citationstyles.csl+json'

/** The citation formatter's shape (citations.ts' createCitations): the media types it renders, and the rendering. */
export interface CitationFormatter {
  /** Media types, with their parameters as a request names them (`text/x-bibliography; style=apa`). */
  readonly formats: readonly string[]
  /** The same as a 406 names them to a reader (each style once, not every combination with a locale); default `formats`. */
  readonly held?: readonly string[]
  /** The CSL rendered as `type` (the base media type) with `params` (style, locale…); rejects when it cannot (a full queue: 503). */
  render(csl: Csl, type: string, params: Readonly<Record<string, string>>): Promise<{ contentType: string; body: string | Buffer }>
}

/** A metadata body and its type: at once for CSL-JSON, later for a formatted one. */
export interface CopyMetadataBody {
  contentType: string
  body: string | Buffer
}

/** What the copy answers to a negotiated request. */
export type CopyMetadataAnswer =
  /** The copy holds no metadata for the handle: the route goes on as without a copy. */
  | { kind: 'none' }
  /** It holds metadata, but no type asked for (Accept) is one it offers: `offered` names those (as `held`). */
  | { kind: 'not-acceptable'; offered: readonly string[] }
  | { kind: 'answer'; answer: CopyMetadataBody | Promise<CopyMetadataBody> }

export interface CopyMetadata {
  /** The types offered, CSL-JSON first, with every parameter set a request may name. */
  readonly offered: readonly string[]
  /** The types offered as a reader is told them (a 406): CSL-JSON, then the formatter's `held`. */
  readonly held: readonly string[]
  answer(handle: string, accept: string | readonly string[] | undefined): CopyMetadataAnswer
}

export function copyMetadata(tier: Pick<CopyTier, 'csl'>, citations?: CitationFormatter | undefined): CopyMetadata {
  const offered = [CSL_JSON, ...(citations?.formats ?? []).filter((f) => baseType(f) !== CSL_JSON)]
  const held = [CSL_JSON, ...(citations?.held ?? citations?.formats ?? []).filter((f) => baseType(f) !== CSL_JSON)]
  return {
    offered,
    held,
    answer(handle, accept) {
      const csl = tier.csl(handle, cacheKey(handle))
      if (csl === undefined) return { kind: 'none' }
      const type = chooseStoredType(accept, offered)
      if (type === undefined) return { kind: 'not-acceptable', offered: held }
      const base = baseType(type)
      if (base === CSL_JSON || citations === undefined) {
        return { kind: 'answer', answer: { contentType: `${CSL_JSON}; charset=utf-8`, body: JSON.stringify(csl) } }
      }
      return { kind: 'answer', answer: citations.render(csl, base, paramsOf(type)) }
    }
  }
}

/** A media type's parameters (`; style=apa; locale="en-US"`), names lower-cased, quotes dropped. */
export function paramsOf(type: string): Record<string, string> {
  const params: Record<string, string> = {}
  for (const part of type.split(';').slice(1)) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const name = part.slice(0, eq).trim().toLowerCase()
    const value = part
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
    if (name !== '') params[name] = value
  }
  return params
}
