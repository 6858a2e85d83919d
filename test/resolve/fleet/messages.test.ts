import { describe, expect, it } from 'vitest'
import { fleetMessageOf, MAX_SEEN_PER_MESSAGE } from '../../../src/resolve/fleet/messages.js'

// What one process tells another is checked as it arrives (src/resolve/fleet/messages.ts): anything else is dropped.

describe('fleetMessageOf', () => {
  it.each([
    // [what arrived, what is taken] — issue 42's health-seen: DOIs with a '/', at most MAX_SEEN_PER_MESSAGE
    [
      { kind: 'health-seen', dois: ['10.5555/a', '10.5555/B'] },
      { kind: 'health-seen', dois: ['10.5555/a', '10.5555/B'] }
    ],
    [{ kind: 'health-seen', dois: [] }, undefined],
    [{ kind: 'health-seen', dois: ['10.5555'] }, undefined], // a prefix record is never watched
    [{ kind: 'health-seen', dois: ['/10.5555'] }, undefined],
    [{ kind: 'health-seen', dois: ['10.5555/a', 7] }, undefined],
    [{ kind: 'health-seen', dois: '10.5555/a' }, undefined],
    [{ kind: 'health-seen', dois: [`10.5555/${'x'.repeat(20_000)}`] }, undefined],
    [{ kind: 'health-seen', dois: Array.from({ length: MAX_SEEN_PER_MESSAGE + 1 }, (_, i) => `10.5555/${i}`) }, undefined],
    // the older kinds, as before
    [
      { kind: 'purge', key: '10.5555/A' },
      { kind: 'purge', key: '10.5555/A' }
    ],
    [
      { kind: 'upstream-wait', until: 5 },
      { kind: 'upstream-wait', until: 5 }
    ],
    [{ kind: 'upstream-wait', until: Infinity }, undefined],
    [null, undefined],
    ['health-seen', undefined]
  ])('%j', (raw, expected) => {
    expect(fleetMessageOf(raw)).toEqual(expected)
  })

  it(`takes ${MAX_SEEN_PER_MESSAGE} DOIs in one message`, () => {
    const dois = Array.from({ length: MAX_SEEN_PER_MESSAGE }, (_, i) => `10.5555/${i}`)
    expect(fleetMessageOf({ kind: 'health-seen', dois })).toEqual({ kind: 'health-seen', dois })
  })
})
