// Summarise a V8 .cpuprofile: self time per function (name + file:line), biggest first.
// Usage: node bench/profile-summary.mjs FILE.cpuprofile [--top 10]
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'

/** Self time in ms per function+url, from the profile's samples and their time deltas. */
export function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const selfUs = new Map()
  const { samples = [], timeDeltas = [] } = profile
  for (let i = 0; i < samples.length; i++) {
    // timeDeltas[i] is the time before sample i; attribute it to the sampled node.
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + (timeDeltas[i] ?? 0))
  }
  const totals = new Map()
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined) continue
    const file = frame.url === '' ? '' : shortUrl(frame.url)
    const key = `${frame.functionName || '(anonymous)'}  ${file}${file === '' ? '' : `:${frame.lineNumber + 1}`}`
    totals.set(key, (totals.get(key) ?? 0) + us)
  }
  const all = [...totals.values()].reduce((a, b) => a + b, 0)
  return {
    totalMs: all / 1000,
    rows: [...totals].sort((a, b) => b[1] - a[1]).map(([key, us]) => ({ key, ms: us / 1000, share: us / all }))
  }
}

function shortUrl(url) {
  const path = url.replace(/^file:\/\//, '')
  const nm = path.lastIndexOf('/node_modules/')
  if (nm !== -1) return path.slice(nm + 1)
  return path.startsWith('/') ? relative(process.cwd(), path) : path
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2]
  if (file === undefined) {
    process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [--top 10]\n')
    process.exit(2)
  }
  const i = process.argv.indexOf('--top')
  const top = i === -1 ? 10 : Number(process.argv[i + 1])
  const { totalMs, rows } = selfTimes(JSON.parse(readFileSync(file, 'utf8')))
  process.stdout.write(`self time by function, top ${top} of ${rows.length} (${totalMs.toFixed(0)} ms sampled)\n`)
  for (const r of rows.slice(0, top)) {
    process.stdout.write(`${(r.share * 100).toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(7)} ms  ${r.key}\n`)
  }
}
