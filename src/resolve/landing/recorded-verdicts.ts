import { landingResultOf } from '../../handle/landing/verdict.js'
import type { LandingResult } from '../../handle/verify/types.js'
import type { StoredMetadata } from '../local-store/metadata.js'
import type { Recorder } from '../recording/recorder.js'

/**
 * Landing verdicts recorded and replayed (issue 41): with RECORD_TO each verdict is written beside the
 * DOI's record, as the retraction answers are, under our own media type; with OFFLINE the recorded verdict
 * answers and no page is visited. The URL the probe started from is kept with it: a verdict about another
 * URL is not this record's.
 */
export const LANDING_VERDICT_TYPE = 'application/vnd.doi-proxy.landing-verdict+json'

/** Offline with nothing recorded: a null verdict, "unknown", never a guess. */
export const LANDING_NOT_RECORDED = "offline, and this DOI's landing page was not visited while recording (RECORD_TO)"

/** Writes a probe's verdict (one with a verdict only: a failure to find out is not an answer). */
export function recordLandingVerdict(recorder: Pick<Recorder, 'recordMetadata'>, doi: string, from: string, result: LandingResult): void {
  if (result.verdict === null) return
  const body = JSON.stringify({ from, verdict: result.verdict, status: result.status, url: result.url, evidence: result.evidence })
  recorder.recordMetadata(doi, LANDING_VERDICT_TYPE, { contentType: LANDING_VERDICT_TYPE, body })
}

/** The recorded verdicts as the landing checks' `check` (OFFLINE): read back checked, as Redis's are. */
export function createRecordedLanding(metadata: (handle: string) => StoredMetadata | undefined) {
  return {
    async check(doi: string, url: string): Promise<LandingResult> {
      const entry = metadata(doi)?.get(LANDING_VERDICT_TYPE)
      const unknown: LandingResult = { verdict: null, status: null, url, evidence: null, error: LANDING_NOT_RECORDED }
      if (entry === undefined) return unknown
      let recorded: unknown
      try {
        recorded = JSON.parse(entry.body)
      } catch {
        return { ...unknown, error: 'the recorded landing verdict is not JSON' }
      }
      const result = landingResultOf(recorded)
      if (result === undefined) return { ...unknown, error: 'the recorded landing verdict is not one' }
      return (recorded as { from?: unknown }).from === url ? result : unknown
    }
  }
}
