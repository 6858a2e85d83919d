import { checkIds } from './local-services.js'
import type { LocalServiceConfig } from './local-services.js'
import { DEFAULT_METADATA_HOSTS } from '../handle/metadata-hosts.js'
import { VERIFY_LEVELS } from '../handle/verify/types.js'
import type { VerifyLevel } from '../handle/verify/types.js'
import { checkOpenAccess, OA_PROVIDERS, spreadOpenAccess } from './open-access.js'
import type { OpenAccessConfig } from './open-access.js'
import {
  bearerToken,
  flag,
  flagOrNetworks,
  hosts,
  httpUrl,
  integer,
  localServices,
  names,
  networks,
  oneOf,
  optional,
  prefixes,
  proxyTrust,
  redisNodes,
  redisUrl,
  schemes,
  secret,
  text,
  urlTemplate,
  verifyLevels,
  zeroOrInteger
} from './parsers.js'
import type { Parse, Refuse } from './parsers.js'

export { parseCidr } from './parsers.js'

/**
 * Every setting doi-proxy has: its name, its environment variable, its default and its check.
 * OPTIONS is the single source of truth, one row per Config field: a field without a row, a row
 * without a field, or a default or parser of another type than its field does not compile
 * (test/config/schema-types.test.ts). The README's configuration table is printed from it.
 * The open-access settings' fields are declared beside their checks (OpenAccessConfig, src/config/open-access.ts).
 */
export interface Config extends OpenAccessConfig {
  host: string
  port: number
  workers: number
  upstreamUrl: string
  upstreamTimeoutMs: number
  upstreamConnectTimeoutMs: number
  upstreamConnections: number
  upstreamMaxBodyBytes: number
  userAgent: string
  contactEmail: string | undefined
  publicBaseUrl: string | undefined
  /** false, true (every hop), a number of proxies in front, or the proxies' addresses/CIDRs (Fastify's trustProxy). */
  trustProxy: boolean | number | string[]
  cacheMaxEntries: number
  cacheMaxBytes: number
  cacheMaxTtlSeconds: number
  cacheMinTtlSeconds: number
  negativeTtlSeconds: number
  adminToken: string | undefined
  maxStaleSeconds: number
  maxHandleLength: number
  allowedSchemes: string[]
  logLevel: string
  logFormat: 'auto' | 'json' | 'pretty'
  logRequests: boolean
  shutdownGraceMs: number
  drainDelayMs: number
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  maxHeaderBytes: number
  raNames: Record<string, string>
  raMaxDois: number
  raConcurrency: number
  batchMaxLines: number
  batchMaxBytes: number
  batchConcurrency: number
  countryHeader: string | undefined
  geoipDatabase: string | undefined
  localStoreDir: string | undefined
  localAuthoritativePrefixes: string[]
  localStoreWatch: boolean
  localStorePollMs: number
  recordTo: string | undefined
  offline: boolean
  /** behaviour.md §10: every local service, the LOCAL_SERVICE_URL one (id `local`) last. */
  localServices: LocalServiceConfig[]
  localServiceUrl: string | undefined
  localServiceNetworks: string[]
  localServiceName: string
  upstreamMaxConcurrent: number
  upstreamQueueSize: number
  upstreamQueueTimeoutMs: number
  upstreamPerClient: number
  upstreamClientQueue: number
  trustedNetworks: string[]
  requestDeadlineMs: number
  upstreamRetries: number
  upstreamRetryBaseMs: number
  upstreamRetryMaxMs: number
  breakerErrorThresholdPercent: number
  breakerVolumeThreshold: number
  breakerResetMs: number
  breakerWindowMs: number
  refreshAhead: boolean
  rateLimitMax: number
  rateLimitWindowMs: number
  rateLimitAllowList: string[]
  /** Who may see /status and /status.json (issue 15). */
  statusAllow: string[]
  authRateLimitMax: number
  maxEventLoopDelayMs: number
  cacheFile: string | undefined
  cacheSnapshotIntervalSeconds: number
  redisUrl: string | undefined
  /** host:port of each Sentinel; with redisSentinelMaster instead of redisUrl. */
  redisSentinels: string[]
  redisSentinelMaster: string | undefined
  /** host:port of some of a Redis Cluster's nodes, instead of redisUrl. */
  redisClusterNodes: string[]
  redisUsername: string | undefined
  redisPassword: string | undefined
  redisTlsCaFile: string | undefined
  redisKeyPrefix: string
  redisCommandTimeoutMs: number
  redisConnectTimeoutMs: number
  redisLockTtlMs: number
  redisWaitPollMs: number
  /** docs/metadata.md: answer negotiated requests with a redirect (doi.org's way) or the metadata itself. */
  metadataMode: 'redirect' | 'fetch'
  /** host or host:port entries, lower-cased (src/handle/metadata-hosts.ts). */
  metadataHosts: string[]
  metadataTimeoutMs: number
  metadataMaxBodyBytes: number
  metadataCacheMaxBytes: number
  metadataMaxTtlSeconds: number
  metadataAgencyConcurrency: number
  metadataMaxRedirects: number
  /** Issue 41: the levels `POST /api/batch?verify=` (and so `check --verify`) may run; empty: none. */
  verifyLevels: VerifyLevel[]
  verifyConcurrency: number
  retractionsFrom: 'crossref' | 'file' | 'off'
  retractionsFile: string | undefined
  crossrefApiUrl: string
  crossrefConcurrency: number
  crossrefTimeoutMs: number
  crossrefMaxBodyBytes: number
  retractionsTtlSeconds: number
  landingPerHost: number
  landingHostDelayMs: number
  landingTimeoutMs: number
  landingMaxBytes: number
  landingTtlSeconds: number
  landingShortTtlSeconds: number
  landingRobotsTtlSeconds: number
  landingCacheMaxEntries: number
  /** false, true (every address), or the addresses/CIDRs of the only private networks a landing check may reach (src/handle/address-rules.ts). */
  landingAllowPrivate: boolean | string[]
  /** Issue 42: the prefixes whose DOIs are watched; health checking is on when this or healthListFile is set (`healthEnabled`). */
  healthWatch: string[]
  healthListFile: string | undefined
  healthIntervalSeconds: number
  healthConfirm: number
  healthConfirmGapSeconds: number
  /** The history's SQLite file; undefined while health is off (nothing opened, no path checked at start) or when HEALTH_DB is empty (in memory). */
  healthDb: string | undefined
  healthKeepDays: number
  healthConcurrency: number
  healthMaxDois: number
  healthLogKeepSeconds: number
  /** Issue 43: the registry copy's directory (an LMDB store made by `doi-proxy import`); undefined: no copy. */
  registryCopy: string | undefined
  registryCopyMaxAgeSeconds: number
  registryCopyUpdateHours: number
  registryCopyMaxBytes: number
  registryCopyMinFreeBytes: number
  registryCopyMaxRecordBytes: number
  registryCopyCitationQueue: number
  registryCopyUpdateTimeoutMs: number
  dataciteApiUrl: string
}

/**
 * What a setting that names a file or directory needs of it, checked at start before anything else
 * (src/main/paths.ts): a file or directory that must exist and be readable, or one written to, which
 * need not exist yet (it is created, with its missing directories) but must not be of the other kind.
 */
export type PathUse = 'file to read' | 'directory to read' | 'file to write' | 'directory to write'

/** One setting: where it is read from, its value when unset, how a given value is checked, and its README line. */
export interface Option<T> {
  env: string
  default: T
  parse: Parse<T>
  doc: string
  /** Set on every setting that names a file or directory (only a text setting can). */
  path?: [T] extends [string | undefined] ? PathUse : never
}

/** One Option per field of `C`, of that field's type. */
export type OptionTable<C> = { readonly [K in keyof C]: Option<C[K]> }

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

// One setting a line, as in the README's table printed from it: the formatter leaves the table as it is.
// prettier-ignore
export const OPTIONS: OptionTable<Config> = {
  host: { env: 'HOST', default: '127.0.0.1', parse: text, doc: 'Address to listen on (the container image sets 0.0.0.0).' },
  port: { env: 'PORT', default: 8000, parse: integer(0, 65535), doc: 'Port to listen on.' },
  workers: { env: 'WORKERS', default: 1, parse: integer(0, 256), doc: 'Server processes sharing the port (node:cluster); 0 means one per core: the container\'s CPU quota (cgroup cpu.max) when it has one, else the cores (the image\'s default). Each has its own cache; with REDIS_URL they share it too. They share the host\'s budgets towards others: UPSTREAM_MAX_CONCURRENT, UPSTREAM_CONNECTIONS, METADATA_AGENCY_CONCURRENCY and OA_CONNECTIONS are divided among them (rounded down, at least one each), and OA_DAILY_LIMIT too unless Redis counts it for all.' },
  upstreamUrl: { env: 'UPSTREAM_URL', default: 'https://doi.org/api/handles', parse: httpUrl, doc: 'Base of the upstream Handle REST API; handle H is fetched as UPSTREAM_URL + "/" + H, path-encoded.' },
  upstreamTimeoutMs: { env: 'UPSTREAM_TIMEOUT_MS', default: 10_000, parse: integer(100, 120_000), doc: 'A whole upstream request (connect, headers, body) gives up after this long: 504.' },
  upstreamConnectTimeoutMs: { env: 'UPSTREAM_CONNECT_TIMEOUT_MS', default: 3_000, parse: integer(100, 60_000), doc: 'TCP/TLS connect timeout to the upstream.' },
  upstreamConnections: { env: 'UPSTREAM_CONNECTIONS', default: 16, parse: integer(1, 1024), doc: 'Most connections kept open to the upstream (the pool bound).' },
  upstreamMaxBodyBytes: { env: 'UPSTREAM_MAX_BODY_BYTES', default: 1024 * 1024, parse: integer(1024, 64 * 1024 * 1024), doc: 'Largest upstream answer accepted; a larger one is a 502.' },
  userAgent: { env: 'USER_AGENT', default: 'doi-proxy/0.1 (self-hosted DOI resolver)', parse: text, doc: 'User-Agent sent upstream (doi.org refuses requests without one).' },
  contactEmail: { env: 'CONTACT_EMAIL', default: undefined, parse: optional(text), doc: 'Appended to the User-Agent as `mailto:` so the upstream operator can reach you. Recommended.' },
  publicBaseUrl: { env: 'PUBLIC_BASE_URL', default: undefined, parse: optional(httpUrl), doc: 'Base URL of this resolver as users see it (behind a reverse proxy), for alias redirects and self-links. Default: taken from the request.' },
  trustProxy: { env: 'TRUST_PROXY', default: false, parse: proxyTrust, doc: 'Trust `X-Forwarded-*` headers (client address, scheme, host) from your own reverse proxy: a number of proxies in front (`1` behind one nginx: the address it saw, which a client cannot forge), or their addresses/CIDRs. `true` trusts every hop, so the client address is the leftmost `X-Forwarded-For` entry, which a client can write itself unless your proxy overwrites the header. Never set it without a proxy.' },
  cacheMaxEntries: { env: 'CACHE_MAX_ENTRIES', default: 200_000, parse: integer(1, 100_000_000), doc: 'Most records (and not-found answers) held in memory.' },
  cacheMaxBytes: { env: 'CACHE_MAX_BYTES', default: 256 * 1024 * 1024, parse: integer(1024, 64 * 1024 * 1024 * 1024), doc: 'Most bytes of records held in memory by each process (estimated from their JSON size; they take up to about 3× that in memory, so a process needs ~128 MiB plus 3× this: a warning at start when the container\'s memory limit is smaller; docs/operations.md, Tuning).' },
  cacheMaxTtlSeconds: { env: 'CACHE_MAX_TTL_SECONDS', default: 86_400, parse: integer(0, 30 * 86400), doc: 'A record is kept fresh at most this long, whatever its values\' `ttl` say.' },
  cacheMinTtlSeconds: { env: 'CACHE_MIN_TTL_SECONDS', default: 60, parse: integer(0, 86400), doc: 'A record is kept fresh at least this long (except a value with `ttl` 0: not cached).' },
  negativeTtlSeconds: { env: 'NEGATIVE_TTL_SECONDS', default: 60, parse: integer(0, 86400), doc: 'How long a not-found answer is cached (a DOI\'s, and an agency\'s 404 or 406 for fetched metadata); 0 disables. To drop one sooner (a DOI registered minutes ago): `DELETE /api/cache/{doi}` with ADMIN_TOKEN.' },
  adminToken: { env: 'ADMIN_TOKEN', default: undefined, parse: optional(bearerToken(32)), doc: 'Turns on `DELETE /api/cache/{doi}` (drop a DOI\'s cached answer from every cache tier of every replica), asked with `Authorization: Bearer <ADMIN_TOKEN>`: at least 32 characters of A–Z a–z 0–9 - . _ ~ + / (e.g. `openssl rand -hex 32`); never logged or shown. Empty: off. See docs/operations.md.' },
  maxStaleSeconds: { env: 'MAX_STALE_SECONDS', default: 7 * 86400, parse: integer(0, 365 * 86400), doc: 'When the upstream fails, an expired record (or fetched metadata) up to this old is served (`X-Cache: STALE`); 0 disables.' },
  maxHandleLength: { env: 'MAX_HANDLE_LENGTH', default: 4096, parse: integer(16, 65536), doc: 'Longest handle accepted (characters after decoding); longer is 414.' },
  allowedSchemes: { env: 'ALLOWED_SCHEMES', default: ['http', 'https', 'ftp'], parse: schemes, doc: 'URL schemes redirected to (comma-separated); others show the values page.' },
  logLevel: { env: 'LOG_LEVEL', default: 'info', parse: oneOf(LOG_LEVELS, `one of ${LOG_LEVELS.join(', ')}`), doc: `Log level: ${LOG_LEVELS.join(', ')}.` },
  logFormat: { env: 'LOG_FORMAT', default: 'auto', parse: oneOf(['auto', 'json', 'pretty'], 'auto, json or pretty'), doc: 'How log lines are written: `json`, one JSON object a line (for journald, Docker, a log shipper); `pretty`, coloured and readable (pino-pretty), for a person at a terminal; `auto`, pretty when standard output is a terminal, JSON otherwise.' },
  logRequests: { env: 'LOG_REQUESTS', default: false, parse: flag, doc: 'Log one line per request (an access log) at info. Off by default: a line per request costs throughput (up to a fifth in bench/), and every request then goes through the router, so cached DOIs no longer take the hot path (docs/architecture.md); your reverse proxy may keep access logs already. Warnings and errors are always logged with the request id.' },
  shutdownGraceMs: { env: 'SHUTDOWN_GRACE_MS', default: 10_000, parse: integer(0, 600_000), doc: 'On SIGTERM/SIGINT, the whole shutdown (drain delay and in-flight requests) gets this long before the process exits anyway.' },
  drainDelayMs: { env: 'DRAIN_DELAY_MS', default: 0, parse: integer(0, 600_000), doc: 'On SIGTERM, /readyz fails this long before the listener closes (set it above your load balancer\'s check interval).' },
  requestTimeoutMs: { env: 'REQUEST_TIMEOUT_MS', default: 30_000, parse: integer(1000, 600_000), doc: 'A client request (headers and body) must arrive within this time, or 408 and the connection is closed; checked every tenth of it (at most every second), so a slow client is cut that close to it. A client that stops reading our answer is cut once none of it has gone out for this long.' },
  keepAliveTimeoutMs: { env: 'KEEP_ALIVE_TIMEOUT_MS', default: 5_000, parse: integer(0, 600_000), doc: 'Idle keep-alive connections are closed after this long.' },
  maxHeaderBytes: { env: 'MAX_HEADER_BYTES', default: 16 * 1024, parse: integer(1024, 1024 * 1024), doc: 'Largest request line plus headers accepted (431 beyond).' },
  raNames: { env: 'RA_NAMES', default: {}, parse: names, doc: 'Extra Which RA? names: `SERV=Name,…` mapping `10.SERV/SERV` to a display name (wins over the built-in table).' },
  raMaxDois: { env: 'RA_MAX_DOIS', default: 100, parse: integer(1, 10_000), doc: 'Most DOIs in one Which RA? request; more is 400.' },
  raConcurrency: { env: 'RA_CONCURRENCY', default: 8, parse: integer(1, 256), doc: 'Lookups one Which RA? request runs at once.' },
  batchMaxLines: { env: 'BATCH_MAX_LINES', default: 10_000, parse: integer(1, 1_000_000), doc: 'Most DOI lines in one batch (POST /api/batch); more is 413, naming this limit.' },
  batchMaxBytes: { env: 'BATCH_MAX_BYTES', default: 2 * 1024 * 1024, parse: integer(1024, 64 * 1024 * 1024), doc: 'Largest batch body in bytes; larger is 413, naming this limit.' },
  batchConcurrency: { env: 'BATCH_CONCURRENCY', default: 16, parse: integer(1, 256), doc: 'Lookups one batch runs at once (the default is UPSTREAM_MAX_CONCURRENT\'s, so a batch can use all the upstream it is given). Each waits its turn in the client\'s fair queue like any miss, so a batch never starves other readers and gets no more than the client\'s share (UPSTREAM_PER_CLIENT in flight, unless in TRUSTED_NETWORKS); at most UPSTREAM_PER_CLIENT + UPSTREAM_CLIENT_QUEUE are used, so it never overflows its own queue.' },
  upstreamMaxConcurrent: { env: 'UPSTREAM_MAX_CONCURRENT', default: 16, parse: integer(1, 1024), doc: 'Most upstream requests in flight at once, for the whole host (WORKERS divide it; be polite: doi.org answers 429 to parallel clients).' },
  upstreamQueueSize: { env: 'UPSTREAM_QUEUE_SIZE', default: 1000, parse: integer(0, 1_000_000), doc: 'Most lookups waiting for an upstream slot, over all clients; beyond it, 503 with Retry-After.' },
  upstreamQueueTimeoutMs: { env: 'UPSTREAM_QUEUE_TIMEOUT_MS', default: 5_000, parse: integer(1, 120_000), doc: 'A lookup waiting this long for an upstream slot gets 503 (or a stale record).' },
  upstreamPerClient: { env: 'UPSTREAM_PER_CLIENT', default: 8, parse: integer(1, 1024), doc: 'Most upstream lookups one client (an IPv4 address, an IPv6 /64) has in flight; its further lookups wait in its own queue, and clients are served in turn, so one client cannot starve the others. Cached answers are never limited.' },
  upstreamClientQueue: { env: 'UPSTREAM_CLIENT_QUEUE', default: 32, parse: integer(0, 100_000), doc: 'Most lookups one client may have waiting for the upstream; beyond it, 429 with Retry-After.' },
  trustedNetworks: { env: 'TRUSTED_NETWORKS', default: [], parse: networks, doc: 'Client networks without the per-client bounds (comma-separated addresses or CIDRs): a link resolver or campus gateway behind one address. They still take their turn in the fair queue.' },
  requestDeadlineMs: { env: 'REQUEST_DEADLINE_MS', default: 20_000, parse: integer(100, 600_000), doc: 'One deadline per request: alias hops, queue waits and retries all spend it; then 504 (or a stale record), never a longer wait.' },
  upstreamRetries: { env: 'UPSTREAM_RETRIES', default: 2, parse: integer(0, 10), doc: 'Retries after a 429, any 5xx (500 to 599) or a dropped connection, within the upstream timeout and the request deadline.' },
  upstreamRetryBaseMs: { env: 'UPSTREAM_RETRY_BASE_MS', default: 250, parse: integer(1, 60_000), doc: 'First retry delay, doubled each time (a Retry-After from the upstream wins).' },
  upstreamRetryMaxMs: { env: 'UPSTREAM_RETRY_MAX_MS', default: 4_000, parse: integer(1, 120_000), doc: 'Longest retry delay.' },
  breakerErrorThresholdPercent: { env: 'BREAKER_ERROR_THRESHOLD_PERCENT', default: 50, parse: integer(1, 100), doc: 'The circuit breaker opens when this share of upstream requests in the window failed.' },
  breakerVolumeThreshold: { env: 'BREAKER_VOLUME_THRESHOLD', default: 10, parse: integer(1, 1_000_000), doc: 'The breaker judges only windows with at least this many requests.' },
  breakerResetMs: { env: 'BREAKER_RESET_MS', default: 15_000, parse: integer(100, 3_600_000), doc: 'An open breaker lets one probe through after this long; success closes it.' },
  breakerWindowMs: { env: 'BREAKER_WINDOW_MS', default: 30_000, parse: integer(1_000, 3_600_000), doc: 'The breaker\'s rolling window.' },
  refreshAhead: { env: 'REFRESH_AHEAD', default: true, parse: flag, doc: 'A record asked for in the last tenth of its lifetime is refreshed in the background, so popular DOIs never wait on the upstream.' },
  rateLimitMax: { env: 'RATE_LIMIT_MAX', default: 0, parse: integer(0, 100_000_000), doc: 'Lookups that need the upstream, per client address per window; 0 turns this limit off. Cached answers are never counted.' },
  rateLimitWindowMs: { env: 'RATE_LIMIT_WINDOW_MS', default: 60_000, parse: integer(1_000, 86_400_000), doc: 'The rate-limit window.' },
  rateLimitAllowList: { env: 'RATE_LIMIT_ALLOW_LIST', default: ['127.0.0.1/32', '::1/128'], parse: networks, doc: 'Client networks never rate limited (comma-separated addresses or CIDRs, e.g. a campus).' },
  statusAllow: { env: 'STATUS_ALLOW', default: ['127.0.0.0/8', '::1/128'], parse: networks, doc: 'Client networks that may see the status page `/status` and `/status.json` (comma-separated addresses or CIDRs); others get 403. Loopback only by default: keep it off the public internet. The client address honours `TRUST_PROXY`. See docs/operations.md.' },
  authRateLimitMax: { env: 'AUTH_RATE_LIMIT_MAX', default: 30, parse: integer(0, 100_000_000), doc: 'Requests with `auth` or `cert` (they bypass the cache) per client per window; 0 turns this limit off.' },
  maxEventLoopDelayMs: { env: 'MAX_EVENT_LOOP_DELAY_MS', default: 1_000, parse: integer(0, 60_000), doc: 'Above this event-loop delay, lookups that need the upstream get 503 with Retry-After (load shedding; cached answers are still served); 0 disables.' },
  localServices: { env: 'LOCAL_SERVICES', default: [], parse: localServices, doc: 'Local services ("appropriate copy"): a JSON list of `{"id", "name", "url", "networks", "prefixes", "linkout", "ezproxy"}`. Readers inside `networks` (CIDRs; for DOIs under `prefixes`, if given) or who chose the service at /settings are sent to `url`, a template with `{doi}` and optionally `{return}`, instead of the publisher. A service may carry `"linkout"`, a chain of steps (`open-access`, `service`, `ezproxy` with its `"ezproxy"` template `…/login?url={url}`, `registered`) tried in order; then `url` is needed only if the chain names `service`. See docs/institutional.md.' },
  localServiceUrl: { env: 'LOCAL_SERVICE_URL', default: undefined, parse: urlTemplate, doc: 'Shortcut for one local service with id `local`: its URL template, e.g. `https://resolver.example/openurl?rft_id=info:doi/{doi}`.' },
  localServiceNetworks: { env: 'LOCAL_SERVICE_NETWORKS', default: [], parse: networks, doc: 'Client networks sent to the `LOCAL_SERVICE_URL` service (comma-separated CIDRs; `0.0.0.0/0,::/0` is everyone). Empty: only readers who choose it at /settings.' },
  localServiceName: { env: 'LOCAL_SERVICE_NAME', default: 'Your library', parse: text, doc: 'Name of the `LOCAL_SERVICE_URL` service, shown to readers at /settings.' },
  localStoreDir: { env: 'LOCAL_STORE_DIR', default: 'config/sample-records', parse: optional(text), doc: 'Directory of local records (`.json`/`.ndjson`, the REST API\'s shape) consulted before the upstream; empty disables. See docs/local-records.md.', path: 'directory to read' },
  localAuthoritativePrefixes: { env: 'LOCAL_AUTHORITATIVE_PREFIXES', default: [], parse: prefixes, doc: 'Prefixes served only from the local store: a miss is a 404, never an upstream request (comma-separated). Empty by default: local records overlay the upstream, so the shipped samples never hide real DOIs of 10.5555, Crossref\'s test prefix.' },
  localStoreWatch: { env: 'LOCAL_STORE_WATCH', default: true, parse: flag, doc: 'Reload the local store when its files change (atomically: a request sees the old set or the new).' },
  localStorePollMs: { env: 'LOCAL_STORE_POLL_MS', default: 0, parse: integer(0, 3_600_000), doc: 'Look for changes to the local store every this many ms instead of with fs.watch; 0 uses fs.watch. Set it (e.g. 5000) when the directory is on NFS/SMB or a container mount where fs.watch hears nothing. See docs/local-records.md.' },
  recordTo: { env: 'RECORD_TO', default: undefined, parse: optional(text), doc: 'Directory to record into: every record and every metadata answer fetched from upstream, and every local record answered, is written (deduplicated, atomically, off the request path; several servers may share the directory) to `recorded.ndjson` there, a local-record file that `OFFLINE=true LOCAL_STORE_DIR=` the same directory replays. Needs WORKERS=1. See docs/testing-with-doi-proxy.md.', path: 'directory to write' },
  offline: { env: 'OFFLINE', default: false, parse: flag, doc: 'No connection at all, whatever else is set: no upstream (only the local store answers, everything else is 404), no open-access provider over the network (OA_PROVIDER=file still answers), no metadata fetch; only Redis, when configured. See docs/local-records.md.' },
  geoipDatabase: { env: 'GEOIP_DATABASE', default: undefined, parse: optional(text), doc: 'Path of a MaxMind-format country database (.mmdb, e.g. GeoLite2-Country) for the 10320/loc `country` choice when neither `?country=` nor the country header says.', path: 'file to read' },
  cacheFile: { env: 'CACHE_FILE', default: 'data/cache.snapshot', parse: optional(text), doc: 'File the cache is saved to (periodically and at shutdown) and loaded from at start, so a restart keeps its records (relative to the working directory; `/data/cache.snapshot` in the image); empty disables. With WORKERS > 1 each worker has its own file, `CACHE_FILE.<n>`. A file made with another UPSTREAM_URL or OFFLINE is set aside (renamed, never deleted), not loaded. See docs/deployment.md.', path: 'file to write' },
  cacheSnapshotIntervalSeconds: { env: 'CACHE_SNAPSHOT_INTERVAL_SECONDS', default: 300, parse: integer(0, 86_400), doc: 'How often the cache is written to CACHE_FILE; 0 writes it only at shutdown.' },
  redisUrl: { env: 'REDIS_URL', default: undefined, parse: optional(redisUrl), doc: 'A Redis or Valkey server (`redis://[[user]:password@]host:port[/db]`: a password, or an ACL user and its password; `rediss://` for TLS) shared by replicas and workers: a second cache tier behind each process\'s own, one upstream request per DOI across replicas, and the rate-limit counters. The service keeps working when it is down. See docs/deployment.md.' },
  redisSentinels: { env: 'REDIS_SENTINELS', default: [], parse: redisNodes, doc: 'Instead of REDIS_URL: the Sentinels watching a Redis master (comma-separated `host:port`), with REDIS_SENTINEL_MASTER; the service follows the master they name through failovers. See docs/deployment.md.' },
  redisSentinelMaster: { env: 'REDIS_SENTINEL_MASTER', default: undefined, parse: optional(text), doc: 'The master\'s name in the Sentinels\' configuration (`sentinel monitor <name> …`); needed with REDIS_SENTINELS.' },
  redisClusterNodes: { env: 'REDIS_CLUSTER_NODES', default: [], parse: redisNodes, doc: 'Instead of REDIS_URL: some nodes of a Redis Cluster (comma-separated `host:port`); the others are found from them and records are spread over its masters. See docs/deployment.md.' },
  redisUsername: { env: 'REDIS_USERNAME', default: undefined, parse: optional(text), doc: 'ACL user for Redis (with REDIS_PASSWORD), where REDIS_URL holds no credentials: the only way to give them with REDIS_SENTINELS or REDIS_CLUSTER_NODES.' },
  redisPassword: { env: 'REDIS_PASSWORD', default: undefined, parse: optional(secret), doc: 'Password for Redis (`requirepass`, or REDIS_USERNAME\'s), where REDIS_URL holds none; never logged or shown.' },
  redisTlsCaFile: { env: 'REDIS_TLS_CA_FILE', default: undefined, parse: optional(text), doc: 'PEM file of the certificate authority a `rediss://` REDIS_URL\'s certificate must chain to (a private CA); without it, the system\'s CAs.', path: 'file to read' },
  redisKeyPrefix: { env: 'REDIS_KEY_PREFIX', default: 'doi-proxy:', parse: text, doc: 'Prefix of every key we write in Redis (a format version follows it), so deployments can share one Redis. Cache keys also name their upstream (a hash of UPSTREAM_URL and OFFLINE), whatever the prefix.' },
  redisCommandTimeoutMs: { env: 'REDIS_COMMAND_TIMEOUT_MS', default: 100, parse: integer(5, 10_000), doc: 'A Redis command not answered within this long is given up: the lookup goes on without Redis. Keep it above Redis\'s steady round trip: slower, and replicas do not share (docs/deployment.md).' },
  redisConnectTimeoutMs: { env: 'REDIS_CONNECT_TIMEOUT_MS', default: 1_000, parse: integer(50, 60_000), doc: 'Redis connect timeout; the start waits at most this long for Redis, never fails for it.' },
  redisLockTtlMs: { env: 'REDIS_LOCK_TTL_MS', default: 10_000, parse: integer(100, 120_000), doc: 'How long a replica fetching a DOI holds its lock in Redis; others wait for its record at most this long (and never past their deadline), then ask the upstream themselves.' },
  redisWaitPollMs: { env: 'REDIS_WAIT_POLL_MS', default: 20, parse: integer(1, 1_000), doc: 'While another replica fetches a DOI, how often the waiting ones look for its record in Redis.' },
  countryHeader: { env: 'COUNTRY_HEADER', default: undefined, parse: optional(text), doc: 'Request header holding the client country (e.g. `CF-IPCountry`) for 10320/loc `country` choice.' },
  metadataMode: { env: 'METADATA_MODE', default: 'redirect', parse: oneOf(['redirect', 'fetch'], 'redirect or fetch'), doc: 'How a content-negotiated request (`Accept: application/x-bibtex`…) is answered: `redirect` to the registration agency\'s metadata service, as doi.org does, or `fetch`: we fetch the metadata from there ourselves and answer with it, cached. Metadata held in local records answers in both modes. See docs/metadata.md.' },
  metadataHosts: { env: 'METADATA_HOSTS', default: [...DEFAULT_METADATA_HOSTS], parse: hosts, doc: 'The only hosts a metadata fetch may go to (comma-separated `host` or `host:port`; a host without a port means its scheme\'s default port), including where an agency redirects: the registration agencies\' public services by default. A record pointing elsewhere is answered with a redirect, never fetched.' },
  metadataTimeoutMs: { env: 'METADATA_TIMEOUT_MS', default: 10_000, parse: integer(100, 120_000), doc: 'A whole metadata fetch (redirects and retries included) gives up after this long, or sooner at the request\'s deadline: 504.' },
  metadataMaxBodyBytes: { env: 'METADATA_MAX_BODY_BYTES', default: 2 * 1024 * 1024, parse: integer(1024, 64 * 1024 * 1024), doc: 'Largest metadata answer accepted from an agency; a larger one is a 502.' },
  metadataCacheMaxBytes: { env: 'METADATA_CACHE_MAX_BYTES', default: 64 * 1024 * 1024, parse: integer(0, 64 * 1024 * 1024 * 1024), doc: 'Most bytes of fetched metadata held in memory (per DOI and Accept header); 0 disables the metadata cache.' },
  metadataMaxTtlSeconds: { env: 'METADATA_MAX_TTL_SECONDS', default: 86_400, parse: integer(0, 30 * 86400), doc: 'Fetched metadata is kept fresh for what the agency\'s `Cache-Control: max-age` says (an hour when it says nothing), at most this long; then served stale up to MAX_STALE_SECONDS more when the agency fails.' },
  metadataAgencyConcurrency: { env: 'METADATA_AGENCY_CONCURRENCY', default: 4, parse: integer(1, 256), doc: 'Most metadata fetches in flight to one agency host at once; more wait their client\'s turn (the same fair queue rules and deadline as lookups).' },
  oaProvider: { env: 'OA_PROVIDER', default: undefined, parse: optional(oneOf(OA_PROVIDERS, `one of ${OA_PROVIDERS.join(', ')}, or empty`)), doc: 'Where the `open-access` step of a local service\'s `linkout` finds an open copy: `unpaywall`, `openalex`, or `file` (OA_SNAPSHOT_FILE); empty: no open-access step. The config file may group these settings as `openAccess: {"provider", "unpaywallEmail", …}`. See docs/institutional.md.' },
  unpaywallUrl: { env: 'UNPAYWALL_URL', default: 'https://api.unpaywall.org/v2', parse: httpUrl, doc: 'Base of the Unpaywall API: a DOI is asked as `UNPAYWALL_URL/{doi}?email=UNPAYWALL_EMAIL`; its copy is `best_oa_location.url`.' },
  unpaywallEmail: { env: 'UNPAYWALL_EMAIL', default: undefined, parse: optional(text), doc: 'The email address Unpaywall\'s terms want on every call; required with OA_PROVIDER=unpaywall.' },
  openalexUrl: { env: 'OPENALEX_URL', default: 'https://api.openalex.org', parse: httpUrl, doc: 'Base of the OpenAlex API: a DOI is asked as `OPENALEX_URL/works/doi:{doi}` (with `mailto=CONTACT_EMAIL` when set); its copy is `open_access.oa_url`.' },
  oaSnapshotFile: { env: 'OA_SNAPSHOT_FILE', default: undefined, parse: optional(text), doc: 'With OA_PROVIDER=file: Unpaywall\'s data feed (JSON Lines, gzip or not, one work a line), read at start; its open copies answer offline.', path: 'file to read' },
  oaSnapshotMaxEntries: { env: 'OA_SNAPSHOT_MAX_ENTRIES', default: 5_000_000, parse: integer(1, 500_000_000), doc: 'Most open copies kept from OA_SNAPSHOT_FILE (about 200 bytes of memory each); works beyond are not kept, and the start logs how many.' },
  oaBudgetMs: { env: 'OA_BUDGET_MS', default: 300, parse: integer(0, 10_000), doc: 'How long a reader waits for the open-access source; later, the chain goes on to its next step and the answer, when it comes, is cached for the next reader.' },
  oaTimeoutMs: { env: 'OA_TIMEOUT_MS', default: 5_000, parse: integer(100, 60_000), doc: 'A whole call to the open-access provider (connect, headers, body) gives up after this long; the reader never waits more than OA_BUDGET_MS of it.' },
  oaMaxBodyBytes: { env: 'OA_MAX_BODY_BYTES', default: 1024 * 1024, parse: integer(1024, 16 * 1024 * 1024), doc: 'Largest provider answer read; a larger one is ignored (no open copy known).' },
  oaConnections: { env: 'OA_CONNECTIONS', default: 8, parse: integer(1, 256), doc: 'Most connections open to the open-access provider.' },
  oaTtlSeconds: { env: 'OA_TTL_SECONDS', default: 7 * 86400, parse: integer(0, 90 * 86400), doc: 'How long an open copy found is cached (in memory and, with REDIS_URL, for every replica).' },
  oaNegativeTtlSeconds: { env: 'OA_NEGATIVE_TTL_SECONDS', default: 86_400, parse: integer(0, 90 * 86400), doc: 'How long "no open copy" is cached.' },
  oaCacheMaxEntries: { env: 'OA_CACHE_MAX_ENTRIES', default: 200_000, parse: integer(1, 100_000_000), doc: 'Most open-access answers held in memory (with OA_PROVIDER=file, the copies read from the file are held besides).' },
  oaDailyLimit: { env: 'OA_DAILY_LIMIT', default: 90_000, parse: integer(1, 100_000_000), doc: 'Most calls to the provider per UTC day (over every replica with REDIS_URL; without it, WORKERS divide it), below Unpaywall\'s 100,000; beyond it the step is skipped until midnight UTC (shown on /status and in the metrics).' },
  metadataMaxRedirects: { env: 'METADATA_MAX_REDIRECTS', default: 3, parse: integer(0, 10), doc: 'Redirects a metadata fetch follows (Crossref\'s service answers with one to api.crossref.org), each only to a host on METADATA_HOSTS.' },
  verifyLevels: { env: 'VERIFY_LEVELS', default: [...VERIFY_LEVELS], parse: verifyLevels, doc: 'What `POST /api/batch?verify=` (and so `doi-proxy check --verify`) may check of each registered DOI, a comma list: `metadata` (the cited title, year and first author against the registered metadata), `retraction` (retraction and correction notices), `landing` (the landing page: alive, still the work). A `?verify=` asking for another is 400. Empty: verification off. See docs/checking-dois.md.' },
  verifyConcurrency: { env: 'VERIFY_CONCURRENCY', default: 64, parse: integer(1, 1024), doc: 'Lines of one verifying batch in flight at once (their lookups still take BATCH_CONCURRENCY\'s turns); most of them wait for a landing page\'s host, which costs only memory.' },
  retractionsFrom: { env: 'RETRACTIONS_FROM', default: 'crossref', parse: oneOf(['crossref', 'file', 'off'], 'crossref, file or off'), doc: 'Where `verify=retraction` finds retraction, correction and concern notices: `crossref`, the `updated-by` notices of Crossref\'s REST API (the publishers\' and Retraction Watch\'s), asked at CROSSREF_API_URL; `file`, a Retraction Watch CSV (RETRACTIONS_FILE), read at start, for offline use; `off`.' },
  retractionsFile: { env: 'RETRACTIONS_FILE', default: undefined, parse: optional(text), doc: 'With RETRACTIONS_FROM=file: the Retraction Watch data set (CSV, gzip or not), read at start.', path: 'file to read' },
  crossrefApiUrl: { env: 'CROSSREF_API_URL', default: 'https://api.crossref.org', parse: httpUrl, doc: 'Base of Crossref\'s REST API: a DOI\'s notices are asked as `CROSSREF_API_URL/works/{doi}` (with `mailto=CONTACT_EMAIL` when set: Crossref\'s polite pool).' },
  crossrefConcurrency: { env: 'CROSSREF_CONCURRENCY', default: 3, parse: integer(1, 16), doc: 'Most requests to Crossref\'s REST API in flight at once, for the whole host (WORKERS divide it), within the polite pool\'s limit; a 429 or 503 pauses them for its `Retry-After`.' },
  crossrefTimeoutMs: { env: 'CROSSREF_TIMEOUT_MS', default: 10_000, parse: integer(100, 120_000), doc: 'A whole request to Crossref\'s REST API (connect, headers, body) gives up after this long: the retraction verdict is then unknown.' },
  crossrefMaxBodyBytes: { env: 'CROSSREF_MAX_BODY_BYTES', default: 4 * 1024 * 1024, parse: integer(1024, 64 * 1024 * 1024), doc: 'Largest answer read from Crossref\'s REST API (a work with 1,000 references is about 0.5 MB); a larger one makes the verdict unknown.' },
  retractionsTtlSeconds: { env: 'RETRACTIONS_TTL_SECONDS', default: 86_400, parse: integer(0, 30 * 86400), doc: 'How long a DOI\'s retraction verdict is cached (notices found or none alike; in memory and, with REDIS_URL, for every replica); 0 disables.' },
  landingPerHost: { env: 'LANDING_PER_HOST', default: 2, parse: integer(1, 16), doc: 'Most landing-page requests in flight to one host at once, for the whole host (WORKERS divide it; with REDIS_URL, over every replica).' },
  landingHostDelayMs: { env: 'LANDING_HOST_DELAY_MS', default: 1_000, parse: integer(0, 60_000), doc: 'Least time between the starts of two landing-page requests to one host, counted from when the first is sent (each of WORKERS waits N times as long; with REDIS_URL, over every replica); a robots.txt `Crawl-delay` wins when longer (at most 60 s).' },
  landingTimeoutMs: { env: 'LANDING_TIMEOUT_MS', default: 10_000, parse: integer(500, 60_000), doc: 'A whole try at a landing page (connect, headers and body) gives up after this long; three tries, then the page is `dead`.' },
  landingMaxBytes: { env: 'LANDING_MAX_BYTES', default: 1024 * 1024, parse: integer(64 * 1024, 16 * 1024 * 1024), doc: 'Most bytes of a landing page read; the verdict comes from what was read, the rest is never fetched.' },
  landingTtlSeconds: { env: 'LANDING_TTL_SECONDS', default: 86_400, parse: integer(0, 30 * 86400), doc: 'How long an `alive` or `unconfirmed` landing verdict is cached (in memory and, with REDIS_URL, for every replica); 0 disables.' },
  landingShortTtlSeconds: { env: 'LANDING_SHORT_TTL_SECONDS', default: 3_600, parse: integer(0, 30 * 86400), doc: 'How long a `blocked` or `dead` landing verdict is cached, so a page back up is seen soon; at most LANDING_TTL_SECONDS.' },
  landingRobotsTtlSeconds: { env: 'LANDING_ROBOTS_TTL_SECONDS', default: 86_400, parse: integer(0, 86_400), doc: 'How long a site\'s robots.txt is kept (RFC 9309: at most a day).' },
  landingCacheMaxEntries: { env: 'LANDING_CACHE_MAX_ENTRIES', default: 100_000, parse: integer(1, 100_000_000), doc: 'Most landing verdicts held in memory.' },
  landingAllowPrivate: { env: 'LANDING_ALLOW_PRIVATE', default: false, parse: flagOrNetworks, doc: 'A landing check never connects to a loopback, private, link-local or other special address (a registered URL must not reach your own network), whatever the name resolves to: the verdict is `dead`, naming the rule. `true` lifts this for every address; addresses or CIDRs (`10.1.0.0/16`) for those networks only (an intranet repository).' },
  healthWatch: { env: 'HEALTH_WATCH', default: [], parse: prefixes, doc: 'Resolution health (issue 42): the prefixes whose DOIs are checked on a schedule (comma-separated, each once): the DOIs of those prefixes in the local store and every one the resolver has answered. Health is on when this or HEALTH_LIST_FILE is set; off by default. Each check resolves the DOI and looks at its landing page with the landing prober (LANDING_* settings: its host limits, robots.txt, User-Agent); the verdicts are on `/health`, `/health.json` and `/health.csv` (who may see them: STATUS_ALLOW). Needs the network: refused with OFFLINE.' },
  healthListFile: { env: 'HEALTH_LIST_FILE', default: undefined, parse: optional(text), doc: 'A file of DOIs to check on the same schedule, one a line (`10.5555/abc`, `doi:…` or a `https://doi.org/…` URL; `#` starts a comment), of any prefix; read again when it changes.', path: 'file to read' },
  healthIntervalSeconds: { env: 'HEALTH_INTERVAL_SECONDS', default: 604_800, parse: integer(60, 31_536_000), doc: 'Each watched DOI is checked once in this long (a week), its checks spread evenly over it (never twice in one interval), within the landing prober\'s per-host limits: a host with more DOIs than they allow in an interval falls behind (shown as overdue), never faster.' },
  healthConfirm: { env: 'HEALTH_CONFIRM', default: 3, parse: integer(1, 10), doc: 'A DOI is reported broken (dead, taken over, not found, no URL) only after this many failed checks in a row, each at least HEALTH_CONFIRM_GAP_SECONDS after the one before, so a publisher\'s short outage pages no one; 1 reports the first failure. A working page is believed at once.' },
  healthConfirmGapSeconds: { env: 'HEALTH_CONFIRM_GAP_SECONDS', default: 21_600, parse: integer(0, 604_800), doc: 'Least time between two failed checks of a DOI that count towards HEALTH_CONFIRM (the re-checks are made this long after a failure). All of them must fit in one interval: (HEALTH_CONFIRM − 1) × this below HEALTH_INTERVAL_SECONDS.' },
  healthDb: { env: 'HEALTH_DB', default: 'data/health.sqlite', parse: optional(text), doc: 'The SQLite file of every check and each DOI\'s state (relative to the working directory; `/data/health.sqlite` in the image), kept on a local disk (never NFS: SQLite\'s write-ahead log needs shared memory), with `-wal` and `-shm` files beside it. Empty keeps the history in memory only, lost at a restart. Used and checked at start only when health is on.', path: 'file to write' },
  healthKeepDays: { env: 'HEALTH_KEEP_DAYS', default: 365, parse: integer(1, 3650), doc: 'Checks older than this are deleted (about 75 bytes a check: 100,000 DOIs checked weekly take about 0.4 GB a year); at least two intervals, so each check has one before it to compare with.' },
  healthConcurrency: { env: 'HEALTH_CONCURRENCY', default: 32, parse: integer(1, 1024), doc: 'Most health checks in flight at once (most of them wait for a landing page\'s host, which costs only memory); the DOIs are resolved as one client of the fair queue, so readers keep their share of the upstream.' },
  healthMaxDois: { env: 'HEALTH_MAX_DOIS', default: 1_000_000, parse: integer(1, 10_000_000), doc: 'Most DOIs watched; beyond it new DOIs are not watched (counted, and logged once an hour).' },
  healthLogKeepSeconds: { env: 'HEALTH_LOG_KEEP_SECONDS', default: 172_800, parse: integer(3600, 2_592_000), doc: 'With Redis (REDIS_URL, Sentinel or Cluster; Redis 6.2 or later), one replica checks for the whole fleet and every replica\'s database copies its checks from a Redis stream kept this long (about 300 bytes a check); a replica down longer misses the checks in between (its /health says so).' },
  registryCopy: { env: 'REGISTRY_COPY', default: undefined, parse: optional(text), doc: 'Directory of the registry copy: every DOI of the agencies\' public data files, made by `doi-proxy import --to DIR` (an LMDB store, `data.mdb`), answered after local records and the cache, before the upstream (`X-Cache: COPY`); offline it answers alone. The start stops when it holds no copy. Empty: no copy. See docs/registry-copy.md.', path: 'directory to read' },
  registryCopyMaxAgeSeconds: { env: 'REGISTRY_COPY_MAX_AGE_SECONDS', default: 604_800, parse: integer(0, 315_360_000), doc: 'Online, a copy record answers while its data is younger than this: the agency\'s last change to it, or the copy\'s coverage of the agency (its whole file, then each completed update) when newer; older, the upstream is asked (and the copy stands in if it fails). Not the time it was imported: a file six months old is six months old. 0: online the copy only stands in. Offline the copy always answers.' },
  registryCopyUpdateHours: { env: 'REGISTRY_COPY_UPDATE_HOURS', default: 0, parse: integer(0, 720), doc: 'Every this many hours the server asks Crossref and DataCite what changed since the copy\'s coverage and writes it in (`doi-proxy import --update` does the same by hand): one updater per copy, whatever the WORKERS or replicas sharing it. Needs REGISTRY_COPY writable, and not OFFLINE. 0: never.' },
  registryCopyMaxBytes: { env: 'REGISTRY_COPY_MAX_BYTES', default: 0, parse: zeroOrInteger(64 * 1024 * 1024, 2 ** 50), doc: 'The registry copy\'s file may not grow past this (at least 64 MiB): an import or update stops cleanly before it, the copy whole. 0: no cap.' },
  registryCopyMinFreeBytes: { env: 'REGISTRY_COPY_MIN_FREE_BYTES', default: 256 * 1024 * 1024, parse: integer(0, 2 ** 40), doc: 'An import or update stops cleanly, the copy whole, before the copy\'s file system has less free than this.' },
  registryCopyMaxRecordBytes: { env: 'REGISTRY_COPY_MAX_RECORD_BYTES', default: 4 * 1024 * 1024, parse: integer(64 * 1024, 64 * 1024 * 1024), doc: 'Largest record (one work, one JSON line) an import or update reads; a larger one is skipped and named, never held in memory.' },
  registryCopyCitationQueue: { env: 'REGISTRY_COPY_CITATION_QUEUE', default: 64, parse: integer(1, 10_000), doc: 'Formatted citations (`text/x-bibliography` from the copy\'s metadata) waiting for the formatter; beyond it, 503 with Retry-After.' },
  registryCopyUpdateTimeoutMs: { env: 'REGISTRY_COPY_UPDATE_TIMEOUT_MS', default: 60_000, parse: integer(1_000, 600_000), doc: 'One page of an update (headers and body, at most 64 MiB) gives up after this long; it is asked again, the run resumes where it stopped.' },
  dataciteApiUrl: { env: 'DATACITE_API_URL', default: 'https://api.datacite.org', parse: httpUrl, doc: 'Base of DataCite\'s REST API: the registry copy\'s updates ask `DATACITE_API_URL/dois?query=updated:[…]` for what changed.' }
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** The settings' names, in the table's order. */
const KEYS: ReadonlyArray<keyof Config> = Object.keys(OPTIONS).filter(isSetting)

/** Whether `key` (say, from the config file) names a setting. */
function isSetting(key: string): key is keyof Config {
  return Object.hasOwn(OPTIONS, key)
}

/** Check one raw value (from a file: any JSON type; from the environment: a string) against its setting's parser. */
function parse<K extends keyof Config>(key: K, raw: unknown, source: string): Config[K] {
  const where = `${key} (${source})`
  const refuse: Refuse = {
    expected: (what) => {
      throw new ConfigError(`invalid setting ${where}: expected ${what}, got ${JSON.stringify(raw)}`)
    },
    because: (message) => {
      throw new ConfigError(`invalid setting ${where}: ${message}`)
    }
  }
  return OPTIONS[key].parse(raw, refuse)
}

function set<K extends keyof Config>(config: Config, key: K, raw: unknown, source: string): void {
  config[key] = parse(key, raw, source)
}

function setDefault<K extends keyof Config>(config: Partial<Config>, key: K): void {
  config[key] = structuredClone(OPTIONS[key].default)
}

// TypeScript cannot follow a loop filling every key, so this checks it: KEYS are the table's keys,
// which the compiler holds to exactly Config's, and each value was set with its own key's type.
function isComplete(config: Partial<Config>): config is Config {
  return KEYS.every((key) => Object.hasOwn(config, key))
}

export function defaultConfig(): Config {
  const config: Partial<Config> = {}
  for (const key of KEYS) setDefault(config, key)
  if (!isComplete(config)) throw new Error('a setting has no default')
  return config
}

/**
 * Built-in defaults < the config file's JSON object < environment variables.
 * Unknown keys in the file are refused, so a typo does not silently do nothing.
 */
export function buildConfig(file: Record<string, unknown> | undefined, env: Readonly<Record<string, string | undefined>>): Config {
  const config = defaultConfig()
  if (file !== undefined) {
    const fail = (message: string): never => {
      throw new ConfigError(message)
    }
    for (const [key, raw] of Object.entries(spreadOpenAccess(file, fail))) {
      if (!isSetting(key)) throw new ConfigError(`unknown setting "${key}" in the config file`)
      set(config, key, raw, 'config file')
    }
  }
  for (const key of KEYS) {
    const name = OPTIONS[key].env
    const raw = env[name]
    if (raw !== undefined) set(config, key, raw, `env ${name}`)
  }
  checkTogether(config)
  return config
}

/** The settings that depend on each other, once file and environment have had their say: derived ones first, then conflicts. */
function checkTogether(config: Config): void {
  if (config.localServiceUrl !== undefined) {
    const local: LocalServiceConfig = {
      id: 'local',
      name: config.localServiceName,
      url: config.localServiceUrl,
      networks: config.localServiceNetworks,
      prefixes: []
    }
    config.localServices = [...config.localServices, local]
    checkIds(config.localServices, {
      fail: (message) => {
        throw new ConfigError(`invalid setting localServices: ${message} (LOCAL_SERVICE_URL defines the service "local")`)
      }
    })
  }
  checkOpenAccess(config, (message) => {
    throw new ConfigError(message)
  })
  // Each worker would rewrite the one file from what it alone fetched.
  if (config.recordTo !== undefined && config.workers !== 1) {
    throw new ConfigError(
      `invalid setting recordTo: RECORD_TO needs WORKERS=1 (one process writes the file), got workers ${config.workers}`
    )
  }
  // One bound for the slowest exchange with a client: no answer takes longer than a request may take to arrive.
  if (config.requestDeadlineMs >= config.requestTimeoutMs) {
    throw new ConfigError(
      `invalid setting requestDeadlineMs: ${config.requestDeadlineMs} must be below requestTimeoutMs ${config.requestTimeoutMs}: no answer may take longer than a request may take to arrive`
    )
  }
  checkRedis(config)
  checkVerify(config)
  checkRegistryCopy(config)
  if (config.cacheMinTtlSeconds > config.cacheMaxTtlSeconds) {
    throw new ConfigError(
      `invalid setting cacheMinTtlSeconds: ${config.cacheMinTtlSeconds} is above cacheMaxTtlSeconds ${config.cacheMaxTtlSeconds}`
    )
  }
  checkHealth(config)
}

/** One way to reach Redis at most, and each option only where it means something. */
function checkRedis(config: Config): void {
  const ways = [
    config.redisUrl !== undefined ? 'redisUrl (REDIS_URL)' : undefined,
    config.redisSentinels.length > 0 ? 'redisSentinels (REDIS_SENTINELS)' : undefined,
    config.redisClusterNodes.length > 0 ? 'redisClusterNodes (REDIS_CLUSTER_NODES)' : undefined
  ].filter((way) => way !== undefined)
  if (ways.length > 1) {
    throw new ConfigError(
      `invalid setting ${ways[1]}: set one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, not ${ways.join(' and ')}`
    )
  }
  if (config.redisSentinels.length > 0 && config.redisSentinelMaster === undefined) {
    throw new ConfigError(
      "invalid setting redisSentinelMaster (REDIS_SENTINEL_MASTER): needed with REDIS_SENTINELS, the master's name in `sentinel monitor <name> …`"
    )
  }
  if (config.redisSentinelMaster !== undefined && config.redisSentinels.length === 0) {
    throw new ConfigError(
      `invalid setting redisSentinelMaster (REDIS_SENTINEL_MASTER): ${JSON.stringify(config.redisSentinelMaster)} means something only with REDIS_SENTINELS`
    )
  }
  const url = config.redisUrl === undefined ? undefined : new URL(config.redisUrl)
  if (
    url !== undefined &&
    (url.username !== '' || url.password !== '') &&
    (config.redisUsername !== undefined || config.redisPassword !== undefined)
  ) {
    throw new ConfigError(
      'invalid setting redisPassword (REDIS_USERNAME/REDIS_PASSWORD): REDIS_URL holds credentials already; give them in one place'
    )
  }
  if (config.redisUsername !== undefined && config.redisPassword === undefined) {
    throw new ConfigError(
      `invalid setting redisUsername (REDIS_USERNAME): ${JSON.stringify(config.redisUsername)} needs REDIS_PASSWORD too`
    )
  }
  if (ways.length === 0 && (config.redisUsername !== undefined || config.redisPassword !== undefined)) {
    throw new ConfigError(
      'invalid setting redisPassword (REDIS_USERNAME/REDIS_PASSWORD): means something only with REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES'
    )
  }
  if (config.redisTlsCaFile !== undefined && url?.protocol !== 'rediss:') {
    throw new ConfigError(
      `invalid setting redisTlsCaFile (REDIS_TLS_CA_FILE): ${JSON.stringify(config.redisTlsCaFile)} needs a rediss:// REDIS_URL (TLS to Sentinel or Cluster nodes is not supported)`
    )
  }
}

/** The settings of `check --verify` (issue 41) that depend on each other. */
function checkVerify(config: Config): void {
  if (config.retractionsFrom === 'file' && config.retractionsFile === undefined) {
    throw new ConfigError(
      'invalid setting retractionsFile (RETRACTIONS_FILE): needed with RETRACTIONS_FROM=file, the Retraction Watch CSV to read'
    )
  }
  // A file that would never be read is a mistake to say, not to ignore.
  if (config.retractionsFile !== undefined && config.retractionsFrom !== 'file') {
    throw new ConfigError(
      `invalid setting retractionsFile (RETRACTIONS_FILE): ${JSON.stringify(config.retractionsFile)} means something only with RETRACTIONS_FROM=file, got ${config.retractionsFrom}`
    )
  }
  if (config.landingShortTtlSeconds > config.landingTtlSeconds) {
    throw new ConfigError(
      `invalid setting landingShortTtlSeconds (LANDING_SHORT_TTL_SECONDS): ${config.landingShortTtlSeconds} is above landingTtlSeconds ${config.landingTtlSeconds}: a blocked or dead page is looked at again sooner than a live one, never later`
    )
  }
}

/** Whether resolution health (issue 42) is on: some DOIs to watch. */
export function healthEnabled(config: Pick<Config, 'healthWatch' | 'healthListFile'>): boolean {
  return config.healthWatch.length > 0 || config.healthListFile !== undefined
}

/** The health settings (issue 42) that depend on each other or on others. */
function checkHealth(config: Config): void {
  const on = healthEnabled(config)
  // Off, the file is never opened: its default path must not stop a start where data/ cannot be written.
  if (!on) config.healthDb = undefined
  if (on && config.offline) {
    const [key, env, value] =
      config.healthWatch.length > 0
        ? ['healthWatch', 'HEALTH_WATCH', config.healthWatch.join(',')]
        : ['healthListFile', 'HEALTH_LIST_FILE', config.healthListFile]
    throw new ConfigError(
      `invalid setting ${key} (${env}): ${JSON.stringify(value)} turns health checks on, which need the network; OFFLINE=true forbids it`
    )
  }
  const seen = new Set<string>()
  for (const prefix of config.healthWatch) {
    if (seen.has(prefix.toLowerCase())) {
      throw new ConfigError(`invalid setting healthWatch (HEALTH_WATCH): ${JSON.stringify(prefix)} is named twice`)
    }
    seen.add(prefix.toLowerCase())
  }
  // Every failure that confirms a breakage must come before the next scheduled check.
  const span = (config.healthConfirm - 1) * config.healthConfirmGapSeconds
  if (span >= config.healthIntervalSeconds) {
    throw new ConfigError(
      `invalid setting healthConfirmGapSeconds (HEALTH_CONFIRM_GAP_SECONDS): ${config.healthConfirm} checks (HEALTH_CONFIRM) ${config.healthConfirmGapSeconds} s apart take ${span} s, not below healthIntervalSeconds (HEALTH_INTERVAL_SECONDS) ${config.healthIntervalSeconds}: a breakage would be confirmed only after the next scheduled check`
    )
  }
  // A verdict is judged against the check before it (a takeover against the last good one).
  if (config.healthKeepDays * 86_400 < 2 * config.healthIntervalSeconds) {
    throw new ConfigError(
      `invalid setting healthKeepDays (HEALTH_KEEP_DAYS): ${config.healthKeepDays} days is less than two intervals of healthIntervalSeconds (HEALTH_INTERVAL_SECONDS) ${config.healthIntervalSeconds}: each check needs the one before it`
    )
  }
}

/** The registry copy's settings (issue 43) that depend on others. */
function checkRegistryCopy(config: Config): void {
  if (config.registryCopyUpdateHours === 0) return
  if (config.registryCopy === undefined) {
    throw new ConfigError(
      `invalid setting registryCopyUpdateHours (REGISTRY_COPY_UPDATE_HOURS): ${config.registryCopyUpdateHours} means something only with REGISTRY_COPY, the copy to update`
    )
  }
  // Offline nothing may be asked of the agencies: an update would be refused every time.
  if (config.offline) {
    throw new ConfigError(
      `invalid setting registryCopyUpdateHours (REGISTRY_COPY_UPDATE_HOURS): ${config.registryCopyUpdateHours} asks the agencies for updates, which OFFLINE forbids; set 0 offline`
    )
  }
}

/**
 * One worker's share of a setting that bounds the whole host (WORKERS processes): 1/N rounded down, so
 * together they stay within it, and at least one. `workers` 0 or 1 is one process: the whole setting.
 */
export function workerShareOf(setting: number, workers: number): number {
  return Math.max(1, Math.floor(setting / Math.max(1, workers)))
}

/** The User-Agent actually sent: the configured one plus the contact, if any. */
export function upstreamUserAgent(config: Pick<Config, 'userAgent' | 'contactEmail'>): string {
  return config.contactEmail === undefined ? config.userAgent : `${config.userAgent} (mailto:${config.contactEmail})`
}

/**
 * The User-Agent of landing checks (issue 41), which publishers see in their logs: the configured one, what
 * it does and where the crawler is described (how to recognise and allow it), and the contact, if any.
 */
export function landingUserAgent(config: Pick<Config, 'userAgent' | 'contactEmail'>): string {
  const contact = config.contactEmail === undefined ? '' : `; mailto:${config.contactEmail}`
  return `${config.userAgent} landing-check (+docs/checking-dois.md#the-crawler${contact})`
}
