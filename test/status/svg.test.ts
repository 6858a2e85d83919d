import { describe, expect, it } from 'vitest'
import { barChart, formatNumber, lineChart, niceMax } from '../../src/http/views/svg.js'

describe('line chart', () => {
  const chart = lineChart({
    id: 'c',
    title: 'Requests <per> second',
    desc: 'What "it" shows & why',
    series: [
      { name: 'hit <b>', values: [1, 2, null, 4] },
      { name: 'miss', values: [0, 0, 0, 0] }
    ],
    startLabel: '12:00',
    endLabel: '13:00',
    unit: 'per second'
  })

  it('is an image with a title and a description for screen readers', () => {
    expect(chart).toMatch(/^<svg [^>]*role="img" aria-labelledby="c-t c-d"/)
    expect(chart).toContain('<title id="c-t">Requests &lt;per&gt; second</title>')
    expect(chart).toContain('<desc id="c-d">What &quot;it&quot; shows &amp; why</desc>')
  })

  it('escapes series names', () => {
    expect(chart).toContain('hit &lt;b&gt;')
    expect(chart).not.toContain('<b>')
  })

  it('leaves a gap where a value is missing', () => {
    const hit = /<path class="line s0" d="([^"]+)"/.exec(chart)?.[1] ?? ''
    expect(hit.match(/M/g)).toHaveLength(2)
  })

  it('tells series apart by dash pattern, not colour alone', () => {
    expect(chart).toContain('class="line s1" d="M')
    expect(chart).toMatch(/class="line s1" d="[^"]+" stroke-dasharray="6 3"/)
  })

  it('as a file of its own, brings its colours for light and dark', () => {
    const file = lineChart({ id: 'f', title: 't', desc: 'd', series: [], startLabel: '', endLabel: '', unit: '', standalone: true })
    expect(file).toContain('<style>')
    expect(file).toContain('prefers-color-scheme:dark')
  })
})

describe('bar chart', () => {
  it('draws a bar and its value for each server of each scenario, skipping missing ones', () => {
    const chart = barChart({
      id: 'b',
      title: 'Throughput',
      desc: 'req/s',
      unit: 'req/s',
      groups: [
        {
          label: 'hot',
          bars: [
            { name: 'doi-proxy', value: 31159 },
            { name: 'floor', value: 47455 }
          ]
        },
        {
          label: 'cold',
          bars: [
            { name: 'doi-proxy', value: 223 },
            { name: 'floor', value: null }
          ]
        }
      ]
    })
    expect(chart.match(/<rect class="bar"/g)).toHaveLength(3)
    expect(chart).toContain('>31.2k</text>')
    expect(chart).toContain('>hot</text>')
  })
})

describe('axis numbers', () => {
  it.each([
    [0, 1],
    [0.3, 0.3],
    [0.31, 0.4],
    [7, 8],
    [31159, 40000],
    [50729, 60000],
    [101, 120]
  ])('a maximum of %d rounds up to %d', (value, max) => {
    expect(niceMax(value)).toBe(max)
  })

  it.each([
    [0, '0'],
    [0.123, '0.12'],
    [12.34, '12.3'],
    [250, '250'],
    [31159, '31.2k'],
    [2_500_000, '2.5M']
  ])('%d reads as %s', (n, text) => {
    expect(formatNumber(n)).toBe(text)
  })
})
