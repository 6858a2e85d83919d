/**
 * Two node:cluster workers and their primary, as WORKERS=2 runs them (src/main.ts), telling each other
 * fleet messages through the primary's relay (src/resolve/fleet/messages.ts), for test/resolve/fleet/messages.test.ts.
 * Worker 1 tells the host the message given as JSON in argv[2] (as it was sent, unchecked); worker 2 prints
 * every message it takes as one JSON line, then `done` once a `purge` of `end` arrives.
 */
import cluster from 'node:cluster'
import { createFleet, relayFleetMessages } from '../../src/resolve/fleet/messages.js'
import type { FleetMessage } from '../../src/resolve/fleet/messages.js'

if (cluster.isPrimary) {
  relayFleetMessages()
  const listener = cluster.fork({ FLEET_ROLE: 'listen' })
  listener.on('message', (message: unknown) => {
    if (message !== 'listening') return
    const teller = cluster.fork({ FLEET_ROLE: 'tell' })
    teller.on('exit', () => {})
  })
  listener.on('exit', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill()
    process.exit(0)
  })
} else {
  const fleet = createFleet({ channel: 'unused' })
  if (process.env.FLEET_ROLE === 'listen') {
    fleet.onMessage((message) => {
      process.stdout.write(`${JSON.stringify(message)}\n`)
      if (message.kind === 'purge' && message.key === 'end') {
        process.stdout.write('done\n')
        process.exit(0)
      }
    })
    process.send?.('listening')
  } else {
    fleet.tellHost(JSON.parse(process.argv[2] ?? 'null') as FleetMessage)
    fleet.tellHost({ kind: 'purge', key: 'end' })
  }
}
