import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { configTable } from '../scripts/config-table.js'
import { buildConfig, OPTIONS } from '../src/config/schema.js'

// Keep the docs true: the README's configuration table is the schema's, and the example config loads.
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

describe('the README', () => {
  it('holds the configuration table exactly as the schema prints it (node --import tsx scripts/config-table.ts)', () => {
    expect(README).toContain(configTable())
  })

  it('names every setting', () => {
    for (const option of Object.values(OPTIONS)) expect(README).toContain(`\`${option.env}\``)
  })

  it('keeps the two commands that work on a fresh machine', () => {
    expect(README).toContain('npm ci && npm start')
    expect(README).toContain('npm ci && npm test')
  })

  it('names the reason for every runtime dependency', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }
    for (const name of Object.keys(pkg.dependencies)) expect(README).toContain(`\`${name}\``)
  })
})

describe('config/example.json', () => {
  it('is a valid configuration file', () => {
    const file = JSON.parse(readFileSync(new URL('../config/example.json', import.meta.url), 'utf8')) as Record<string, unknown>
    expect(buildConfig(file, {}).contactEmail).toBe('library-systems@university.example')
  })
})
