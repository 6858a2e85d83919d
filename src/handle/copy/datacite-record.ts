import { compact, copyUrlOf, cslDateOfIso, cslName, cslNames, plainText, secondsOfIso, text } from './csl.js'
import type { CslName } from './csl.js'
import { checkedDoi } from './key.js'
import type { DataciteStateRow, Mapped, MapOptions } from './types.js'

/** CSL 1.0.2's types (csl-data.json): a DataCite `types.citeproc` outside them is not trusted. */
const CSL_TYPES = new Set(
  'article article-journal article-magazine article-newspaper bill book broadcast chapter classic collection dataset document entry entry-dictionary entry-encyclopedia event figure graphic hearing interview legal_case legislation manuscript map motion_picture musical_score pamphlet paper-conference patent performance periodical personal_communication post post-weblog regulation report review review-book software song speech standard thesis treaty webpage'.split(
    ' '
  )
)

/**
 * DataCite Metadata Schema 4.5 `resourceTypeGeneral` → CSL 1.0.2 type, for records whose `types.citeproc` is
 * missing or unknown; the nearest CSL type, `document` when none is near.
 */
export const DATACITE_TYPES: Readonly<Record<string, string>> = {
  Audiovisual: 'motion_picture',
  Book: 'book',
  BookChapter: 'chapter',
  Collection: 'collection',
  ComputationalNotebook: 'software',
  ConferencePaper: 'paper-conference',
  ConferenceProceeding: 'book',
  DataPaper: 'article-journal',
  Dataset: 'dataset',
  Dissertation: 'thesis',
  Event: 'event',
  Image: 'graphic',
  Instrument: 'document',
  InteractiveResource: 'webpage',
  Journal: 'periodical',
  JournalArticle: 'article-journal',
  Model: 'document',
  OutputManagementPlan: 'document',
  PeerReview: 'review',
  PhysicalObject: 'document',
  Preprint: 'article',
  Report: 'report',
  Service: 'webpage',
  Software: 'software',
  Sound: 'song',
  Standard: 'standard',
  StudyRegistration: 'document',
  Text: 'document',
  Workflow: 'software',
  Other: 'document'
}

interface DcName {
  name?: unknown
  nameType?: unknown
  givenName?: unknown
  familyName?: unknown
  contributorType?: unknown
}

// A Personal name without its parts is "Family, Given" (DataCite schema 4.5, creatorName); an Organizational one is a literal.
const dcName = (n: DcName): CslName | undefined => {
  if (text(n.familyName) !== undefined) return cslName(n.familyName, n.givenName, undefined)
  const name = text(n.name)
  if (name !== undefined && n.nameType === 'Personal' && name.includes(', ')) {
    const [family, ...given] = name.split(', ')
    return cslName(family, given.join(', '), undefined)
  }
  return cslName(undefined, undefined, name)
}

/**
 * DataCite's records as copy records: a JSON line of its data file or an item of a REST page (`{id, type:
 * "dois", attributes}` or bare attributes): `url`, `updated` as the stamp, the attributes mapped to CSL-JSON
 * field by field. Never throws.
 */
export function dataciteRecordOf(line: unknown, opts: MapOptions): Mapped {
  if (line === null || typeof line !== 'object' || Array.isArray(line)) return 'the item is not a DataCite record (an object)'
  const o = line as Record<string, unknown>
  const a = (o.attributes !== null && typeof o.attributes === 'object' && !Array.isArray(o.attributes) ? o.attributes : o) as Record<
    string,
    unknown
  >
  const checked = checkedDoi(a.doi ?? o.id)
  if ('problem' in checked) return checked.problem
  const doi = checked.doi
  const stamp = secondsOfIso(a.updated) ?? secondsOfIso(a.registered) ?? secondsOfIso(a.created)
  if (stamp === undefined) return `${doi}: the record has no date (updated, registered or created)`
  const state = typeof a.state === 'string' ? a.state.toLowerCase() : 'findable'
  if (state === 'draft') return `${doi}: a draft DOI is not registered`
  // A Registered DOI resolves but its URL is not public (DataCite support, "DOI states").
  if (state === 'registered' && text(a.url) === undefined) return { doi, kind: 'registered', agency: 'datacite', stamp }
  const url = copyUrlOf(a.url, opts.schemes)
  if ('problem' in url) return `${doi}: ${url.problem}`
  const { csl, abstractDropped } = dataciteCsl(a, doi, opts)
  return { doi, kind: 'work', agency: 'datacite', url: url.url, stamp, csl, ...(abstractDropped ? { abstractDropped } : {}) }
}

/** The attributes' CSL-JSON (CSL 1.0.2 variables); each line names the DataCite field (schema 4.5) it reads. */
export function dataciteCsl(
  a: Record<string, unknown>,
  doi: string,
  opts: MapOptions
): { csl: Record<string, unknown>; abstractDropped: boolean } {
  const types = (a.types ?? {}) as { citeproc?: unknown; resourceTypeGeneral?: unknown }
  const type =
    typeof types.citeproc === 'string' && CSL_TYPES.has(types.citeproc)
      ? types.citeproc
      : (DATACITE_TYPES[typeof types.resourceTypeGeneral === 'string' ? types.resourceTypeGeneral : 'Other'] ?? 'document')
  const titles = listOf<{ title?: unknown; titleType?: unknown }>(a.titles)
  const title = plainText(titles.find((t) => t.titleType === undefined || t.titleType === null)?.title ?? titles[0]?.title)
  const subtitle = plainText(titles.find((t) => t.titleType === 'Subtitle')?.title)
  const dates = listOf<{ date?: unknown; dateType?: unknown }>(a.dates)
  const container = (a.container ?? {}) as Record<string, unknown>
  const first = text(container.firstPage)
  const last = text(container.lastPage)
  const abstract = plainText(
    listOf<{ description?: unknown; descriptionType?: unknown }>(a.descriptions).find((d) => d.descriptionType === 'Abstract')?.description
  )
  const publisher = typeof a.publisher === 'object' && a.publisher !== null ? (a.publisher as { name?: unknown }).name : a.publisher
  const csl = compact({
    id: doi,
    type, // types.citeproc, else resourceTypeGeneral by table
    DOI: doi,
    URL: `https://doi.org/${doi}`,
    title: title !== undefined && subtitle !== undefined && subtitle !== title ? `${title}: ${subtitle}` : title, // titles (no titleType), titleType Subtitle
    author: cslNames<DcName>(a.creators, dcName), // creators
    editor: cslNames<DcName>(
      listOf<DcName>(a.contributors).filter((c) => c.contributorType === 'Editor'),
      dcName
    ), // contributors, Editor
    issued: cslDateOfIso(dates.find((d) => d.dateType === 'Issued')?.date) ?? cslDateOfIso(a.publicationYear), // dates Issued, else publicationYear
    'container-title': text(container.title), // container.title
    volume: text(container.volume),
    issue: text(container.issue),
    page: first !== undefined && last !== undefined ? `${first}-${last}` : first, // container.firstPage–lastPage
    publisher: text(publisher), // publisher: a string, or {name} (REST API ?publisher=true)
    abstract: opts.abstracts ? abstract : undefined, // descriptions, Abstract
    version: text(a.version),
    language: text(a.language),
    source: 'DataCite'
  })
  return { csl, abstractDropped: !opts.abstracts && abstract !== undefined }
}

function listOf<T>(raw: unknown): T[] {
  return Array.isArray(raw) ? (raw.filter((x) => x !== null && typeof x === 'object') as T[]) : []
}

/**
 * A row of DataCite's DOI/state CSV (`doi,state,client_id,updated`) as a record: a Registered DOI as a
 * `registered` record; undefined for a Findable one (its JSON line brings it) or a draft (not a DOI yet).
 */
export function dataciteStateOf(row: DataciteStateRow): Mapped | undefined {
  const checked = checkedDoi(row.doi)
  if ('problem' in checked) return checked.problem
  const state = (row.state ?? '').trim().toLowerCase()
  if (state === 'findable' || state === 'draft') return undefined
  if (state !== 'registered') return `${checked.doi}: unknown state ${JSON.stringify((row.state ?? '').slice(0, 40))}`
  const stamp = secondsOfIso(row.updated)
  if (stamp === undefined) return `${checked.doi}: the row has no updated date`
  return { doi: checked.doi, kind: 'registered', agency: 'datacite', stamp }
}
