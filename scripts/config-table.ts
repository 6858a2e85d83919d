/**
 * The README's configuration table, from the settings schema, so the two cannot drift:
 * `npm run docs:config` rewrites it between the README's config markers. test/docs.test.ts checks
 * the README holds this exact table.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { OPTIONS } from '../src/config/schema.js'

export function configTable(): string {
  const rows = Object.entries(OPTIONS).map(
    ([key, o]) => `| \`${o.env}\` | \`${key}\` | ${formatDefault(o.default)} | ${o.doc.replace(/\|/g, '\\|')} |`
  )
  return ['| environment | config file key | default | what it does |', '| --- | --- | --- | --- |', ...rows].join('\n')
}

function formatDefault(value: unknown): string {
  if (value === undefined) return '(none)'
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : `\`${value.join(',')}\``
  if (typeof value === 'object' && value !== null) return Object.keys(value).length === 0 ? '(none)' : `\`${JSON.stringify(value)}\``
  return `\`${String(value)}\``
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const readme = new URL('../README.md', import.meta.url)
  const text = readFileSync(readme, 'utf8')
  const next = text.replace(
    /<!-- config:start -->\n[\s\S]*?\n<!-- config:end -->/,
    `<!-- config:start -->\n${configTable()}\n<!-- config:end -->`
  )
  writeFileSync(readme, next)
  process.stdout.write(next === text ? 'README.md: configuration table already current\n' : 'README.md: configuration table rewritten\n')
}
