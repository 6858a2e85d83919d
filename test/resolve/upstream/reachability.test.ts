import { describe, expect, it } from 'vitest'
import { createReachability, unreachableReason } from '../../../src/resolve/upstream/reachability.js'
import type { UpstreamState } from '../../../src/resolve/upstream/reachability.js'

describe("unreachableReason: a connection error's code as the cause an operator searches for", () => {
  it.each([
    ['ENOTFOUND', 'dns'], // getaddrinfo: no such host (Node's dns.lookup)
    ['EAI_AGAIN', 'dns'], // getaddrinfo: temporary failure, what a machine with no network often answers
    ['ECONNREFUSED', 'refused'],
    ['EHOSTUNREACH', 'no-route'],
    ['ENETUNREACH', 'no-route'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect-timeout'], // undici's connect timeout
    ['ECONNRESET', 'reset'],
    ['UND_ERR_SOCKET', 'reset'], // undici: the socket closed under a request
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls'], // OpenSSL verify codes as Node names them
    ['CERT_HAS_EXPIRED', 'tls'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'tls'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls'], // https:// to a plain-HTTP port
    ['EWHATEVER', undefined],
    [undefined, undefined]
  ])('%s is %s', (code, reason) => {
    expect(unreachableReason(code)).toBe(reason)
  })
})

describe('createReachability', () => {
  function tracked() {
    const changes: UpstreamState[] = []
    const reach = createReachability({ now: () => 0, onChange: (s) => changes.push(s) })
    return { reach, changes }
  }

  it('a lasting cause (DNS) says unreachable at once, and once however often it repeats', () => {
    const { reach, changes } = tracked()
    for (let i = 0; i < 5; i++) reach.failed('dns', 'getaddrinfo ENOTFOUND doi.org')
    expect(changes).toEqual([{ state: 'unreachable', reason: 'dns', detail: 'getaddrinfo ENOTFOUND doi.org', since: 0 }])
  })

  it('one slow answer or one cut connection is not an unreachable registry; three in a row with no answer between are', () => {
    const { reach, changes } = tracked()
    reach.failed('timeout', 'x')
    reach.failed('timeout', 'x')
    reach.answered()
    reach.failed('timeout', 'x')
    reach.failed('reset', 'x')
    expect(changes.map((c) => c.state)).toEqual(['answers'])
    reach.failed('timeout', 'x')
    expect(changes.map((c) => c.state)).toEqual(['answers', 'unreachable'])
  })

  it('an answer after a failure says it answers again, once', () => {
    const { reach, changes } = tracked()
    reach.failed('refused', 'x')
    reach.answered()
    reach.answered()
    expect(changes.map((c) => c.state)).toEqual(['unreachable', 'answers'])
  })
})
