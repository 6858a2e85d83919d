/**
 * What `doi-proxy check --verify` prints (issue 41): besides whether each DOI is registered, each problem
 * its verification found (the work it names, a retraction, its landing page) on the DOI's file:line with
 * the evidence, in text, JSON, JUnit XML or GitHub Actions workflow commands. A problem whose verdict is in
 * `--fail-on` is an error (and fails the run), every other one a warning. Pure, as report.ts: everything a
 * file, a server or a page wrote passes through visible() and then the format's own escaping.
 */
import { failuresOf } from '../../handle/verify/fail-on.js'
import type { FailOn, FailReason } from '../../handle/verify/fail-on.js'
import type { LandingResult, Mismatch, RetractionResult, VerifyLevel } from '../../handle/verify/types.js'
import {
  allowedCase,
  allowedFields,
  data,
  json,
  junitDocument,
  lineStart,
  notice,
  noticeCommand,
  operatorNotes,
  problem as registrationProblem,
  property,
  summaryLine,
  xml
} from './report.js'
import type { Checked, Format, Summary } from './report.js'
import { visible } from './visible.js'

/** One thing to say of a DOI found: its message, the annotation's title, and the --fail-on name it would fail under. */
export interface Problem {
  message: string
  title: string
  /** The `--fail-on` name this problem is; undefined for one that never fails (a correction, a bot wall). */
  reason?: FailOn
  /** A notice rather than a warning: what an allow list (--allow) makes of its DOI. */
  notice?: true
}

/** The verdicts over the places checked, per level verified (places, as the summary counts them). */
export interface VerifiedSummary extends Summary {
  verified: Partial<Record<VerifyLevel, Record<string, number>>>
}

/** The problems of one DOI found, registration first, then metadata, retraction and landing. */
export function problemsOf(c: Checked): Problem[] {
  const out: Problem[] = []
  const allowed = notice(c)
  if (allowed !== undefined) out.push({ ...allowed, notice: true })
  const registration = registrationProblem(c)
  if (registration !== undefined) {
    const unregistered = c.verdict.registered === false
    out.push({
      message: registration,
      title: unregistered ? 'DOI not registered' : 'DOI not checked',
      reason: unregistered ? 'unregistered' : 'unknown'
    })
  }
  const { metadata, retraction, landing } = c.verdict
  if (metadata?.verdict === 'mismatch') {
    const title = metadata.mismatches.find((m) => m.field === 'title')
    const others = metadata.mismatches.filter((m) => m !== title).map(differs)
    if (title !== undefined || metadata.kind === 'other-work') {
      const names =
        title === undefined ? 'names another work' : `names another work: cited "${title.cited}", registered "${title.registered}"`
      out.push({ message: [`${c.doi} ${names}`, ...others].join('; '), title: 'DOI names another work', reason: 'mismatch' })
    } else {
      out.push({
        message: `${c.doi} details differ (the title matches): ${others.join('; ')}`,
        title: 'Reference details differ',
        reason: 'mismatch'
      })
    }
  } else if (metadata?.verdict === 'unverifiable' && c.cited?.title !== undefined) {
    // Only where a title was cited: a DOI in running text has nothing to compare, and says so in the summary.
    out.push({ message: `${c.doi} metadata could not be compared: ${metadata.why ?? 'no reason given'}`, title: 'Metadata not compared' })
  }
  const r = retractionProblem(c.doi, retraction)
  if (r !== undefined) out.push(r)
  const l = landingProblem(c.doi, landing)
  if (l !== undefined) out.push(l)
  return out
}

function differs(m: Mismatch): string {
  const field = m.field === 'author' ? 'first author' : m.field
  const value = (v: string | number): string => (typeof v === 'number' ? String(v) : `"${v}"`)
  return `${field} cited ${value(m.cited)}, registered ${value(m.registered)}`
}

function retractionProblem(doi: string, r: RetractionResult | null | undefined): Problem | undefined {
  if (r === null || r === undefined || r.verdict === 'none') return undefined
  if (r.verdict === null) {
    return {
      message: `${doi}: whether it was retracted could not be checked: ${r.error}`,
      title: 'Retraction not checked',
      reason: 'unknown'
    }
  }
  const notice = `notice ${r.notice ?? 'without a DOI'}${r.date === null ? '' : ` on ${r.date}`}`
  switch (r.verdict) {
    case 'retracted':
      return { message: `${doi} is retracted: ${notice}`, title: 'Work retracted', reason: 'retracted' }
    case 'corrected':
      return { message: `${doi} has a correction: ${notice}`, title: 'Work corrected' }
    case 'expression-of-concern':
      return { message: `${doi} has an expression of concern: ${notice}`, title: 'Expression of concern' }
  }
}

function landingProblem(doi: string, l: LandingResult | null | undefined): Problem | undefined {
  if (l === null || l === undefined || l.verdict === 'alive') return undefined
  if (l.verdict === null) {
    return { message: `${doi} landing page could not be checked: ${l.error}`, title: 'Landing page not checked', reason: 'unknown' }
  }
  const at = unsaid(l)
  switch (l.verdict) {
    case 'dead':
      return { message: `${doi} landing page is dead: ${l.evidence}${at}`, title: 'Landing page dead', reason: 'dead' }
    case 'unconfirmed':
      return {
        message: `${doi} landing page does not name the work: ${l.evidence}${at}`,
        title: 'Landing page unconfirmed',
        reason: 'unconfirmed'
      }
    case 'blocked':
      return { message: `${doi} landing page is behind a bot wall: ${l.evidence}${at}`, title: 'Landing page blocked' }
  }
}

/**
 * The status and the final URL a landing line adds to its evidence, each fact said once: evidence such as
 * "HTTP 404 at https://…" (handle/landing/verdict.ts) already says both, "Akamai access denial (HTTP 403)"
 * the status. " (HTTP 403 at URL)", " (at URL)", " (HTTP 403)" or nothing.
 */
function unsaid(l: { status: number | null; url: string; evidence: string }): string {
  const facts: string[] = []
  if (l.status !== null && !new RegExp(`\\bHTTP ${l.status}\\b`).test(l.evidence)) facts.push(`HTTP ${l.status}`)
  if (!l.evidence.includes(l.url)) facts.push(`at ${l.url}`)
  return facts.length === 0 ? '' : ` (${facts.join(' ')})`
}

/** Whether a problem fails the run under failOn. */
const fails = (p: Problem, failOn: readonly FailOn[]): boolean => p.reason !== undefined && failOn.includes(p.reason)

/**
 * The --fail-on names a DOI found meets (T1's rule: the exit status and the formats agree through it); an
 * allowed DOI (--allow) does not fail for not being registered.
 */
export function failuresOfChecked(c: Checked, failOn: readonly FailOn[]): FailReason[] {
  return failuresOf(c.verdict, c.allowed === undefined ? failOn : failOn.filter((name) => name !== 'unregistered'))
}

/** 1 when any DOI found meets a name of failOn; else 0. */
export function verifyExitCode(checked: readonly Checked[], failOn: readonly FailOn[]): 0 | 1 {
  return checked.some((c) => failuresOfChecked(c, failOn).length > 0) ? 1 : 0
}

const COUNTED: Record<VerifyLevel, readonly string[]> = {
  metadata: ['match', 'mismatch', 'other-work', 'details', 'unverifiable'],
  retraction: ['retracted', 'corrected', 'expression-of-concern', 'none', 'unknown'],
  landing: ['alive', 'unconfirmed', 'blocked', 'dead', 'unknown']
}

/** The registration summary, and per level verified the count of each verdict over the places found. */
export function summariseVerified(summary: Summary, checked: readonly Checked[], levels: readonly VerifyLevel[]): VerifiedSummary {
  const verified: VerifiedSummary['verified'] = {}
  for (const level of levels) verified[level] = Object.fromEntries(COUNTED[level].map((k) => [k, 0]))
  for (const c of checked) {
    for (const level of levels) {
      const result = c.verdict[level]
      const counts = verified[level]!
      if (result === null || result === undefined) continue
      counts[result.verdict ?? 'unknown']!++
      if (level === 'metadata' && c.verdict.metadata?.verdict === 'mismatch') counts[c.verdict.metadata.kind ?? 'other-work']!++
    }
  }
  return { ...summary, verified }
}

function verifiedLine(s: VerifiedSummary): string {
  const parts: string[] = []
  const m = s.verified.metadata
  if (m !== undefined) {
    parts.push(
      `metadata ${m.match} match, ${m.mismatch} mismatch (${m['other-work']} naming another work, ${m.details} with other details), ${m.unverifiable} unverifiable`
    )
  }
  const r = s.verified.retraction
  if (r !== undefined) {
    parts.push(
      `retraction ${r.retracted} retracted, ${r.corrected} corrected, ${r['expression-of-concern']} expression of concern, ${r.none} none, ${r.unknown} could not be checked`
    )
  }
  const l = s.verified.landing
  if (l !== undefined) {
    parts.push(
      `landing ${l.alive} alive, ${l.unconfirmed} unconfirmed, ${l.blocked} blocked, ${l.dead} dead, ${l.unknown} could not be checked`
    )
  }
  return `Verified: ${parts.join('; ')}.`
}

export function formatVerifyReport(
  format: Format,
  checked: readonly Checked[],
  summary: VerifiedSummary,
  failOn: readonly FailOn[]
): string {
  const closing = [summaryLine(summary), verifiedLine(summary), ...operatorNotes(checked)].map(visible)
  switch (format) {
    case 'json':
      return json({
        summary,
        results: checked.map((c) => ({
          file: c.file,
          line: c.line,
          written: c.doi,
          ...c.verdict,
          ...(c.cited === undefined ? {} : { cited: c.cited }),
          ...allowedFields(c.allowed),
          failures: failuresOfChecked(c, failOn)
        }))
      })
    case 'text':
      return (
        [
          ...checked.flatMap((c) => problemsOf(c).map((p) => `${lineStart(visible(c.file))}:${c.line}: ${visible(p.message)}`)),
          ...closing
        ].join('\n') + '\n'
      )
    case 'github':
      return (
        [
          ...checked.flatMap((c) =>
            problemsOf(c).map((p) =>
              p.notice === true
                ? noticeCommand(c, p)
                : `::${fails(p, failOn) ? 'error' : 'warning'} file=${property(visible(c.file))},line=${c.line},title=${property(p.title)}::${data(visible(p.message))}`
            )
          ),
          ...closing
        ].join('\n') + '\n'
      )
    case 'junit':
      return junit(checked, summary, failOn)
  }
}

/**
 * JUnit XML: one test case per DOI found, its verdicts as <properties>; a failure when a verdict in --fail-on
 * fails it (an error when only `unknown` does), skipped when it could not be checked and that does not fail,
 * the warnings in its <system-out>: the report fails the build exactly when the exit status does.
 */
function junit(checked: readonly Checked[], summary: VerifiedSummary, failOn: readonly FailOn[]): string {
  let failures = 0
  let errors = 0
  let skipped = 0
  const cases = checked.map((c) => {
    const open = `    <testcase classname="${xml(c.file)}" name="${xml(`${c.file}:${c.line} ${c.doi}`)}" file="${xml(c.file)}" line="${c.line}"`
    const allowed = notice(c)
    // Not registered yet, and allowed: skipped with the reason (a DOI not registered has no verdicts).
    if (allowed !== undefined && c.verdict.registered === false) {
      skipped++
      return allowedCase(open, c, allowed.message)
    }
    const problems = problemsOf(c)
    const failing = problems.filter((p) => fails(p, failOn))
    const others = problems.filter((p) => !fails(p, failOn))
    const inside: string[] = []
    const props = properties(c)
    if (props.length > 0) inside.push('      <properties>', ...props, '      </properties>')
    if (failing.length > 0) {
      const reasons = [...new Set(failing.map((p) => p.reason))].join(',')
      const tag = failing.every((p) => p.reason === 'unknown') ? 'error' : 'failure'
      if (tag === 'error') errors++
      else failures++
      inside.push(`      <${tag} message="${xml(failing.map((p) => p.message).join('; '))}" type="${xml(reasons)}"/>`)
    } else if (c.verdict.registered === null) {
      skipped++
      inside.push(`      <skipped message="${xml(others.find((p) => p.reason === 'unknown')?.message ?? '')}" type="unknown"/>`)
    }
    const warnings = others.filter((p) => !(c.verdict.registered === null && p.reason === 'unknown' && failing.length === 0))
    if (warnings.length > 0) {
      const said = warnings.map((p) => `${p.notice === true ? 'notice' : 'warning'}: ${p.message}`)
      inside.push(`      <system-out>${xml(said.join('\n'))}</system-out>`)
    }
    return inside.length === 0 ? `${open}/>` : [`${open}>`, ...inside, '    </testcase>'].join('\n')
  })
  const counts = `tests="${summary.found}" failures="${failures}" errors="${errors}" skipped="${skipped}"`
  return junitDocument(counts, cases, [summaryLine(summary), verifiedLine(summary), ...operatorNotes(checked)])
}

/** A DOI's verdicts, a property per level it carries (with the kind of a mismatch, the evidence of a landing). */
function properties(c: Checked): string[] {
  const { metadata, retraction, landing } = c.verdict
  const out: Array<[string, string]> = []
  if (metadata !== null && metadata !== undefined) {
    out.push(['metadata', metadata.kind === undefined ? metadata.verdict : `${metadata.verdict} (${metadata.kind})`])
  }
  if (retraction !== null && retraction !== undefined) {
    out.push(['retraction', retraction.verdict ?? `could not be checked: ${retraction.error}`])
  }
  if (landing !== null && landing !== undefined) {
    out.push(['landing', landing.verdict === null ? `could not be checked: ${landing.error}` : `${landing.verdict}: ${landing.evidence}`])
  }
  return out.map(([name, value]) => `        <property name="${name}" value="${xml(value)}"/>`)
}
