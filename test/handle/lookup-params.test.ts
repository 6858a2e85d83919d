import { describe, expect, it } from 'vitest'
import { lookupParamsOf, missStatus, PLAIN_LOOKUP } from '../../src/handle/lookup-params.js'

// behaviour.md §3, R11: auth and cert are sent upstream, and a query with either bypasses every cache.
describe('lookupParamsOf: what a query asks of the lookup', () => {
  it.each([
    [[], { auth: false, cert: false, bypassCache: false }],
    [['auth'], { auth: true, cert: false, bypassCache: true }],
    [['cert'], { auth: false, cert: true, bypassCache: true }],
    [['auth', 'cert'], { auth: true, cert: true, bypassCache: true }]
  ])('parameters on %j → %j', (on, expected) => {
    expect(lookupParamsOf((name) => on.includes(name))).toEqual(expected)
  })
})

// behaviour.md §3: X-Cache of an answer the upstream was asked for: BYPASS when the query bypassed the caches.
describe('missStatus: the X-Cache of an upstream answer', () => {
  it.each([
    [{ bypassCache: false }, 'MISS'],
    [{ bypassCache: true }, 'BYPASS']
  ])('%j → %s', (params, expected) => {
    expect(missStatus(params)).toBe(expected)
  })

  it('a plain lookup is a MISS', () => {
    expect(missStatus(PLAIN_LOOKUP)).toBe('MISS')
  })
})
