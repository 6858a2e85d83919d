/**
 * Small server-rendered SVG charts (issue 15): the status page's charts and the benchmark's pictures.
 * Pure functions from numbers to a string; every text is escaped. Series differ by colour and by dash
 * pattern, so they can be told apart without colour; each chart has a title and a description for
 * screen readers. Colours come from CSS classes: the page's stylesheet sets them (light and dark),
 * and a standalone file carries its own.
 */
import { escapeHtml } from './html.js'

export interface LineSeries {
  name: string
  /** One value per step; null leaves a gap. */
  values: ReadonlyArray<number | null>
}

export interface LineChartOptions {
  /** Unique in the page: the title and description ids derive from it. */
  id: string
  title: string
  desc: string
  series: readonly LineSeries[]
  /** Labels under the first and last step. */
  startLabel: string
  endLabel: string
  unit: string
  /** The y axis reaches at least this (e.g. 1 for a ratio). */
  minMax?: number
  width?: number
  height?: number
  /** A whole .svg file (with its own colours) rather than an element inside a page. */
  standalone?: boolean
}

export interface BarGroup {
  label: string
  bars: ReadonlyArray<{ name: string; value: number | null }>
}

export interface BarChartOptions {
  id: string
  title: string
  desc: string
  groups: readonly BarGroup[]
  unit: string
  width?: number
  height?: number
  standalone?: boolean
}

// Seven patterns over five colours: up to 35 series differ in colour or dash (the status page draws seven).
const DASHES = ['', '6 3', '2 3', '9 3 2 3', '1 2', '12 4', '4 2 1 2']
const SERIES_CLASSES = 5

/** The colours of the chart classes, light and dark: each at least 3:1 against its background (WCAG 1.4.11). */
export const CHART_CSS = [
  '.chart{max-width:100%;height:auto;font:12px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}',
  '.chart text{fill:var(--fg,#1b1f24)}',
  '.chart .axis{stroke:var(--muted,#57606a);stroke-width:1}',
  '.chart .grid{stroke:var(--line,#d0d7de);stroke-width:1}',
  '.chart .s0{--c:#0a58b0}.chart .s1{--c:#b35900}.chart .s2{--c:#8250df}.chart .s3{--c:#1a7f37}.chart .s4{--c:#cf222e}',
  '.chart .line{fill:none;stroke:var(--c);stroke-width:2;stroke-linejoin:round;stroke-linecap:round}',
  '.chart .bar,.chart .swatch{fill:var(--c);stroke:var(--c)}',
  '@media (prefers-color-scheme:dark){.chart .s0{--c:#58a6ff}.chart .s1{--c:#f0883e}.chart .s2{--c:#bc8cff}.chart .s3{--c:#3fb950}.chart .s4{--c:#ff7b72}}'
].join('\n')

// A file on its own (bench/*.svg) has no page around it: it brings its background and text colours.
const STANDALONE_CSS = [
  CHART_CSS,
  'svg.chart{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;background:#fff}',
  '@media (prefers-color-scheme:dark){svg.chart{--fg:#e6edf3;--muted:#9aa4af;--line:#30363d;background:#0d1117}}'
].join('\n')

/** A round axis maximum, at least `value`: a power of ten times 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8. */
export function niceMax(value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    if (Number((m * power).toPrecision(12)) >= value) return Number((m * power).toPrecision(12))
  }
  return 10 * power
}

/** A number as an axis or legend shows it: few digits, no float noise. */
export function formatNumber(n: number): string {
  if (n === 0) return '0'
  const abs = Math.abs(n)
  if (abs >= 1e6) return `${round(n / 1e6)}M`
  if (abs >= 1e4) return `${round(n / 1e3)}k`
  if (abs >= 100) return String(Math.round(n))
  if (abs >= 1) return String(round(n))
  return String(Number(n.toPrecision(2)))
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}

function f(n: number): string {
  return String(Math.round(n * 10) / 10)
}

function open(id: string, title: string, desc: string, width: number, height: number, standalone: boolean): string {
  const i = escapeHtml(id)
  const style = standalone ? `<style>\n${STANDALONE_CSS}\n</style>\n` : ''
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-labelledby="${i}-t ${i}-d">\n` +
    `<title id="${i}-t">${escapeHtml(title)}</title>\n<desc id="${i}-d">${escapeHtml(desc)}</desc>\n${style}`
  )
}

/** A legend laid out in rows within `width`: each entry its swatch (a line or a box) and its name. */
function legend(
  names: readonly string[],
  x: number,
  y: number,
  width: number,
  swatch: (i: number, cx: number, cy: number) => string
): string {
  let out = ''
  let cx = x
  let cy = y
  names.forEach((name, i) => {
    const w = 34 + name.length * 7
    if (cx + w > x + width && cx > x) {
      cx = x
      cy += 16
    }
    out += `<g class="s${i % SERIES_CLASSES}">${swatch(i, cx, cy)}<text x="${f(cx + 27)}" y="${f(cy)}">${escapeHtml(name)}</text></g>\n`
    cx += w
  })
  return out
}

function lineSwatch(i: number, cx: number, cy: number): string {
  const dash = DASHES[i % DASHES.length] ?? ''
  return `<line class="line" x1="${f(cx)}" y1="${f(cy - 4)}" x2="${f(cx + 22)}" y2="${f(cy - 4)}"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}/>`
}

function boxSwatch(_i: number, cx: number, cy: number): string {
  return `<rect class="swatch" x="${f(cx)}" y="${f(cy - 10)}" width="20" height="10"/>`
}

function legendRows(names: readonly string[], width: number): number {
  let rows = 1
  let cx = 0
  for (const name of names) {
    const w = 34 + name.length * 7
    if (cx + w > width && cx > 0) {
      rows++
      cx = 0
    }
    cx += w
  }
  return rows
}

/** A line chart of one or more series over the same steps. */
export function lineChart(opts: LineChartOptions): string {
  const width = opts.width ?? 640
  const plotHeight = (opts.height ?? 200) - 40
  const left = 48
  const right = 12
  const top = 10
  const plotWidth = width - left - right
  const rows = legendRows(
    opts.series.map((s) => s.name),
    plotWidth
  )
  const height = top + plotHeight + 22 + rows * 16 + 4
  let max = opts.minMax ?? 0
  let steps = 0
  for (const s of opts.series) {
    steps = Math.max(steps, s.values.length)
    for (const v of s.values) if (v !== null && Number.isFinite(v) && v > max) max = v
  }
  const yMax = niceMax(max)
  const x = (i: number): number => left + (steps <= 1 ? plotWidth : (i / (steps - 1)) * plotWidth)
  const y = (v: number): number => top + plotHeight - (Math.min(v, yMax) / yMax) * plotHeight
  let out = open(opts.id, opts.title, opts.desc, width, height, opts.standalone === true)
  for (const g of [0, 0.5, 1]) {
    const gy = y(g * yMax)
    out +=
      `<line class="${g === 0 ? 'axis' : 'grid'}" x1="${left}" y1="${f(gy)}" x2="${left + plotWidth}" y2="${f(gy)}"/>` +
      `<text x="${left - 6}" y="${f(gy + 4)}" text-anchor="end">${escapeHtml(formatNumber(g * yMax))}</text>\n`
  }
  out += `<text x="${left + plotWidth}" y="${top + 10}" text-anchor="end">${escapeHtml(opts.unit)}</text>\n`
  opts.series.forEach((s, i) => {
    const dash = DASHES[i % DASHES.length] ?? ''
    let d = ''
    let pen = false
    s.values.forEach((v, j) => {
      if (v === null || !Number.isFinite(v)) {
        pen = false
        return
      }
      d += `${pen ? 'L' : 'M'}${f(x(j))} ${f(y(v))}`
      pen = true
    })
    // A single point still shows, as a dot.
    if (s.values.filter((v) => v !== null).length === 1) d += 'h0.1'
    if (d !== '') out += `<path class="line s${i % SERIES_CLASSES}" d="${d}"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}/>\n`
  })
  const axisY = top + plotHeight + 14
  out += `<text x="${left}" y="${axisY}">${escapeHtml(opts.startLabel)}</text><text x="${left + plotWidth}" y="${axisY}" text-anchor="end">${escapeHtml(opts.endLabel)}</text>\n`
  out += legend(
    opts.series.map((s) => s.name),
    left,
    axisY + 18,
    plotWidth,
    lineSwatch
  )
  return out + '</svg>'
}

/** Grouped vertical bars: one group per label, one bar per name, with the value above each bar. */
export function barChart(opts: BarChartOptions): string {
  const width = opts.width ?? 720
  const plotHeight = (opts.height ?? 260) - 60
  const left = 56
  const right = 12
  const top = 16
  const plotWidth = width - left - right
  const names: string[] = []
  let max = 0
  for (const g of opts.groups) {
    for (const b of g.bars) {
      if (!names.includes(b.name)) names.push(b.name)
      if (b.value !== null && Number.isFinite(b.value) && b.value > max) max = b.value
    }
  }
  const rows = legendRows(names, plotWidth)
  const height = top + plotHeight + 24 + rows * 16 + 6
  const yMax = niceMax(max)
  const y = (v: number): number => top + plotHeight - (Math.min(v, yMax) / yMax) * plotHeight
  let out = open(opts.id, opts.title, opts.desc, width, height, opts.standalone === true)
  for (const g of [0, 0.5, 1]) {
    const gy = y(g * yMax)
    out +=
      `<line class="${g === 0 ? 'axis' : 'grid'}" x1="${left}" y1="${f(gy)}" x2="${left + plotWidth}" y2="${f(gy)}"/>` +
      `<text x="${left - 6}" y="${f(gy + 4)}" text-anchor="end">${escapeHtml(formatNumber(g * yMax))}</text>\n`
  }
  out += `<text x="${left + plotWidth}" y="${top - 4}" text-anchor="end">${escapeHtml(opts.unit)}</text>\n`
  const groupWidth = opts.groups.length === 0 ? plotWidth : plotWidth / opts.groups.length
  const barWidth = Math.max(4, (groupWidth * 0.8) / Math.max(1, names.length))
  opts.groups.forEach((g, gi) => {
    const gx = left + gi * groupWidth + groupWidth * 0.1
    for (const b of g.bars) {
      const i = names.indexOf(b.name)
      const bx = gx + i * barWidth
      if (b.value === null || !Number.isFinite(b.value)) continue
      const by = y(b.value)
      out +=
        `<g class="s${i % SERIES_CLASSES}"><rect class="bar" x="${f(bx + 1)}" y="${f(by)}" width="${f(barWidth - 2)}" height="${f(top + plotHeight - by)}"/>` +
        `<text x="${f(bx + barWidth / 2)}" y="${f(by - 3)}" text-anchor="middle" font-size="10">${escapeHtml(formatNumber(b.value))}</text></g>\n`
    }
    out += `<text x="${f(left + gi * groupWidth + groupWidth / 2)}" y="${top + plotHeight + 15}" text-anchor="middle">${escapeHtml(g.label)}</text>\n`
  })
  out += legend(names, left, top + plotHeight + 36, plotWidth, boxSwatch)
  return out + '</svg>'
}
