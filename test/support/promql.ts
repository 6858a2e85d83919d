/**
 * A small evaluator of the PromQL that deploy/prometheus/alerts.yml uses, over two scrapes of /metrics:
 * `rate(x[w])` and `increase(x[w])` read what a counter grew by between them (the range is taken to be
 * the time between the scrapes), gauges read the later scrape. It knows selectors with `=`, `!=`, `=~`,
 * `!~`; `sum`/`max`/`min` with `by (…)`; `clamp_min`; `*`, `/`; comparisons (filters, as without `bool`);
 * and `and`. Enough to tell whether a rule's condition holds, not a Prometheus: an expression it does
 * not know is an error, never a silent "does not fire".
 */

/** One series: its labels (without the name) and value. */
export interface Sample {
  labels: Record<string, string>
  value: number
}
type Value = { kind: 'scalar'; value: number } | { kind: 'vector'; samples: Sample[] }

export interface Scrape {
  at: number
  series: Map<string, Array<{ labels: Record<string, string>; value: number }>>
}

/** Prometheus text format as /metrics answers it: `name{label="v",…} value` lines. */
export function parseScrape(text: string, at: number): Scrape {
  const series = new Map<string, Array<{ labels: Record<string, string>; value: number }>>()
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, '$1')
    const list = series.get(m[1] as string) ?? []
    list.push({ labels, value: Number(m[3]) })
    series.set(m[1] as string, list)
  }
  return { at, series }
}

/** The samples of an expression between two scrapes; empty when a comparison filters everything out. */
export function evaluate(expr: string, before: Scrape, after: Scrape): Sample[] {
  const tokens = tokenize(expr)
  let i = 0
  const peek = (): string | undefined => tokens[i]
  const take = (want?: string): string => {
    const t = tokens[i++]
    if (t === undefined || (want !== undefined && t !== want)) {
      throw new Error(`PromQL: expected ${want ?? 'a token'} at ${i} in ${expr}, got ${t}`)
    }
    return t
  }

  function selector(name: string): { name: string; match: (labels: Record<string, string>) => boolean } {
    const tests: Array<(labels: Record<string, string>) => boolean> = []
    if (peek() === '{') {
      take('{')
      while (peek() !== '}') {
        const label = take()
        const op = take()
        const value = JSON.parse(take()) as string
        const re = new RegExp(`^(?:${value})$`)
        if (op === '=') tests.push((l) => (l[label] ?? '') === value)
        else if (op === '!=') tests.push((l) => (l[label] ?? '') !== value)
        else if (op === '=~') tests.push((l) => re.test(l[label] ?? ''))
        else if (op === '!~') tests.push((l) => !re.test(l[label] ?? ''))
        else throw new Error(`PromQL: matcher ${op}`)
        if (peek() === ',') take(',')
      }
      take('}')
    }
    return { name, match: (labels) => tests.every((t) => t(labels)) }
  }

  function seriesOf(scrape: Scrape, name: string, match: (labels: Record<string, string>) => boolean): Sample[] {
    return (scrape.series.get(name) ?? []).filter((s) => match(s.labels)).map((s) => ({ labels: s.labels, value: s.value }))
  }

  function primary(): Value {
    const t = take()
    if (t === '(') {
      const v = or()
      take(')')
      return v
    }
    if (/^[0-9]/.test(t)) return { kind: 'scalar', value: Number(t) }
    if (t === 'rate' || t === 'increase') {
      take('(')
      const sel = selector(take())
      take('[')
      take()
      take(']')
      take(')')
      const seconds = (after.at - before.at) / 1000
      const earlier = new Map(seriesOf(before, sel.name, sel.match).map((s) => [key(s.labels), s.value]))
      return {
        kind: 'vector',
        samples: seriesOf(after, sel.name, sel.match).map((s) => {
          const grew = s.value - (earlier.get(key(s.labels)) ?? 0)
          return { labels: s.labels, value: t === 'rate' ? grew / seconds : grew }
        })
      }
    }
    if (t === 'clamp_min') {
      take('(')
      const v = vector(or())
      take(',')
      const min = Number(take())
      take(')')
      return { kind: 'vector', samples: v.map((s) => ({ labels: s.labels, value: Math.max(s.value, min) })) }
    }
    if (t === 'sum' || t === 'max' || t === 'min') {
      let by: string[] = []
      if (peek() === 'by') {
        take('by')
        take('(')
        while (peek() !== ')') {
          by.push(take())
          if (peek() === ',') take(',')
        }
        take(')')
      }
      take('(')
      const v = vector(or())
      take(')')
      by = by.filter((l) => l !== 'instance') // one scrape is one instance
      const groups = new Map<string, Sample>()
      for (const s of v) {
        const labels = Object.fromEntries(by.map((l) => [l, s.labels[l] ?? '']))
        const k = key(labels)
        const g = groups.get(k)
        if (g === undefined) groups.set(k, { labels, value: s.value })
        else g.value = t === 'sum' ? g.value + s.value : t === 'max' ? Math.max(g.value, s.value) : Math.min(g.value, s.value)
      }
      return { kind: 'vector', samples: [...groups.values()] }
    }
    if (/^[a-zA-Z_]/.test(t)) {
      const sel = selector(t)
      return { kind: 'vector', samples: seriesOf(after, sel.name, sel.match) }
    }
    throw new Error(`PromQL: unexpected ${t} in ${expr}`)
  }

  function product(): Value {
    let left = primary()
    while (peek() === '*' || peek() === '/') {
      const op = take()
      left = binary(left, primary(), (a, b) => (op === '*' ? a * b : a / b), false)
    }
    return left
  }

  function comparison(): Value {
    let left = product()
    while (peek() !== undefined && ['>', '>=', '<', '<=', '==', '!='].includes(peek() as string)) {
      const op = take()
      const test = COMPARE[op] as (a: number, b: number) => boolean
      left = binary(left, product(), (a, b) => (test(a, b) ? a : NaN), true)
    }
    return left
  }

  function or(): Value {
    let left = comparison()
    while (peek() === 'and') {
      take('and')
      const right = new Set(vector(comparison()).map((s) => key(s.labels)))
      left = { kind: 'vector', samples: vector(left).filter((s) => right.has(key(s.labels))) }
    }
    return left
  }

  const result = or()
  if (i !== tokens.length) throw new Error(`PromQL: left over ${tokens.slice(i).join(' ')} in ${expr}`)
  return vector(result)
}

const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '==': (a, b) => a === b,
  '!=': (a, b) => a !== b
}

/** One-to-one matching on identical label sets; a filter drops what fails (NaN). */
function binary(left: Value, right: Value, op: (a: number, b: number) => number, filter: boolean): Value {
  if (left.kind === 'scalar' && right.kind === 'scalar') return { kind: 'scalar', value: op(left.value, right.value) }
  const out: Sample[] = []
  if (right.kind === 'scalar') for (const s of vector(left)) out.push({ labels: s.labels, value: op(s.value, right.value) })
  else if (left.kind === 'scalar') for (const s of right.samples) out.push({ labels: s.labels, value: op(left.value, s.value) })
  else {
    const byKey = new Map(right.samples.map((s) => [key(s.labels), s.value]))
    for (const s of left.samples) {
      const r = byKey.get(key(s.labels))
      if (r !== undefined) out.push({ labels: s.labels, value: op(s.value, r) })
    }
  }
  return { kind: 'vector', samples: filter ? out.filter((s) => !Number.isNaN(s.value)) : out }
}

function vector(v: Value): Sample[] {
  return v.kind === 'vector' ? v.samples : [{ labels: {}, value: v.value }]
}

function key(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)))
}

function tokenize(expr: string): string[] {
  const tokens: string[] = []
  const re = /\s*("(?:[^"\\]|\\.)*"|[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?[smhd]?|[a-zA-Z_:][a-zA-Z0-9_:]*|=~|!~|!=|==|>=|<=|[{}()[\],=<>*/])/y
  let m: RegExpExecArray | null
  let at = 0
  while (at < expr.trimEnd().length) {
    re.lastIndex = at
    m = re.exec(expr)
    if (m === null) throw new Error(`PromQL: cannot read ${expr.slice(at)}`)
    tokens.push(m[1] as string)
    at = re.lastIndex
  }
  return tokens
}
