/**
 * What `doi-proxy check` prints (docs/checking-dois.md): the unregistered (and unknown) DOIs with file and
 * line, in text, JSON, JUnit XML or GitHub Actions workflow commands, and the exit status. Pure: the
 * command writes the strings. Every format passes what it did not write (file names, DOIs, the server's
 * messages) through visible() and then its own escaping, so a checked file cannot write to the terminal
 * or command the CI runner that reads the report.
 */
import type { CitedWork, Verification } from '../../handle/verify/types.js'
import type { Allowed } from './allow.js'
import { visible } from './visible.js'

/** A DOI found in a file; with --verify, what the reference entry it stands in says of the work (entries.ts). */
export interface Occurrence {
  file: string
  line: number
  doi: string
  cited?: CitedWork
}

/** What the batch API said of a DOI (its fields, src/http/batch.ts); with ?verify=, the objects of the levels asked. */
export interface Verdict extends Verification {
  registered: boolean | null
  doi: string | null
  url: string | null
  status: number | null
  error?: string
}

export type Format = 'text' | 'json' | 'junit' | 'github'
export type FailOn = 'unregistered' | 'unknown'

export interface Checked extends Occurrence {
  verdict: Verdict
  /** With --allow: the allow file and line that allow this DOI, when one does. */
  allowed?: Allowed
}

export interface Summary {
  files: number
  found: number
  distinct: number
  registered: number
  /** Not registered, and not allowed (--allow): these fail the run. */
  unregistered: number
  unknown: number
  /** With --allow: not registered yet, and allowed (these do not fail). Absent without --allow. */
  allowed?: number
}

/** Counts over the DOIs found (each place counts; `distinct` counts names); `allowing`: an --allow file was given. */
export function summarise(files: number, checked: readonly Checked[], distinct: number, allowing = false): Summary {
  let registered = 0
  let unregistered = 0
  let unknown = 0
  let allowed = 0
  for (const c of checked) {
    if (c.verdict.registered === true) registered++
    else if (c.verdict.registered === false && c.allowed !== undefined) allowed++
    else if (c.verdict.registered === false) unregistered++
    else unknown++
  }
  return { files, found: checked.length, distinct, registered, unregistered, unknown, ...(allowing ? { allowed } : {}) }
}

/** 1 when a DOI is unregistered, or with --fail-on unknown also when one could not be checked; else 0. */
export function exitCode(summary: Summary, failOn: FailOn): 0 | 1 {
  return summary.unregistered > 0 || (failOn === 'unknown' && summary.unknown > 0) ? 1 : 0
}

export function formatReport(format: Format, checked: readonly Checked[], summary: Summary, failOn: FailOn): string {
  switch (format) {
    case 'json':
      return json({
        summary,
        results: checked.map(({ file, line, doi, verdict, allowed }) => ({
          file,
          line,
          written: doi,
          ...verdict,
          ...allowedFields(allowed)
        }))
      })
    case 'junit':
      return junit(checked, summary, failOn)
    case 'github':
      return github(checked, summary, failOn)
    case 'text':
      return text(checked, summary)
  }
}

export function problem(c: Checked): string | undefined {
  if (c.verdict.registered === false && c.allowed !== undefined) return undefined
  if (c.verdict.registered === false) return `${c.doi} is not registered${c.verdict.error === undefined ? '' : ` (${c.verdict.error})`}`
  if (c.verdict.registered === null) return `${c.doi} could not be checked: ${reasonOf(c.verdict.error)[0]}`
  return undefined
}

/**
 * What an allow list (--allow) makes of a DOI found: a notice, never a failure. Not registered yet, as
 * the list expects; or registered by now, so its line can go. Undefined for a DOI no list allows, or
 * one that could not be checked.
 */
export function notice(c: Checked): { message: string; title: string } | undefined {
  if (c.allowed === undefined || c.verdict.registered === null) return undefined
  return c.verdict.registered
    ? {
        message: `${c.doi} is registered: it can leave the allow list (${c.allowed.file}:${c.allowed.line})`,
        title: 'Allowed DOI is registered'
      }
    : { message: `${c.doi} is not registered yet (allowed by ${c.allowed.file})`, title: 'DOI not registered yet (allowed)' }
}

/** The JSON fields of an allowed DOI: `"allowed": true` and where (`"allowedBy": "FILE:LINE"`); none otherwise. */
export function allowedFields(allowed: Allowed | undefined): { allowed?: true; allowedBy?: string } {
  return allowed === undefined ? {} : { allowed: true, allowedBy: `${allowed.file}:${allowed.line}` }
}

/**
 * A failure's message split into its first sentence, the reason said on the DOI's line, and the rest
 * (what an operator can do), said once under the summary: an outage must not repeat a paragraph per DOI.
 */
export function reasonOf(error: string | undefined): [string, ...string[]] {
  const [first, ...rest] = (error ?? 'no answer').split(/(?<=[.!?])\s+(?=[A-Z(])/)
  return [first ?? '', ...rest]
}

/** The sentences past the first of every unchecked DOI's message, each once, in the order met. */
export function operatorNotes(checked: readonly Checked[]): string[] {
  const notes = new Set<string>()
  for (const c of checked) if (c.verdict.registered === null) for (const sentence of reasonOf(c.verdict.error).slice(1)) notes.add(sentence)
  return notes.size === 0 ? [] : [`Why some could not be checked: ${[...notes].join(' ')}`]
}

export function summaryLine(s: Summary): string {
  return (
    `Checked ${s.found} DOI${s.found === 1 ? '' : 's'} (${s.distinct} distinct) in ${s.files} file${s.files === 1 ? '' : 's'}: ` +
    `${s.registered} registered, ${s.unregistered} not registered, ` +
    (s.allowed === undefined ? '' : `${s.allowed} not registered yet (allowed), `) +
    `${s.unknown} could not be checked.`
  )
}

function text(checked: readonly Checked[], summary: Summary): string {
  const lines = checked.flatMap((c) => {
    const p = problem(c) ?? notice(c)?.message
    return p === undefined ? [] : [`${lineStart(visible(c.file))}:${c.line}: ${visible(p)}`]
  })
  return [...lines, summaryLine(summary), ...operatorNotes(checked).map(visible)].join('\n') + '\n'
}

/**
 * A file name that starts a line: './' before one that does not start with a letter, digit, '.', '_' or '/',
 * the same file, so that a file named '::error::x' (or ' ::error::x') cannot open a line with a workflow command.
 */
export function lineStart(file: string): string {
  return /^[\p{L}\p{N}._/]/u.test(file) ? file : `./${file}`
}

/** JSON as JSON.stringify writes it, with the characters visible() escapes in strings written \uXXXX too (the same string). */
export function json(value: unknown): string {
  // JSON.stringify escapes a newline inside a string, so every raw newline is its own layout.
  return JSON.stringify(value, null, 2).split('\n').map(visible).join('\n') + '\n'
}

/**
 * GitHub Actions workflow commands: an error annotation per unregistered DOI (a warning per unknown one,
 * an error with --fail-on unknown), shown on the line of the pull request's diff.
 * Escaping: https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts
 */
function github(checked: readonly Checked[], summary: Summary, failOn: FailOn): string {
  const lines = checked.flatMap((c) => {
    const n = notice(c)
    if (n !== undefined) return [noticeCommand(c, n)]
    const p = problem(c)
    if (p === undefined) return []
    const level = c.verdict.registered === false || failOn === 'unknown' ? 'error' : 'warning'
    const title = c.verdict.registered === false ? 'DOI not registered' : 'DOI not checked'
    return [`::${level} file=${property(visible(c.file))},line=${c.line},title=${property(title)}::${data(visible(p))}`]
  })
  return [...lines, summaryLine(summary), ...operatorNotes(checked).map(visible)].join('\n') + '\n'
}

/** A GitHub ::notice on the DOI's line: shown, never failing. */
export function noticeCommand(c: Checked, n: { message: string; title: string }): string {
  return `::notice file=${property(visible(c.file))},line=${c.line},title=${property(n.title)}::${data(visible(n.message))}`
}

export function data(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A')
}

export function property(s: string): string {
  return data(s).replace(/:/g, '%3A').replace(/,/g, '%2C')
}

/**
 * JUnit XML as CI servers read it: one test case per DOI found, a failure when unregistered; one that
 * could not be checked is an error with --fail-on unknown and skipped without, so the report fails the
 * build exactly when the exit status does. The summary and what an operator can do in <system-out>.
 */
function junit(checked: readonly Checked[], summary: Summary, failOn: FailOn): string {
  const cases = checked.map((c) => {
    const name = `${c.file}:${c.line} ${c.doi}`
    const open = `    <testcase classname="${xml(c.file)}" name="${xml(name)}" file="${xml(c.file)}" line="${c.line}"`
    const n = notice(c)
    if (n !== undefined) return allowedCase(open, c, n.message)
    const p = problem(c)
    if (p === undefined) return `${open}/>`
    const tag = c.verdict.registered === false ? 'failure' : failOn === 'unknown' ? 'error' : 'skipped'
    return `${open}>\n      <${tag} message="${xml(p)}" type="${c.verdict.registered === false ? 'unregistered' : 'unknown'}"/>\n    </testcase>`
  })
  const errors = failOn === 'unknown' ? summary.unknown : 0
  const skipped = summary.unknown - errors + (summary.allowed ?? 0)
  const counts = `tests="${summary.found}" failures="${summary.unregistered}" errors="${errors}" skipped="${skipped}"`
  return junitDocument(counts, cases, [summaryLine(summary), ...operatorNotes(checked)])
}

/**
 * The JUnit case of an allowed DOI: skipped with the reason when it is not registered yet (allowed, not
 * passed: nothing was verified), passed with the notice in its <system-out> when it is registered.
 */
export function allowedCase(open: string, c: Checked, message: string): string {
  const inside =
    c.verdict.registered === false
      ? `      <skipped message="${xml(message)}" type="allowed"/>`
      : `      <system-out>${xml(`notice: ${message}`)}</system-out>`
  return `${open}>\n${inside}\n    </testcase>`
}

export function junitDocument(counts: string, cases: readonly string[], out: readonly string[]): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="doi-proxy check" ${counts}>`,
    `  <testsuite name="DOIs" ${counts}>`,
    ...cases,
    `    <system-out>${xml(out.join('\n'))}</system-out>`,
    '  </testsuite>',
    '</testsuites>',
    ''
  ].join('\n')
}

/**
 * The report when no DOI could be asked about (the server cannot be reached, the settings are wrong):
 * for the formats a CI job saves or reads, a valid report naming the failure, never an empty file.
 * Undefined for text, whose reader sees the message on standard error.
 */
export function formatFailure(format: Format, message: string): string | undefined {
  switch (format) {
    case 'json':
      return json({ error: message, summary: null, results: [] })
    case 'github':
      return `::error title=doi-proxy check::${data(visible(message))}\n`
    case 'junit':
      return junitDocument(
        'tests="1" failures="0" errors="1" skipped="0"',
        [
          '    <testcase classname="doi-proxy check" name="ask about the DOIs">',
          `      <error message="${xml(message)}" type="not-checked"/>`,
          '    </testcase>'
        ],
        [message]
      )
    case 'text':
      return undefined
  }
}

/** Text in an XML attribute: control characters made visible, markup escaped, and the noncharacters XML 1.0 cannot hold dropped. */
export function xml(s: string): string {
  return visible(s)
    .replace(/[\ufffe\uffff]/g, '')
    .replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
