/**
 * The open-access source's settings (docs/institutional.md "Open access first"): the config file may
 * group them as `openAccess: {…}`, and they must agree with each other and with the services' chains.
 * src/config/schema.ts calls these; `fail` throws its ConfigError.
 */
import type { LocalServiceConfig } from './local-services.js'

export type OpenAccessProvider = 'unpaywall' | 'openalex' | 'file'
export const OA_PROVIDERS: readonly OpenAccessProvider[] = ['unpaywall', 'openalex', 'file']

/**
 * The settings of the open-access step of link-out chains (docs/institutional.md), part of Config
 * (src/config/schema.ts, where OPTIONS gives each its row); the config file may group them as `openAccess`.
 */
export interface OpenAccessConfig {
  oaProvider: OpenAccessProvider | undefined
  unpaywallUrl: string
  unpaywallEmail: string | undefined
  openalexUrl: string
  oaSnapshotFile: string | undefined
  oaSnapshotMaxEntries: number
  oaBudgetMs: number
  oaTimeoutMs: number
  oaMaxBodyBytes: number
  oaConnections: number
  oaTtlSeconds: number
  oaNegativeTtlSeconds: number
  oaCacheMaxEntries: number
  oaDailyLimit: number
}

/**
 * `openAccess: {provider, …}` in the config file: each key and the top-level setting it stands for (one of
 * OpenAccessConfig's, or this does not compile).
 */
export const OPEN_ACCESS_FILE_KEYS: Readonly<Record<string, keyof OpenAccessConfig>> = {
  provider: 'oaProvider',
  unpaywallUrl: 'unpaywallUrl',
  unpaywallEmail: 'unpaywallEmail',
  openalexUrl: 'openalexUrl',
  snapshotFile: 'oaSnapshotFile',
  snapshotMaxEntries: 'oaSnapshotMaxEntries',
  budgetMs: 'oaBudgetMs',
  timeoutMs: 'oaTimeoutMs',
  maxBodyBytes: 'oaMaxBodyBytes',
  connections: 'oaConnections',
  ttlSeconds: 'oaTtlSeconds',
  negativeTtlSeconds: 'oaNegativeTtlSeconds',
  cacheMaxEntries: 'oaCacheMaxEntries',
  dailyLimit: 'oaDailyLimit'
}

/** The config file with its `openAccess` group spread into top-level settings (a key given twice is refused). */
export function spreadOpenAccess(file: Record<string, unknown>, fail: (message: string) => never): Record<string, unknown> {
  if (!('openAccess' in file)) return file
  const { openAccess: group, ...rest } = file
  if (group === null || typeof group !== 'object' || Array.isArray(group)) {
    return fail(
      `invalid setting openAccess (config file): expected an object such as {"provider": "unpaywall", "unpaywallEmail": "library@example.edu"}, got ${JSON.stringify(group)}`
    )
  }
  for (const [key, value] of Object.entries(group)) {
    const target = OPEN_ACCESS_FILE_KEYS[key]
    if (target === undefined) {
      return fail(`unknown setting "openAccess.${key}" in the config file (expected ${Object.keys(OPEN_ACCESS_FILE_KEYS).join(', ')})`)
    }
    if (target in rest) return fail(`the config file gives ${target} twice: as "${target}" and as "openAccess.${key}"`)
    rest[target] = value
  }
  return rest
}

/**
 * The provider in force: OFFLINE opens no connection, so a provider over the network (unpaywall, openalex)
 * is not used then, whatever OA_PROVIDER says; the data feed (file) is, being read from disk.
 */
export function openAccessProviderInForce(config: {
  oaProvider: OpenAccessProvider | undefined
  offline: boolean
}): OpenAccessProvider | undefined {
  return config.offline && config.oaProvider !== 'file' ? undefined : config.oaProvider
}

type OpenAccessSettings = Pick<OpenAccessConfig, 'oaProvider' | 'unpaywallEmail' | 'oaSnapshotFile'> & {
  localServices: readonly LocalServiceConfig[]
}

/** The settings that only make sense together: checked once the environment has had its say. */
export function checkOpenAccess(config: OpenAccessSettings, fail: (message: string) => never): void {
  if (config.oaProvider === 'unpaywall' && config.unpaywallEmail === undefined) {
    fail(
      "invalid setting unpaywallEmail: OA_PROVIDER=unpaywall needs UNPAYWALL_EMAIL (Unpaywall's terms: every call names an email address)"
    )
  }
  if (config.oaProvider === 'file' && config.oaSnapshotFile === undefined) {
    fail('invalid setting oaSnapshotFile: OA_PROVIDER=file needs OA_SNAPSHOT_FILE, the Unpaywall data feed (JSONL, gzip or not)')
  }
  const wanting = config.localServices.find((s) => s.linkout?.includes('open-access') === true)
  if (wanting !== undefined && config.oaProvider === undefined) {
    fail(
      `invalid setting localServices: service ${JSON.stringify(wanting.id)} has "open-access" in its linkout but OA_PROVIDER is not set (unpaywall, openalex or file)`
    )
  }
}
