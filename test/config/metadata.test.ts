import { describe, expect, it } from 'vitest'
import { buildConfig, ConfigError } from '../../src/config/schema.js'

describe('metadata settings (docs/metadata.md)', () => {
  it("the default is doi.org's way: redirect, with the agencies' services on the allow-list", () => {
    const config = buildConfig(undefined, {})
    expect(config.metadataMode).toBe('redirect')
    expect(config.metadataHosts).toContain('data.crossref.org')
  })

  it('METADATA_HOSTS takes hosts and host:port entries, lower-cased', () => {
    expect(buildConfig(undefined, { METADATA_MODE: 'fetch', METADATA_HOSTS: 'Data.Crossref.Org, 127.0.0.1:8081' }).metadataHosts).toEqual([
      'data.crossref.org',
      '127.0.0.1:8081'
    ])
  })

  it.each([
    [{ METADATA_MODE: 'proxy' }, /metadataMode \(env METADATA_MODE\): expected redirect or fetch/],
    [{ METADATA_HOSTS: 'https://data.crossref.org' }, /metadataHosts .*"https:\/\/data\.crossref\.org" is not a host or host:port/],
    [{ METADATA_HOSTS: '*.crossref.org' }, /metadataHosts/],
    [{ METADATA_MAX_BODY_BYTES: '10' }, /metadataMaxBodyBytes/]
  ])('%j stops the start with a message naming the setting', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(ConfigError)
    expect(() => buildConfig(undefined, env)).toThrow(message)
  })
})
