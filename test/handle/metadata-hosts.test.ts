import { describe, expect, it } from 'vitest'
import { allowedMetadataUrl, DEFAULT_METADATA_HOSTS, parseAllowedHost, parseAllowedHosts } from '../../src/handle/metadata-hosts.js'

// docs/metadata.md "The allow-list": a record chooses the location, so it must not make us fetch anything else.
const LIST = parseAllowedHosts('data.crossref.org, api.crossref.org, 127.0.0.1:8081, [::1]:9000') as Exclude<
  ReturnType<typeof parseAllowedHosts>,
  string
>

describe('which URLs a metadata fetch may go to', () => {
  it.each([
    ['https://data.crossref.org/10.1000%2F182', true],
    ['http://data.crossref.org/10.1000/182', true], // older Crossref records carry http (behaviour.md R9)
    ['HTTPS://DATA.CROSSREF.ORG/10.1000/182', true], // host names compare without case
    ['https://data.crossref.org:443/x', true], // the default port written out
    ['https://api.crossref.org/v1/works/10.1000%2F182/transform', true],
    ['http://127.0.0.1:8081/10.1000/182', true],
    ['http://[::1]:9000/x', true],
    ['https://data.crossref.org:8443/x', false], // a port the list does not name
    ['http://127.0.0.1/x', false], // listed with a port: only that port
    ['http://127.0.0.1:8082/x', false],
    ['https://data.crossref.org.evil.example/x', false],
    ['https://evil.example/data.crossref.org', false],
    ['https://data.crossref.org.:443/x', false], // a trailing dot is another name
    ['https://user:pass@data.crossref.org/x', false], // never send credentials
    ['https://data.crossref.org@evil.example/x', false],
    ['ftp://data.crossref.org/x', false],
    ['javascript:alert(1)//data.crossref.org', false],
    ['file:///etc/passwd', false],
    ['http://2130706433:8081/x', true], // the URL parser reads 2130706433 as 127.0.0.1, as a connection would
    ['not a url', false]
  ])('%s → %s', (href, allowed) => {
    expect(typeof allowedMetadataUrl(href, LIST) !== 'string').toBe(allowed)
  })

  it('the reason names the host that is not on the list', () => {
    expect(allowedMetadataUrl('https://evil.example/x', LIST)).toMatch(/evil\.example.*METADATA_HOSTS/)
  })
})

describe('METADATA_HOSTS entries', () => {
  it.each([
    ['data.crossref.org', { host: 'data.crossref.org', port: undefined }],
    ['  Data.Crossref.Org ', { host: 'data.crossref.org', port: undefined }],
    ['127.0.0.1:8081', { host: '127.0.0.1', port: 8081 }],
    ['[::1]:9000', { host: '[::1]', port: 9000 }],
    ['[::1]', { host: '[::1]', port: undefined }]
  ])('%s is read as a host and port', (entry, expected) => {
    expect(parseAllowedHost(entry)).toEqual(expected)
  })

  it.each([
    'https://data.crossref.org',
    'data.crossref.org/path',
    '*.crossref.org',
    'host:0',
    'host:70000',
    '',
    '-bad-.example',
    '[not-ipv6]',
    '1.2.3'
  ])('%j is refused', (entry) => {
    expect(typeof parseAllowedHost(entry)).toBe('string')
  })

  it("the default list holds the agencies' public metadata services, each a valid entry", () => {
    const parsed = parseAllowedHosts([...DEFAULT_METADATA_HOSTS])
    expect(Array.isArray(parsed)).toBe(true)
    expect(DEFAULT_METADATA_HOSTS).toEqual(
      expect.arrayContaining(['data.crossref.org', 'api.crossref.org', 'data.crosscite.org', 'data.medra.org'])
    )
  })
})
