import { describe, expect, it } from 'vitest'
import { createLogThrottle } from '../../src/observe/log-throttle.js'

describe('log throttle', () => {
  it('lets a line through once per interval per key and counts the ones held back', () => {
    let now = 0
    const throttled = createLogThrottle(1000, () => now)
    const emitted: Array<[string, number]> = []
    for (let i = 0; i < 5; i++) throttled('DP_UPSTREAM_STATUS', (n) => emitted.push(['status', n]))
    throttled('DP_UPSTREAM_TIMEOUT', (n) => emitted.push(['timeout', n]))
    now = 1000
    throttled('DP_UPSTREAM_STATUS', (n) => emitted.push(['status', n]))
    expect(emitted).toEqual([
      ['status', 0],
      ['timeout', 0],
      ['status', 4]
    ])
  })
})
