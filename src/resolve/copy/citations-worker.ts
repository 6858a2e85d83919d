import { createRequire } from 'node:module'
import { parentPort } from 'node:worker_threads'

/**
 * The formatter thread of citations.ts: formats one bibliography at a time (citeproc-js through
 * @citation-js/plugin-csl, 5–35 ms an entry, its first one ~0.5 s) so the server's event loop never runs
 * citeproc. citation-js is loaded on the first job, never before. The CSL it gets was cleaned and capped by
 * citations.ts; whatever citation-js throws is sent back as a message, never left to kill the thread.
 */

export interface BibliographyJob {
  id: number
  csl: Record<string, unknown>
  style: string
  locale: string
}

export type BibliographyReply = { id: number; body: string } | { id: number; error: string }

interface Cite {
  format(name: 'bibliography', options: { format: 'text'; template: string; lang: string }): string
}
type CiteClass = new (data: unknown, options: { forceType: string }) => Cite

let citeClass: CiteClass | undefined

function load(): CiteClass {
  if (citeClass === undefined) {
    const require = createRequire(import.meta.url)
    const core = require('@citation-js/core') as { Cite: CiteClass }
    require('@citation-js/plugin-csl')
    citeClass = core.Cite
  }
  return citeClass
}

function format(job: BibliographyJob): BibliographyReply {
  try {
    const cite = new (load())(job.csl, { forceType: '@csl/object' })
    return { id: job.id, body: cite.format('bibliography', { format: 'text', template: job.style, lang: job.locale }) }
  } catch (err) {
    return { id: job.id, error: err instanceof Error ? err.message.slice(0, 300) : 'the formatter failed' }
  }
}

parentPort?.on('message', (job: BibliographyJob) => {
  parentPort?.postMessage(format(job))
})
