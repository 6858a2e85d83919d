import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
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

/** What worker 2 takes when worker 1 tells its host `message` (test/support/fleet-workers.ts: a real node:cluster). */
async function relayed(message: unknown): Promise<unknown[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'test/support/fleet-workers.ts', JSON.stringify(message)],
    {
      timeout: 30_000
    }
  )
  const lines = stdout.trim().split('\n')
  expect(lines.at(-1)).toBe('done')
  return lines.slice(0, -2).map((line) => JSON.parse(line) as unknown)
}

describe('health-seen between the workers of a host (WORKERS, no Redis)', () => {
  it("reaches the other worker through the primary's relay", async () => {
    const message = { kind: 'health-seen', dois: ['10.5555/a', '10.5555/B'] }
    expect(await relayed(message)).toEqual([message])
  }, 40_000)

  it('a malformed one is dropped where it arrives', async () => {
    expect(await relayed({ kind: 'health-seen', dois: ['10.5555'] })).toEqual([])
  }, 40_000)
})
