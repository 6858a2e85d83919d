import { describe, expect, it } from 'vitest'
import { buildConfig } from '../../src/config/schema.js'

// The local services' settings (behaviour.md §10): a bad one stops the start with a message naming it.
const SFX = {
  id: 'sfx',
  name: 'University Library',
  url: 'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:{doi}',
  networks: ['192.0.2.0/24', '2001:db8::/32']
}

describe('local services in the configuration', () => {
  it('none by default', () => {
    expect(buildConfig(undefined, {}).localServices).toEqual([])
  })

  it('a list in the config file, with networks and prefixes', () => {
    const c = buildConfig({ localServices: [{ ...SFX, prefixes: ['10.1000'] }] }, {})
    expect(c.localServices).toEqual([{ ...SFX, prefixes: ['10.1000'] }])
  })

  it('LOCAL_SERVICES as JSON in the environment', () => {
    const c = buildConfig(undefined, { LOCAL_SERVICES: JSON.stringify([SFX]) })
    expect(c.localServices).toEqual([{ ...SFX, prefixes: [] }])
  })

  it('LOCAL_SERVICE_URL with LOCAL_SERVICE_NETWORKS is one service with id local, named "Your library" unless told', () => {
    const c = buildConfig(undefined, {
      LOCAL_SERVICE_URL: 'https://alma.example.edu/openurl?rft_id=info:doi/{doi}',
      LOCAL_SERVICE_NETWORKS: '0.0.0.0/0,::/0'
    })
    expect(c.localServices).toEqual([
      {
        id: 'local',
        name: 'Your library',
        url: 'https://alma.example.edu/openurl?rft_id=info:doi/{doi}',
        networks: ['0.0.0.0/0', '::/0'],
        prefixes: []
      }
    ])
    expect(
      buildConfig(undefined, { LOCAL_SERVICE_URL: 'https://a.example/?doi={doi}', LOCAL_SERVICE_NAME: 'Main Library' }).localServices[0]
        ?.name
    ).toBe('Main Library')
  })

  it.each([
    [
      { LOCAL_SERVICE_URL: 'https://alma.example.edu/openurl?rft_id=info:doi/' },
      /localServiceUrl \(env LOCAL_SERVICE_URL\): the URL template "https:\/\/alma.example.edu\/openurl\?rft_id=info:doi\/" has no \{doi\}/
    ],
    [
      { LOCAL_SERVICE_URL: 'ftp://alma.example.edu/{doi}' },
      /localServiceUrl \(env LOCAL_SERVICE_URL\): the URL template "ftp:\/\/alma.example.edu\/\{doi\}" is not an http\(s\) URL/
    ],
    [{ LOCAL_SERVICE_URL: 'javascript:alert({doi})' }, /localServiceUrl.*not an http\(s\) URL/],
    [{ LOCAL_SERVICE_URL: 'https://a.example/?doi={DOI}' }, /localServiceUrl.*has no \{doi\}/],
    [{ LOCAL_SERVICE_URL: 'https://a.example/?doi={doi}&back={retrun}' }, /localServiceUrl.*unknown placeholder \{retrun\}/],
    [{ LOCAL_SERVICE_URL: 'https://a.example/?doi={doi} x' }, /localServiceUrl.*printable ASCII without spaces/],
    [
      { LOCAL_SERVICE_URL: 'https://a.example/?doi={doi}', LOCAL_SERVICE_NETWORKS: '10.0.0.0/33' },
      /localServiceNetworks \(env LOCAL_SERVICE_NETWORKS\)/
    ],
    [{ LOCAL_SERVICES: 'not json' }, /localServices \(env LOCAL_SERVICES\): expected a JSON list of services/],
    [{ LOCAL_SERVICES: '{"id":"sfx"}' }, /localServices \(env LOCAL_SERVICES\): expected a list of services/],
    [
      { LOCAL_SERVICES: JSON.stringify([{ ...SFX, url: 'https://sfx.example.edu/sfxlcl41' }]) },
      /localServices \(env LOCAL_SERVICES\): service "sfx": the URL template "https:\/\/sfx.example.edu\/sfxlcl41" has no \{doi\}/
    ],
    [{ LOCAL_SERVICES: JSON.stringify([{ ...SFX, id: 'none' }]) }, /localServices.*service 1: the id "none" must be/],
    [{ LOCAL_SERVICES: JSON.stringify([{ ...SFX, id: 'a b' }]) }, /localServices.*the id "a b" must be letters, digits/],
    [{ LOCAL_SERVICES: JSON.stringify([SFX, SFX]) }, /localServices.*two local services have the id "sfx"/],
    [{ LOCAL_SERVICES: JSON.stringify([{ ...SFX, networks: ['campus'] }]) }, /service "sfx": "campus" is not an address or CIDR/],
    [{ LOCAL_SERVICES: JSON.stringify([{ ...SFX, prefixes: ['10.1000/x'] }]) }, /service "sfx": "10.1000\/x" is not a DOI prefix/],
    [{ LOCAL_SERVICES: JSON.stringify([{ ...SFX, name: '' }]) }, /service "sfx": the name must be a non-empty line/],
    [{ LOCAL_SERVICES: JSON.stringify([{ ...SFX, network: ['10.0.0.0/8'] }]) }, /service 1: unknown key "network"/],
    [
      { LOCAL_SERVICES: JSON.stringify([{ ...SFX, id: 'local' }]), LOCAL_SERVICE_URL: 'https://a.example/?doi={doi}' },
      /two local services have the id "local".*LOCAL_SERVICE_URL/
    ]
  ])('a bad local service %o stops the start with a message naming it', (env, message) => {
    expect(() => buildConfig(undefined, env)).toThrow(message)
  })

  it('a bad service in the config file names the file as its source', () => {
    expect(() => buildConfig({ localServices: [{ ...SFX, url: 'https://x.example/' }] }, {})).toThrow(
      /localServices \(config file\): service "sfx"/
    )
  })
})

describe("a service's link-out chain (docs/institutional.md)", () => {
  const EZ = 'https://login.ezproxy.example.edu/login?url={url}'
  it('linkout and ezproxy are kept as given', () => {
    const c = buildConfig(
      {
        localServices: [
          { ...SFX, linkout: ['service', 'registered'] },
          { id: 'anyone', name: 'Everyone else', networks: ['0.0.0.0/0', '::/0'], linkout: ['open-access', 'ezproxy'], ezproxy: EZ }
        ],
        openAccess: { provider: 'openalex' }
      },
      {}
    )
    expect(c.localServices[0]?.linkout).toEqual(['service', 'registered'])
    expect(c.localServices[1]).toEqual({
      id: 'anyone',
      name: 'Everyone else',
      networks: ['0.0.0.0/0', '::/0'],
      prefixes: [],
      linkout: ['open-access', 'ezproxy'],
      ezproxy: EZ
    })
  })

  it('a service whose chain never names "service" needs no url', () => {
    const c = buildConfig(undefined, {
      LOCAL_SERVICES: JSON.stringify([{ id: 'oa', name: 'Open access', networks: ['0.0.0.0/0'], linkout: ['open-access', 'registered'] }]),
      OA_PROVIDER: 'openalex'
    })
    expect(c.localServices[0]?.url).toBeUndefined()
  })

  it.each([
    [
      { id: 'oa', name: 'OA', linkout: ['service', 'registered'] },
      /service "oa": the url must be a URL template with \{doi\}, got undefined \(its linkout names "service"\)/
    ],
    [{ id: 'oa', name: 'OA' }, /service "oa": the url must be a URL template/],
    [
      { ...SFX, linkout: [] },
      /service "sfx": linkout must be a list of steps from "open-access", "service", "ezproxy", "registered", got \[\]/
    ],
    [{ ...SFX, linkout: 'service' }, /service "sfx": linkout must be a list of steps/],
    [{ ...SFX, linkout: ['openaccess'] }, /service "sfx": linkout step "openaccess" is not one of "open-access"/],
    [{ ...SFX, linkout: ['service', 'service'] }, /service "sfx": linkout names a step twice/],
    [{ ...SFX, linkout: ['ezproxy'] }, /service "sfx": its linkout names "ezproxy" but it has no ezproxy template/],
    [
      { ...SFX, ezproxy: 'https://login.ezproxy.example.edu/login?qurl={doi}' },
      /service "sfx": ezproxy must be an EZproxy template .* with \{url\} last/
    ],
    [{ ...SFX, ezproxy: 'https://login.ezproxy.example.edu/login?url={url}&x=1' }, /with \{url\} last/],
    [{ ...SFX, ezproxy: 'javascript:x({url}' }, /service "sfx": ezproxy must be an EZproxy template/],
    [
      { ...SFX, ezproxy: 'https://ez.example/{doi}/login?url={url}' },
      /service "sfx": the ezproxy template has an unknown placeholder \{doi\}/
    ]
  ])('a bad chain %o stops the start with a message naming the service', (service, message) => {
    expect(() => buildConfig({ localServices: [service] }, {})).toThrow(message)
  })
})
