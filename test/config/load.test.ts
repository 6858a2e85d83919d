import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load.js'

const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-config-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function file(name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe('CONFIG_FILE', () => {
  it('is read, and an environment variable wins over it', () => {
    const path = file('ok.json', JSON.stringify({ port: 8081, host: '0.0.0.0', openAccess: { provider: 'openalex' } }))
    const config = loadConfig({ CONFIG_FILE: path, PORT: '9000' })
    expect([config.port, config.host, config.oaProvider]).toEqual([9000, '0.0.0.0', 'openalex'])
  })

  it('names a setting the file gives a bad value, with the value', () => {
    const path = file('bad-value.json', JSON.stringify({ port: 'eighty' }))
    expect(() => loadConfig({ CONFIG_FILE: path })).toThrow('invalid setting port (config file): expected an integer, got "eighty"')
  })

  it('refuses a key that names no setting', () => {
    const path = file('typo.json', JSON.stringify({ prot: 8081 }))
    expect(() => loadConfig({ CONFIG_FILE: path })).toThrow('unknown setting "prot" in the config file')
  })

  it('says when the file cannot be read, is not JSON, or is not an object', () => {
    expect(() => loadConfig({ CONFIG_FILE: join(dir, 'missing.json') })).toThrow(/^cannot read CONFIG_FILE ".*missing\.json": ENOENT/)
    expect(() => loadConfig({ CONFIG_FILE: file('broken.json', '{"port": ') })).toThrow(/is not valid JSON: /)
    expect(() => loadConfig({ CONFIG_FILE: file('list.json', '[1]') })).toThrow(/must hold a JSON object$/)
  })

  it('is not read when empty', () => {
    expect(loadConfig({ CONFIG_FILE: '' }).port).toBe(8000)
  })
})
