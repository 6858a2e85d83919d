/**
 * One registered line of a verifying batch (issue 41): the levels asked, at once. `metadata` compares the
 * cited work with the registered CSL-JSON (handle/verify/compare.ts); `retraction` asks the retraction
 * service; `landing` probes the registered URL (never doi.org), knowing the registered titles when the
 * metadata gives them. A level that cannot be found out says why in its object (a limit refusing the
 * line's admission too); only the reader leaving throws.
 */
import { compareCited } from '../../handle/verify/compare.js'
import type { CitedWork, LandingResult, MetadataResult, RetractionResult, Verification, VerifyLevel } from '../../handle/verify/types.js'
import type { Metrics } from '../../observe/metrics.js'
import type { LandingChecks } from '../landing/landing-checks.js'
import type { Retractions } from '../retraction/retractions.js'
import type { Admit } from '../upstream/fetcher.js'
import type { RegisteredAnswer, RegisteredMetadata } from './registered-metadata.js'

export interface VerifierOptions {
  registered: Pick<RegisteredMetadata, 'workOf'>
  /** The retraction service; undefined: RETRACTIONS_FROM=off. */
  retractions?: Pick<Retractions, 'find'> | undefined
  /** The landing verdicts (cached checks, or offline the recorded ones); undefined: no page is visited. */
  landing?: Pick<LandingChecks, 'check'> | undefined
  metrics: Pick<Metrics, 'verifyVerdicts'>
}

/** One registered line: its DOI (the record's handle), the URL it redirects to, and what its reference cites. */
export interface VerifyRequest {
  doi: string
  url: string | null
  cited: CitedWork | undefined
}

export interface VerifyContext {
  /** The line's admission, memoised by the batch: passed at most once whatever the levels ask. */
  admit: Admit
  signal: AbortSignal
}

const NOTHING_CITED = 'the reference gives no title to compare'

export function createVerifier(opts: VerifierOptions) {
  const { metrics } = opts

  async function verify(req: VerifyRequest, levels: readonly VerifyLevel[], ctx: VerifyContext): Promise<Verification> {
    const asked = new Set(levels)
    const citedTitle = req.cited?.title !== undefined && req.cited.title.trim() !== ''
    // The registered work, fetched once for both levels that read it (landing only for its titles).
    let registered: Promise<RegisteredAnswer> | undefined
    const registeredWork = async (): Promise<RegisteredAnswer> => await (registered ??= opts.registered.workOf(req.doi, ctx.admit))
    const jobs: Array<Promise<void>> = []
    const out: Verification = {}
    if (asked.has('metadata')) {
      jobs.push(
        metadataOf(req, citedTitle, registeredWork, ctx.signal).then((m) => {
          out.metadata = m
        })
      )
    }
    if (asked.has('retraction')) {
      jobs.push(
        retractionOf(opts.retractions, req.doi, ctx).then((r) => {
          out.retraction = r
        })
      )
    }
    if (asked.has('landing')) {
      jobs.push(
        landingOf(opts.landing, req, registeredWork, ctx).then((l) => {
          out.landing = l
        })
      )
    }
    await Promise.all(jobs)
    ctx.signal.throwIfAborted()
    return countedInOrder(out, metrics)
  }

  return { verify }
}

export type Verifier = ReturnType<typeof createVerifier>

/** The levels' results in the order the issue lists them, each verdict counted. */
function countedInOrder(out: Verification, metrics: VerifierOptions['metrics']): Verification {
  const ordered: Verification = {}
  if (out.metadata !== undefined) {
    ordered.metadata = out.metadata
    metrics.verifyVerdicts.inc({ level: 'metadata', verdict: out.metadata?.verdict ?? 'unknown' })
  }
  if (out.retraction !== undefined) {
    ordered.retraction = out.retraction
    metrics.verifyVerdicts.inc({ level: 'retraction', verdict: out.retraction?.verdict ?? 'unknown' })
  }
  if (out.landing !== undefined) {
    ordered.landing = out.landing
    metrics.verifyVerdicts.inc({ level: 'landing', verdict: out.landing?.verdict ?? 'unknown' })
  }
  return ordered
}

/** The metadata level: the cited work compared with the registered one, or why it cannot be. */
async function metadataOf(
  req: VerifyRequest,
  citedTitle: boolean,
  registeredWork: () => Promise<RegisteredAnswer>,
  signal: AbortSignal
): Promise<MetadataResult> {
  // Nothing to compare: no agency is asked.
  if (!citedTitle) return { verdict: 'unverifiable', mismatches: [], why: NOTHING_CITED }
  try {
    const got = await registeredWork()
    return 'work' in got ? compareCited(req.cited ?? {}, got.work) : { verdict: 'unverifiable', mismatches: [], why: got.why }
  } catch (err) {
    signal.throwIfAborted()
    return { verdict: 'unverifiable', mismatches: [], why: `the metadata could not be had: ${messageOf(err)}` }
  }
}

/** The retraction level: the service's answer, or why there is none. */
async function retractionOf(retractions: VerifierOptions['retractions'], doi: string, ctx: VerifyContext): Promise<RetractionResult> {
  if (retractions === undefined) {
    return { verdict: null, notice: null, date: null, error: 'this server looks up no retractions (RETRACTIONS_FROM=off)' }
  }
  try {
    return await retractions.find(doi, { admit: ctx.admit, signal: ctx.signal })
  } catch (err) {
    ctx.signal.throwIfAborted()
    return { verdict: null, notice: null, date: null, error: messageOf(err) }
  }
}

/** The landing level: the registered URL's verdict, or why there is none. */
async function landingOf(
  landing: VerifierOptions['landing'],
  req: VerifyRequest,
  registeredWork: () => Promise<RegisteredAnswer>,
  ctx: VerifyContext
): Promise<LandingResult> {
  const { signal } = ctx
  if (landing === undefined) {
    return {
      verdict: null,
      status: null,
      url: req.url,
      evidence: null,
      error: 'this server visits no landing pages (offline, nothing recorded)'
    }
  }
  if (req.url === null) {
    return { verdict: null, status: null, url: null, evidence: null, error: 'the record gives no URL to visit' }
  }
  // The titles let a page that names the work but not its DOI be `alive`; without them the DOI alone must show.
  let titles: string[] = []
  try {
    const got = await registeredWork()
    if ('work' in got) titles = got.work.titles
  } catch {
    signal.throwIfAborted()
  }
  try {
    return await landing.check(req.doi, req.url, titles, signal, ctx.admit)
  } catch (err) {
    signal.throwIfAborted()
    return { verdict: null, status: null, url: req.url, evidence: null, error: messageOf(err) }
  }
}

function messageOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return message.replace(/\s+/g, ' ').trim().slice(0, 300)
}
