import type { Config } from '../config/schema.js'
import type { PurgeResult } from '../http/route-context.js'
import { cacheSourceOf, sourceId } from '../resolve/cache/source.js'
import { createFleet } from '../resolve/fleet/messages.js'
import type { Fleet } from '../resolve/fleet/messages.js'
import type { CacheTiers } from './cache-tiers.js'
import type { GuardedUpstream } from './upstream.js'

/** What names the fleet's channel: the key prefix and the records' source (one upstream's purge is not another's). */
export type FleetSettings = Pick<Config, 'redisKeyPrefix' | 'upstreamUrl' | 'offline'>

/**
 * This process among the others of its host and its replicas (src/resolve/fleet/messages.ts): the
 * registry's wait (its 429) held here too when another process met it, and a purge (DELETE
 * /api/cache/{doi}, src/http/routes/cache.ts): the key leaves this process's memory (`dropHere`: true when
 * it held it), then the snapshot and Redis, and the other processes are told to drop it too.
 */
export function joinFleet(
  settings: FleetSettings,
  parts: {
    tiers: Pick<CacheTiers, 'redis' | 'forget'>
    upstream: GuardedUpstream | undefined
    dropHere: (key: string) => boolean
  }
): { fleet: Fleet; purge: (key: string) => Promise<PurgeResult> } {
  const { tiers, upstream, dropHere } = parts
  const fleet = createFleet({ redis: tiers.redis, channel: `${settings.redisKeyPrefix}v1:fleet:${sourceId(cacheSourceOf(settings))}` })
  fleet.onMessage((message) => {
    if (message.kind === 'upstream-wait') upstream?.guarded.holdUntil(message.until)
    if (message.kind === 'purge') {
      dropHere(message.key)
      tiers.forget(message.key, false).catch(() => {})
    }
  })
  const purge = async (key: string): Promise<PurgeResult> => {
    const held = dropHere(key)
    const redis = await tiers.forget(key, true)
    const told = await fleet.tellAll({ kind: 'purge', key })
    return { held, redis, told }
  }
  return { fleet, purge }
}
