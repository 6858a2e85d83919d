import { isIP } from 'node:net'
import { checkIds, parseLocalServices, parseTemplate } from './local-services.js'
import type { LocalServiceConfig } from './local-services.js'
import { DEFAULT_METADATA_HOSTS, parseAllowedHosts } from '../handle/metadata-hosts.js'
import { checkOpenAccess, OA_PROVIDERS, spreadOpenAccess } from './open-access.js'
import type { OpenAccessProvider } from './open-access.js'

/**
 * Every setting doi-proxy has: its name, its environment variable, its default and its check.
 * This table is the single source of truth; the README's configuration table mirrors it.
 */

export interface Config {
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
  /** The open-access step of link-out chains (docs/institutional.md); the config file may group these as `openAccess`. */
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

type Kind = 'string' | 'url' | 'int' | 'bool' | 'list' | 'map' | 'level' | 'optional-string' | 'optional-url' | 'cidrs' | 'prefixes' | 'optional-redis-url' | 'redis-nodes' | 'optional-secret' | 'trust' | 'metadata-mode' | 'hosts' | 'oa-provider' | 'log-format'

// The local services' own checks (src/config/local-services.ts).
type LocalServiceKind = 'services' | 'template'

interface Option {
  key: keyof Config
  env: string
  kind: Kind | LocalServiceKind
  min?: number
  max?: number
  default: unknown
  doc: string
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

export const OPTIONS: readonly Option[] = [
  { key: 'host', env: 'HOST', kind: 'string', default: '127.0.0.1', doc: 'Address to listen on (the container image sets 0.0.0.0).' },
  { key: 'port', env: 'PORT', kind: 'int', min: 0, max: 65535, default: 8000, doc: 'Port to listen on.' },
  { key: 'workers', env: 'WORKERS', kind: 'int', min: 0, max: 256, default: 1, doc: 'Server processes sharing the port (node:cluster); 0 means one per core: the container\'s CPU quota (cgroup cpu.max) when it has one, else the cores (the image\'s default). Each has its own cache; with REDIS_URL they share it too.' },
  { key: 'upstreamUrl', env: 'UPSTREAM_URL', kind: 'url', default: 'https://doi.org/api/handles', doc: 'Base of the upstream Handle REST API; handle H is fetched as UPSTREAM_URL + "/" + H, path-encoded.' },
  { key: 'upstreamTimeoutMs', env: 'UPSTREAM_TIMEOUT_MS', kind: 'int', min: 100, max: 120_000, default: 10_000, doc: 'A whole upstream request (connect, headers, body) gives up after this long: 504.' },
  { key: 'upstreamConnectTimeoutMs', env: 'UPSTREAM_CONNECT_TIMEOUT_MS', kind: 'int', min: 100, max: 60_000, default: 3_000, doc: 'TCP/TLS connect timeout to the upstream.' },
  { key: 'upstreamConnections', env: 'UPSTREAM_CONNECTIONS', kind: 'int', min: 1, max: 1024, default: 16, doc: 'Most connections kept open to the upstream (the pool bound).' },
  { key: 'upstreamMaxBodyBytes', env: 'UPSTREAM_MAX_BODY_BYTES', kind: 'int', min: 1024, max: 64 * 1024 * 1024, default: 1024 * 1024, doc: 'Largest upstream answer accepted; a larger one is a 502.' },
  { key: 'userAgent', env: 'USER_AGENT', kind: 'string', default: 'doi-proxy/0.1 (self-hosted DOI resolver)', doc: 'User-Agent sent upstream (doi.org refuses requests without one).' },
  { key: 'contactEmail', env: 'CONTACT_EMAIL', kind: 'optional-string', default: undefined, doc: 'Appended to the User-Agent as `mailto:` so the upstream operator can reach you. Recommended.' },
  { key: 'publicBaseUrl', env: 'PUBLIC_BASE_URL', kind: 'optional-url', default: undefined, doc: 'Base URL of this resolver as users see it (behind a reverse proxy), for alias redirects and self-links. Default: taken from the request.' },
  { key: 'trustProxy', env: 'TRUST_PROXY', kind: 'trust', default: false, doc: 'Trust `X-Forwarded-*` headers (client address, scheme, host) from your own reverse proxy: a number of proxies in front (`1` behind one nginx: the address it saw, which a client cannot forge), or their addresses/CIDRs. `true` trusts every hop, so the client address is the leftmost `X-Forwarded-For` entry, which a client can write itself unless your proxy overwrites the header. Never set it without a proxy.' },
  { key: 'cacheMaxEntries', env: 'CACHE_MAX_ENTRIES', kind: 'int', min: 1, max: 100_000_000, default: 200_000, doc: 'Most records (and not-found answers) held in memory.' },
  { key: 'cacheMaxBytes', env: 'CACHE_MAX_BYTES', kind: 'int', min: 1024, max: 64 * 1024 * 1024 * 1024, default: 256 * 1024 * 1024, doc: 'Most bytes of records held in memory (estimated from their JSON size).' },
  { key: 'cacheMaxTtlSeconds', env: 'CACHE_MAX_TTL_SECONDS', kind: 'int', min: 0, max: 30 * 86400, default: 86_400, doc: 'A record is kept fresh at most this long, whatever its values\' `ttl` say.' },
  { key: 'cacheMinTtlSeconds', env: 'CACHE_MIN_TTL_SECONDS', kind: 'int', min: 0, max: 86400, default: 60, doc: 'A record is kept fresh at least this long (except a value with `ttl` 0: not cached).' },
  { key: 'negativeTtlSeconds', env: 'NEGATIVE_TTL_SECONDS', kind: 'int', min: 0, max: 86400, default: 60, doc: 'How long a not-found answer is cached; 0 disables.' },
  { key: 'maxStaleSeconds', env: 'MAX_STALE_SECONDS', kind: 'int', min: 0, max: 365 * 86400, default: 7 * 86400, doc: 'When the upstream fails, an expired record up to this old is served (`X-Cache: STALE`); 0 disables.' },
  { key: 'maxHandleLength', env: 'MAX_HANDLE_LENGTH', kind: 'int', min: 16, max: 65536, default: 4096, doc: 'Longest handle accepted (characters after decoding); longer is 414.' },
  { key: 'allowedSchemes', env: 'ALLOWED_SCHEMES', kind: 'list', default: ['http', 'https', 'ftp'], doc: 'URL schemes redirected to (comma-separated); others show the values page.' },
  { key: 'logLevel', env: 'LOG_LEVEL', kind: 'level', default: 'info', doc: `Log level: ${LOG_LEVELS.join(', ')}.` },
  { key: 'logFormat', env: 'LOG_FORMAT', kind: 'log-format', default: 'auto', doc: 'How log lines are written: `json`, one JSON object a line (for journald, Docker, a log shipper); `pretty`, coloured and readable (pino-pretty), for a person at a terminal; `auto`, pretty when standard output is a terminal, JSON otherwise.' },
  { key: 'logRequests', env: 'LOG_REQUESTS', kind: 'bool', default: false, doc: 'Log one line per request (an access log) at info. Off by default: a line per request costs throughput (up to a fifth in bench/), and every request then goes through the router, so cached DOIs no longer take the hot path (docs/architecture.md); your reverse proxy may keep access logs already. Warnings and errors are always logged with the request id.' },
  { key: 'shutdownGraceMs', env: 'SHUTDOWN_GRACE_MS', kind: 'int', min: 0, max: 600_000, default: 10_000, doc: 'On SIGTERM/SIGINT, the whole shutdown (drain delay and in-flight requests) gets this long before the process exits anyway.' },
  { key: 'drainDelayMs', env: 'DRAIN_DELAY_MS', kind: 'int', min: 0, max: 600_000, default: 0, doc: 'On SIGTERM, /readyz fails this long before the listener closes (set it above your load balancer\'s check interval).' },
  { key: 'requestTimeoutMs', env: 'REQUEST_TIMEOUT_MS', kind: 'int', min: 1000, max: 600_000, default: 30_000, doc: 'A client request (headers and body) must arrive within this time, or 408 and the connection is closed; checked every tenth of it (at most every second), so a slow client is cut that close to it.' },
  { key: 'keepAliveTimeoutMs', env: 'KEEP_ALIVE_TIMEOUT_MS', kind: 'int', min: 0, max: 600_000, default: 5_000, doc: 'Idle keep-alive connections are closed after this long.' },
  { key: 'maxHeaderBytes', env: 'MAX_HEADER_BYTES', kind: 'int', min: 1024, max: 1024 * 1024, default: 16 * 1024, doc: 'Largest request line plus headers accepted (431 beyond).' },
  { key: 'raNames', env: 'RA_NAMES', kind: 'map', default: {}, doc: 'Extra Which RA? names: `SERV=Name,…` mapping `10.SERV/SERV` to a display name (wins over the built-in table).' },
  { key: 'raMaxDois', env: 'RA_MAX_DOIS', kind: 'int', min: 1, max: 10_000, default: 100, doc: 'Most DOIs in one Which RA? request; more is 400.' },
  { key: 'raConcurrency', env: 'RA_CONCURRENCY', kind: 'int', min: 1, max: 256, default: 8, doc: 'Lookups one Which RA? request runs at once.' },
  { key: 'batchMaxLines', env: 'BATCH_MAX_LINES', kind: 'int', min: 1, max: 1_000_000, default: 10_000, doc: 'Most DOI lines in one batch (POST /api/batch); more is 413, naming this limit.' },
  { key: 'batchMaxBytes', env: 'BATCH_MAX_BYTES', kind: 'int', min: 1024, max: 64 * 1024 * 1024, default: 2 * 1024 * 1024, doc: 'Largest batch body in bytes; larger is 413, naming this limit.' },
  { key: 'batchConcurrency', env: 'BATCH_CONCURRENCY', kind: 'int', min: 1, max: 256, default: 16, doc: 'Lookups one batch runs at once (the default is UPSTREAM_MAX_CONCURRENT\'s, so a batch can use all the upstream it is given). Each waits its turn in the client\'s fair queue like any miss, so a batch never starves other readers and gets no more than the client\'s share (UPSTREAM_PER_CLIENT in flight, unless in TRUSTED_NETWORKS); at most UPSTREAM_PER_CLIENT + UPSTREAM_CLIENT_QUEUE are used, so it never overflows its own queue.' },
  { key: 'upstreamMaxConcurrent', env: 'UPSTREAM_MAX_CONCURRENT', kind: 'int', min: 1, max: 1024, default: 16, doc: 'Most upstream requests in flight at once (be polite: doi.org answers 429 to parallel clients).' },
  { key: 'upstreamQueueSize', env: 'UPSTREAM_QUEUE_SIZE', kind: 'int', min: 0, max: 1_000_000, default: 1000, doc: 'Most lookups waiting for an upstream slot, over all clients; beyond it, 503 with Retry-After.' },
  { key: 'upstreamQueueTimeoutMs', env: 'UPSTREAM_QUEUE_TIMEOUT_MS', kind: 'int', min: 1, max: 120_000, default: 5_000, doc: 'A lookup waiting this long for an upstream slot gets 503 (or a stale record).' },
  { key: 'upstreamPerClient', env: 'UPSTREAM_PER_CLIENT', kind: 'int', min: 1, max: 1024, default: 8, doc: 'Most upstream lookups one client (an IPv4 address, an IPv6 /64) has in flight; its further lookups wait in its own queue, and clients are served in turn, so one client cannot starve the others. Cached answers are never limited.' },
  { key: 'upstreamClientQueue', env: 'UPSTREAM_CLIENT_QUEUE', kind: 'int', min: 0, max: 100_000, default: 32, doc: 'Most lookups one client may have waiting for the upstream; beyond it, 429 with Retry-After.' },
  { key: 'trustedNetworks', env: 'TRUSTED_NETWORKS', kind: 'cidrs', default: [], doc: 'Client networks without the per-client bounds (comma-separated addresses or CIDRs): a link resolver or campus gateway behind one address. They still take their turn in the fair queue.' },
  { key: 'requestDeadlineMs', env: 'REQUEST_DEADLINE_MS', kind: 'int', min: 100, max: 600_000, default: 20_000, doc: 'One deadline per request: alias hops, queue waits and retries all spend it; then 504 (or a stale record), never a longer wait.' },
  { key: 'upstreamRetries', env: 'UPSTREAM_RETRIES', kind: 'int', min: 0, max: 10, default: 2, doc: 'Retries after 429, 502, 503, 504 or a dropped connection, within the upstream timeout and the request deadline.' },
  { key: 'upstreamRetryBaseMs', env: 'UPSTREAM_RETRY_BASE_MS', kind: 'int', min: 1, max: 60_000, default: 250, doc: 'First retry delay, doubled each time (a Retry-After from the upstream wins).' },
  { key: 'upstreamRetryMaxMs', env: 'UPSTREAM_RETRY_MAX_MS', kind: 'int', min: 1, max: 120_000, default: 4_000, doc: 'Longest retry delay.' },
  { key: 'breakerErrorThresholdPercent', env: 'BREAKER_ERROR_THRESHOLD_PERCENT', kind: 'int', min: 1, max: 100, default: 50, doc: 'The circuit breaker opens when this share of upstream requests in the window failed.' },
  { key: 'breakerVolumeThreshold', env: 'BREAKER_VOLUME_THRESHOLD', kind: 'int', min: 1, max: 1_000_000, default: 10, doc: 'The breaker judges only windows with at least this many requests.' },
  { key: 'breakerResetMs', env: 'BREAKER_RESET_MS', kind: 'int', min: 100, max: 3_600_000, default: 15_000, doc: 'An open breaker lets one probe through after this long; success closes it.' },
  { key: 'breakerWindowMs', env: 'BREAKER_WINDOW_MS', kind: 'int', min: 1_000, max: 3_600_000, default: 30_000, doc: 'The breaker\'s rolling window.' },
  { key: 'refreshAhead', env: 'REFRESH_AHEAD', kind: 'bool', default: true, doc: 'A record asked for in the last tenth of its lifetime is refreshed in the background, so popular DOIs never wait on the upstream.' },
  { key: 'rateLimitMax', env: 'RATE_LIMIT_MAX', kind: 'int', min: 0, max: 100_000_000, default: 0, doc: 'Lookups that need the upstream, per client address per window; 0 turns this limit off. Cached answers are never counted.' },
  { key: 'rateLimitWindowMs', env: 'RATE_LIMIT_WINDOW_MS', kind: 'int', min: 1_000, max: 86_400_000, default: 60_000, doc: 'The rate-limit window.' },
  { key: 'rateLimitAllowList', env: 'RATE_LIMIT_ALLOW_LIST', kind: 'cidrs', default: ['127.0.0.1/32', '::1/128'], doc: 'Client networks never rate limited (comma-separated addresses or CIDRs, e.g. a campus).' },
  { key: 'statusAllow', env: 'STATUS_ALLOW', kind: 'cidrs', default: ['127.0.0.0/8', '::1/128'], doc: 'Client networks that may see the status page `/status` and `/status.json` (comma-separated addresses or CIDRs); others get 403. Loopback only by default: keep it off the public internet. The client address honours `TRUST_PROXY`. See docs/operations.md.' },
  { key: 'authRateLimitMax', env: 'AUTH_RATE_LIMIT_MAX', kind: 'int', min: 0, max: 100_000_000, default: 30, doc: 'Requests with `auth` or `cert` (they bypass the cache) per client per window; 0 turns this limit off.' },
  { key: 'maxEventLoopDelayMs', env: 'MAX_EVENT_LOOP_DELAY_MS', kind: 'int', min: 0, max: 60_000, default: 1_000, doc: 'Above this event-loop delay, lookups that need the upstream get 503 with Retry-After (load shedding; cached answers are still served); 0 disables.' },
  { key: 'localServices', env: 'LOCAL_SERVICES', kind: 'services', default: [], doc: 'Local services ("appropriate copy"): a JSON list of `{"id", "name", "url", "networks", "prefixes", "linkout", "ezproxy"}`. Readers inside `networks` (CIDRs; for DOIs under `prefixes`, if given) or who chose the service at /settings are sent to `url`, a template with `{doi}` and optionally `{return}`, instead of the publisher. A service may carry `"linkout"`, a chain of steps (`open-access`, `service`, `ezproxy` with its `"ezproxy"` template `…/login?url={url}`, `registered`) tried in order; then `url` is needed only if the chain names `service`. See docs/institutional.md.' },
  { key: 'localServiceUrl', env: 'LOCAL_SERVICE_URL', kind: 'template', default: undefined, doc: 'Shortcut for one local service with id `local`: its URL template, e.g. `https://resolver.example/openurl?rft_id=info:doi/{doi}`.' },
  { key: 'localServiceNetworks', env: 'LOCAL_SERVICE_NETWORKS', kind: 'cidrs', default: [], doc: 'Client networks sent to the `LOCAL_SERVICE_URL` service (comma-separated CIDRs; `0.0.0.0/0,::/0` is everyone). Empty: only readers who choose it at /settings.' },
  { key: 'localServiceName', env: 'LOCAL_SERVICE_NAME', kind: 'string', default: 'Your library', doc: 'Name of the `LOCAL_SERVICE_URL` service, shown to readers at /settings.' },
  { key: 'localStoreDir', env: 'LOCAL_STORE_DIR', kind: 'optional-string', default: 'config/sample-records', doc: 'Directory of local records (`.json`/`.ndjson`, the REST API\'s shape) consulted before the upstream; empty disables. See docs/local-records.md.' },
  { key: 'localAuthoritativePrefixes', env: 'LOCAL_AUTHORITATIVE_PREFIXES', kind: 'prefixes', default: [], doc: 'Prefixes served only from the local store: a miss is a 404, never an upstream request (comma-separated). Empty by default: local records overlay the upstream, so the shipped samples never hide real DOIs of 10.5555, Crossref\'s test prefix.' },
  { key: 'localStoreWatch', env: 'LOCAL_STORE_WATCH', kind: 'bool', default: true, doc: 'Reload the local store when its files change (atomically: a request sees the old set or the new).' },
  { key: 'localStorePollMs', env: 'LOCAL_STORE_POLL_MS', kind: 'int', min: 0, max: 3_600_000, default: 0, doc: 'Look for changes to the local store every this many ms instead of with fs.watch; 0 uses fs.watch. Set it (e.g. 5000) when the directory is on NFS/SMB or a container mount where fs.watch hears nothing. See docs/local-records.md.' },
  { key: 'recordTo', env: 'RECORD_TO', kind: 'optional-string', default: undefined, doc: 'Directory to record into: every record and every metadata answer fetched from upstream is written (deduplicated, atomically, off the request path) to `recorded.ndjson` there, a local-record file that `OFFLINE=true LOCAL_STORE_DIR=` the same directory replays. Needs WORKERS=1. See docs/testing-with-doi-proxy.md.' },
  { key: 'offline', env: 'OFFLINE', kind: 'bool', default: false, doc: 'No upstream at all: only the local store answers, everything else is 404.' },
  { key: 'geoipDatabase', env: 'GEOIP_DATABASE', kind: 'optional-string', default: undefined, doc: 'Path of a MaxMind-format country database (.mmdb, e.g. GeoLite2-Country) for the 10320/loc `country` choice when neither `?country=` nor the country header says.' },
  { key: 'cacheFile', env: 'CACHE_FILE', kind: 'optional-string', default: 'data/cache.snapshot', doc: 'File the cache is saved to (periodically and at shutdown) and loaded from at start, so a restart keeps its records (relative to the working directory; `/data/cache.snapshot` in the image); empty disables. With WORKERS > 1 each worker has its own file, `CACHE_FILE.<n>`. A file made with another UPSTREAM_URL or OFFLINE is set aside (renamed, never deleted), not loaded. See docs/deployment.md.' },
  { key: 'cacheSnapshotIntervalSeconds', env: 'CACHE_SNAPSHOT_INTERVAL_SECONDS', kind: 'int', min: 0, max: 86_400, default: 300, doc: 'How often the cache is written to CACHE_FILE; 0 writes it only at shutdown.' },
  { key: 'redisUrl', env: 'REDIS_URL', kind: 'optional-redis-url', default: undefined, doc: 'A Redis or Valkey server (`redis://[[user]:password@]host:port[/db]`: a password, or an ACL user and its password; `rediss://` for TLS) shared by replicas and workers: a second cache tier behind each process\'s own, one upstream request per DOI across replicas, and the rate-limit counters. The service keeps working when it is down. See docs/deployment.md.' },
  { key: 'redisSentinels', env: 'REDIS_SENTINELS', kind: 'redis-nodes', default: [], doc: 'Instead of REDIS_URL: the Sentinels watching a Redis master (comma-separated `host:port`), with REDIS_SENTINEL_MASTER; the service follows the master they name through failovers. See docs/deployment.md.' },
  { key: 'redisSentinelMaster', env: 'REDIS_SENTINEL_MASTER', kind: 'optional-string', default: undefined, doc: 'The master\'s name in the Sentinels\' configuration (`sentinel monitor <name> …`); needed with REDIS_SENTINELS.' },
  { key: 'redisClusterNodes', env: 'REDIS_CLUSTER_NODES', kind: 'redis-nodes', default: [], doc: 'Instead of REDIS_URL: some nodes of a Redis Cluster (comma-separated `host:port`); the others are found from them and records are spread over its masters. See docs/deployment.md.' },
  { key: 'redisUsername', env: 'REDIS_USERNAME', kind: 'optional-string', default: undefined, doc: 'ACL user for Redis (with REDIS_PASSWORD), where REDIS_URL holds no credentials: the only way to give them with REDIS_SENTINELS or REDIS_CLUSTER_NODES.' },
  { key: 'redisPassword', env: 'REDIS_PASSWORD', kind: 'optional-secret', default: undefined, doc: 'Password for Redis (`requirepass`, or REDIS_USERNAME\'s), where REDIS_URL holds none; never logged or shown.' },
  { key: 'redisTlsCaFile', env: 'REDIS_TLS_CA_FILE', kind: 'optional-string', default: undefined, doc: 'PEM file of the certificate authority a `rediss://` REDIS_URL\'s certificate must chain to (a private CA); without it, the system\'s CAs.' },
  { key: 'redisKeyPrefix', env: 'REDIS_KEY_PREFIX', kind: 'string', default: 'doi-proxy:', doc: 'Prefix of every key we write in Redis (a format version follows it), so deployments can share one Redis. Cache keys also name their upstream (a hash of UPSTREAM_URL and OFFLINE), whatever the prefix.' },
  { key: 'redisCommandTimeoutMs', env: 'REDIS_COMMAND_TIMEOUT_MS', kind: 'int', min: 5, max: 10_000, default: 100, doc: 'A Redis command not answered within this long is given up: the lookup goes on without Redis.' },
  { key: 'redisConnectTimeoutMs', env: 'REDIS_CONNECT_TIMEOUT_MS', kind: 'int', min: 50, max: 60_000, default: 1_000, doc: 'Redis connect timeout; the start waits at most this long for Redis, never fails for it.' },
  { key: 'redisLockTtlMs', env: 'REDIS_LOCK_TTL_MS', kind: 'int', min: 100, max: 120_000, default: 10_000, doc: 'How long a replica fetching a DOI holds its lock in Redis; others wait for its record at most this long (and never past their deadline), then ask the upstream themselves.' },
  { key: 'redisWaitPollMs', env: 'REDIS_WAIT_POLL_MS', kind: 'int', min: 1, max: 1_000, default: 20, doc: 'While another replica fetches a DOI, how often the waiting ones look for its record in Redis.' },
  { key: 'countryHeader', env: 'COUNTRY_HEADER', kind: 'optional-string', default: undefined, doc: 'Request header holding the client country (e.g. `CF-IPCountry`) for 10320/loc `country` choice.' },
  { key: 'metadataMode', env: 'METADATA_MODE', kind: 'metadata-mode', default: 'redirect', doc: 'How a content-negotiated request (`Accept: application/x-bibtex`…) is answered: `redirect` to the registration agency\'s metadata service, as doi.org does, or `fetch`: we fetch the metadata from there ourselves and answer with it, cached. Metadata held in local records answers in both modes. See docs/metadata.md.' },
  { key: 'metadataHosts', env: 'METADATA_HOSTS', kind: 'hosts', default: [...DEFAULT_METADATA_HOSTS], doc: 'The only hosts a metadata fetch may go to (comma-separated `host` or `host:port`; a host without a port means its scheme\'s default port), including where an agency redirects: the registration agencies\' public services by default. A record pointing elsewhere is answered with a redirect, never fetched.' },
  { key: 'metadataTimeoutMs', env: 'METADATA_TIMEOUT_MS', kind: 'int', min: 100, max: 120_000, default: 10_000, doc: 'A whole metadata fetch (redirects and retries included) gives up after this long, or sooner at the request\'s deadline: 504.' },
  { key: 'metadataMaxBodyBytes', env: 'METADATA_MAX_BODY_BYTES', kind: 'int', min: 1024, max: 64 * 1024 * 1024, default: 2 * 1024 * 1024, doc: 'Largest metadata answer accepted from an agency; a larger one is a 502.' },
  { key: 'metadataCacheMaxBytes', env: 'METADATA_CACHE_MAX_BYTES', kind: 'int', min: 0, max: 64 * 1024 * 1024 * 1024, default: 64 * 1024 * 1024, doc: 'Most bytes of fetched metadata held in memory (per DOI and Accept header); 0 disables the metadata cache.' },
  { key: 'metadataMaxTtlSeconds', env: 'METADATA_MAX_TTL_SECONDS', kind: 'int', min: 0, max: 30 * 86400, default: 86_400, doc: 'Fetched metadata is kept fresh for what the agency\'s `Cache-Control: max-age` says (an hour when it says nothing), at most this long; then served stale up to MAX_STALE_SECONDS more when the agency fails.' },
  { key: 'metadataAgencyConcurrency', env: 'METADATA_AGENCY_CONCURRENCY', kind: 'int', min: 1, max: 256, default: 4, doc: 'Most metadata fetches in flight to one agency host at once; more wait their client\'s turn (the same fair queue rules and deadline as lookups).' },
  { key: 'oaProvider', env: 'OA_PROVIDER', kind: 'oa-provider', default: undefined, doc: 'Where the `open-access` step of a local service\'s `linkout` finds an open copy: `unpaywall`, `openalex`, or `file` (OA_SNAPSHOT_FILE); empty: no open-access step. The config file may group these settings as `openAccess: {"provider", "unpaywallEmail", …}`. See docs/institutional.md.' },
  { key: 'unpaywallUrl', env: 'UNPAYWALL_URL', kind: 'url', default: 'https://api.unpaywall.org/v2', doc: 'Base of the Unpaywall API: a DOI is asked as `UNPAYWALL_URL/{doi}?email=UNPAYWALL_EMAIL`; its copy is `best_oa_location.url`.' },
  { key: 'unpaywallEmail', env: 'UNPAYWALL_EMAIL', kind: 'optional-string', default: undefined, doc: 'The email address Unpaywall\'s terms want on every call; required with OA_PROVIDER=unpaywall.' },
  { key: 'openalexUrl', env: 'OPENALEX_URL', kind: 'url', default: 'https://api.openalex.org', doc: 'Base of the OpenAlex API: a DOI is asked as `OPENALEX_URL/works/doi:{doi}` (with `mailto=CONTACT_EMAIL` when set); its copy is `open_access.oa_url`.' },
  { key: 'oaSnapshotFile', env: 'OA_SNAPSHOT_FILE', kind: 'optional-string', default: undefined, doc: 'With OA_PROVIDER=file: Unpaywall\'s data feed (JSON Lines, gzip or not, one work a line), read at start; its open copies answer offline.' },
  { key: 'oaSnapshotMaxEntries', env: 'OA_SNAPSHOT_MAX_ENTRIES', kind: 'int', min: 1, max: 500_000_000, default: 5_000_000, doc: 'Most open copies kept from OA_SNAPSHOT_FILE (about 200 bytes of memory each); works beyond are not kept, and the start logs how many.' },
  { key: 'oaBudgetMs', env: 'OA_BUDGET_MS', kind: 'int', min: 0, max: 10_000, default: 300, doc: 'How long a reader waits for the open-access source; later, the chain goes on to its next step and the answer, when it comes, is cached for the next reader.' },
  { key: 'oaTimeoutMs', env: 'OA_TIMEOUT_MS', kind: 'int', min: 100, max: 60_000, default: 5_000, doc: 'A whole call to the open-access provider (connect, headers, body) gives up after this long; the reader never waits more than OA_BUDGET_MS of it.' },
  { key: 'oaMaxBodyBytes', env: 'OA_MAX_BODY_BYTES', kind: 'int', min: 1024, max: 16 * 1024 * 1024, default: 1024 * 1024, doc: 'Largest provider answer read; a larger one is ignored (no open copy known).' },
  { key: 'oaConnections', env: 'OA_CONNECTIONS', kind: 'int', min: 1, max: 256, default: 8, doc: 'Most connections open to the open-access provider.' },
  { key: 'oaTtlSeconds', env: 'OA_TTL_SECONDS', kind: 'int', min: 0, max: 90 * 86400, default: 7 * 86400, doc: 'How long an open copy found is cached (in memory and, with REDIS_URL, for every replica).' },
  { key: 'oaNegativeTtlSeconds', env: 'OA_NEGATIVE_TTL_SECONDS', kind: 'int', min: 0, max: 90 * 86400, default: 86_400, doc: 'How long "no open copy" is cached.' },
  { key: 'oaCacheMaxEntries', env: 'OA_CACHE_MAX_ENTRIES', kind: 'int', min: 1, max: 100_000_000, default: 200_000, doc: 'Most open-access answers held in memory (with OA_PROVIDER=file, the copies read from the file are held besides).' },
  { key: 'oaDailyLimit', env: 'OA_DAILY_LIMIT', kind: 'int', min: 1, max: 100_000_000, default: 90_000, doc: 'Most calls to the provider per UTC day (over every replica with REDIS_URL), below Unpaywall\'s 100,000; beyond it the step is skipped until midnight UTC (shown on /status and in the metrics).' },
  { key: 'metadataMaxRedirects', env: 'METADATA_MAX_REDIRECTS', kind: 'int', min: 0, max: 10, default: 3, doc: 'Redirects a metadata fetch follows (Crossref\'s service answers with one to api.crossref.org), each only to a host on METADATA_HOSTS.' }
]

/** An address or CIDR as [address, prefix length, family], or undefined when it is neither. */
export function parseCidr (text: string): [string, number, 'ipv4' | 'ipv6'] | undefined {
  const [address = '', bits] = text.split('/')
  const family = isIP(address)
  if (family === 0) return undefined
  const max = family === 4 ? 32 : 128
  const prefix = bits === undefined ? max : Number(bits)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (bits !== undefined && !/^\d+$/.test(bits))) return undefined
  return [address, prefix, family === 4 ? 'ipv4' : 'ipv6']
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Check one raw value (from a file: any JSON type; from the environment: a string) against its option. */
function coerce (opt: Option, raw: unknown, source: string): unknown {
  const where = `${opt.key} (${source})`
  const fail = (expected: string): never => {
    throw new ConfigError(`invalid setting ${where}: expected ${expected}, got ${JSON.stringify(raw)}`)
  }
  switch (opt.kind) {
    case 'services':
    case 'template': {
      const checks = { fail: (message: string): never => { throw new ConfigError(`invalid setting ${where}: ${message}`) }, isCidr: (text: string) => parseCidr(text) !== undefined }
      return opt.kind === 'services' ? parseLocalServices(raw, checks) : parseTemplate(raw, checks)
    }
    case 'int': {
      const n = typeof raw === 'number' ? raw : (typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN)
      if (!Number.isSafeInteger(n)) return fail('an integer')
      if ((opt.min !== undefined && n < opt.min) || (opt.max !== undefined && n > opt.max)) {
        return fail(`an integer from ${opt.min} to ${opt.max}`)
      }
      return n
    }
    case 'bool': {
      if (typeof raw === 'boolean') return raw
      const s = typeof raw === 'string' ? raw.trim().toLowerCase() : ''
      if (['1', 'true', 'yes', 'on'].includes(s)) return true
      if (['0', 'false', 'no', 'off', ''].includes(s)) return false
      return fail('true or false')
    }
    case 'string':
    case 'optional-string': {
      if (typeof raw !== 'string') return fail('a string')
      // eslint-disable-next-line no-control-regex
      if (/[\u0000-\u001f\u007f]/.test(raw)) return fail('a string without control characters')
      if (raw === '' && opt.kind === 'optional-string') return undefined
      if (raw === '') return fail('a non-empty string')
      return raw
    }
    case 'url':
    case 'optional-url': {
      if (raw === '' && opt.kind === 'optional-url') return undefined
      if (typeof raw !== 'string') return fail('an http(s) URL')
      let url: URL
      try { url = new URL(raw) } catch { return fail('an http(s) URL') }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail('an http(s) URL')
      if (url.search !== '' || url.hash !== '') return fail('a URL without ?query or #fragment')
      return raw.replace(/\/+$/, '')
    }
    case 'list': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : fail('a comma-separated list')
      const out = items.map((s) => (typeof s === 'string' ? s.trim().toLowerCase() : fail('a list of strings')))
      if (out.some((s) => !/^[a-z][a-z0-9+.-]*$/.test(s))) return fail('a list of URL schemes such as http,https')
      return out
    }
    case 'map': {
      if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
        const entries = Object.entries(raw as Record<string, unknown>)
        if (entries.some(([, v]) => typeof v !== 'string')) return fail('an object of strings')
        return Object.fromEntries(entries.map(([k, v]) => [k.toUpperCase(), v as string]))
      }
      if (typeof raw !== 'string') return fail('KEY=Name pairs')
      const out: Record<string, string> = {}
      for (const pair of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
        const eq = pair.indexOf('=')
        if (eq <= 0 || eq === pair.length - 1) return fail('KEY=Name pairs separated by commas')
        out[pair.slice(0, eq).trim().toUpperCase()] = pair.slice(eq + 1).trim()
      }
      return out
    }
    case 'cidrs': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',').map((x) => x.trim()).filter(Boolean) : fail('comma-separated addresses or CIDRs')
      for (const item of items) {
        if (typeof item !== 'string' || parseCidr(item) === undefined) return fail('comma-separated addresses or CIDRs such as 10.0.0.0/8')
      }
      return items
    }
    case 'trust': {
      const expected = 'true, false, a number of proxies (0 to 16) or the proxies\' addresses/CIDRs'
      if (typeof raw === 'boolean') return raw
      if (typeof raw === 'number') return Number.isInteger(raw) && raw >= 0 && raw <= 16 ? raw : fail(expected)
      const text = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined
      // Digits are a hop count ('1': one proxy in front), not a boolean.
      if (text !== undefined && /^\d+$/.test(text)) return Number(text) <= 16 ? Number(text) : fail(expected)
      if (text !== undefined && ['true', 'yes', 'on'].includes(text)) return true
      if (text !== undefined && ['false', 'no', 'off', ''].includes(text)) return false
      const items = Array.isArray(raw) ? raw : text !== undefined ? text.split(',').map((x) => x.trim()).filter(Boolean) : []
      if (items.length === 0 || items.some((item) => typeof item !== 'string' || parseCidr(item) === undefined)) return fail(expected)
      return items
    }
    case 'prefixes': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',').map((x) => x.trim()).filter(Boolean) : fail('comma-separated prefixes such as 10.5555')
      if (items.some((p) => typeof p !== 'string' || !/^[^\s/]+$/.test(p))) return fail('comma-separated prefixes such as 10.5555 (no spaces, no slash)')
      return items
    }
    case 'optional-redis-url': {
      if (raw === '') return undefined
      // The value is named in the message, its password never.
      const bad = (expected: string): never => {
        throw new ConfigError(`invalid setting ${where}: expected ${expected}, got ${JSON.stringify(String(raw).replace(/\/\/([^@/]*):[^@/]*@/, '//$1:***@'))}`)
      }
      if (typeof raw !== 'string') return bad('a redis:// or rediss:// URL')
      let url: URL
      try { url = new URL(raw) } catch { return bad('a redis:// or rediss:// URL') }
      if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return bad('a redis:// or rediss:// URL')
      if (url.hostname === '' || !/^\/?\d{0,2}$/.test(url.pathname) || url.search !== '' || url.hash !== '') return bad('a redis:// URL with a host and at most a database number, such as redis://valkey:6379/0')
      return raw
    }
    case 'redis-nodes': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',').map((x) => x.trim()).filter(Boolean) : fail('comma-separated host:port entries')
      for (const item of items) {
        const m = typeof item === 'string' ? /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(item) : null
        if (m === null || Number(m[2]) < 1 || Number(m[2]) > 65535) return fail('comma-separated host:port entries such as redis-1:6379,redis-2:6379')
      }
      return items
    }
    case 'optional-secret': {
      // The value is never named in a message.
      if (raw === '') return undefined
      if (typeof raw !== 'string' || /[\u0000-\u001f\u007f]/.test(raw)) { // eslint-disable-line no-control-regex
        throw new ConfigError(`invalid setting ${where}: expected a string without control characters (value not shown)`)
      }
      return raw
    }
    case 'metadata-mode':
      if (raw !== 'redirect' && raw !== 'fetch') return fail('redirect or fetch')
      return raw
    case 'oa-provider':
      if (raw === '') return undefined
      if (typeof raw !== 'string' || !(OA_PROVIDERS as readonly string[]).includes(raw)) return fail(`one of ${OA_PROVIDERS.join(', ')}, or empty`)
      return raw
    case 'hosts': {
      const hosts = typeof raw === 'string' || Array.isArray(raw) ? parseAllowedHosts(raw) : fail('comma-separated host or host:port entries')
      if (typeof hosts === 'string') return fail(`comma-separated host or host:port entries (${hosts})`)
      return hosts.map((h) => (h.port === undefined ? h.host : `${h.host}:${h.port}`))
    }
    case 'level':
      if (typeof raw !== 'string' || !LOG_LEVELS.includes(raw)) return fail(`one of ${LOG_LEVELS.join(', ')}`)
      return raw
    case 'log-format':
      if (raw !== 'auto' && raw !== 'json' && raw !== 'pretty') return fail('auto, json or pretty')
      return raw
  }
}

export function defaultConfig (): Config {
  const out: Record<string, unknown> = {}
  for (const opt of OPTIONS) out[opt.key] = structuredClone(opt.default)
  return out as unknown as Config
}

/**
 * Built-in defaults < the config file's JSON object < environment variables.
 * Unknown keys in the file are refused, so a typo does not silently do nothing.
 */
export function buildConfig (file: Record<string, unknown> | undefined, env: Readonly<Record<string, string | undefined>>): Config {
  const out = defaultConfig() as unknown as Record<string, unknown>
  if (file !== undefined) {
    const fail = (message: string): never => { throw new ConfigError(message) }
    for (const [key, raw] of Object.entries(spreadOpenAccess(file, fail))) {
      const opt = OPTIONS.find((o) => o.key === key)
      if (opt === undefined) throw new ConfigError(`unknown setting "${key}" in the config file`)
      out[key] = coerce(opt, raw, 'config file')
    }
  }
  for (const opt of OPTIONS) {
    const raw = env[opt.env]
    if (raw !== undefined) out[opt.key] = coerce(opt, raw, `env ${opt.env}`)
  }
  const config = out as unknown as Config
  if (config.localServiceUrl !== undefined) {
    const local = { id: 'local', name: config.localServiceName, url: config.localServiceUrl, networks: config.localServiceNetworks, prefixes: [] }
    config.localServices = [...config.localServices, local]
    checkIds(config.localServices, { fail: (message) => { throw new ConfigError(`invalid setting localServices: ${message} (LOCAL_SERVICE_URL defines the service "local")`) } })
  }
  checkOpenAccess(config, (message) => { throw new ConfigError(message) })
  // Each worker would rewrite the one file from what it alone fetched.
  if (config.recordTo !== undefined && config.workers !== 1) {
    throw new ConfigError(`invalid setting recordTo: RECORD_TO needs WORKERS=1 (one process writes the file), got workers ${config.workers}`)
  }
  // The server drops a connection that has been quiet for requestTimeoutMs: a lookup must end before.
  if (config.requestDeadlineMs >= config.requestTimeoutMs) {
    throw new ConfigError(`invalid setting requestDeadlineMs: ${config.requestDeadlineMs} must be below requestTimeoutMs ${config.requestTimeoutMs}, or the connection is closed before the answer`)
  }
  checkRedis(config)
  if (config.cacheMinTtlSeconds > config.cacheMaxTtlSeconds) {
    throw new ConfigError(`invalid setting cacheMinTtlSeconds: ${config.cacheMinTtlSeconds} is above cacheMaxTtlSeconds ${config.cacheMaxTtlSeconds}`)
  }
  return config
}

/** One way to reach Redis at most, and each option only where it means something. */
function checkRedis (config: Config): void {
  const ways = [
    config.redisUrl !== undefined ? 'redisUrl (REDIS_URL)' : undefined,
    config.redisSentinels.length > 0 ? 'redisSentinels (REDIS_SENTINELS)' : undefined,
    config.redisClusterNodes.length > 0 ? 'redisClusterNodes (REDIS_CLUSTER_NODES)' : undefined
  ].filter((way) => way !== undefined)
  if (ways.length > 1) throw new ConfigError(`invalid setting ${ways[1]}: set one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, not ${ways.join(' and ')}`)
  if (config.redisSentinels.length > 0 && config.redisSentinelMaster === undefined) {
    throw new ConfigError('invalid setting redisSentinelMaster (REDIS_SENTINEL_MASTER): needed with REDIS_SENTINELS, the master\'s name in `sentinel monitor <name> …`')
  }
  if (config.redisSentinelMaster !== undefined && config.redisSentinels.length === 0) {
    throw new ConfigError(`invalid setting redisSentinelMaster (REDIS_SENTINEL_MASTER): ${JSON.stringify(config.redisSentinelMaster)} means something only with REDIS_SENTINELS`)
  }
  const url = config.redisUrl === undefined ? undefined : new URL(config.redisUrl)
  if (url !== undefined && (url.username !== '' || url.password !== '') && (config.redisUsername !== undefined || config.redisPassword !== undefined)) {
    throw new ConfigError('invalid setting redisPassword (REDIS_USERNAME/REDIS_PASSWORD): REDIS_URL holds credentials already; give them in one place')
  }
  if (config.redisUsername !== undefined && config.redisPassword === undefined) {
    throw new ConfigError(`invalid setting redisUsername (REDIS_USERNAME): ${JSON.stringify(config.redisUsername)} needs REDIS_PASSWORD too`)
  }
  if (ways.length === 0 && (config.redisUsername !== undefined || config.redisPassword !== undefined)) {
    throw new ConfigError('invalid setting redisPassword (REDIS_USERNAME/REDIS_PASSWORD): means something only with REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES')
  }
  if (config.redisTlsCaFile !== undefined && url?.protocol !== 'rediss:') {
    throw new ConfigError(`invalid setting redisTlsCaFile (REDIS_TLS_CA_FILE): ${JSON.stringify(config.redisTlsCaFile)} needs a rediss:// REDIS_URL (TLS to Sentinel or Cluster nodes is not supported)`)
  }
}

/** The User-Agent actually sent: the configured one plus the contact, if any. */
export function upstreamUserAgent (config: Pick<Config, 'userAgent' | 'contactEmail'>): string {
  return config.contactEmail === undefined ? config.userAgent : `${config.userAgent} (mailto:${config.contactEmail})`
}
