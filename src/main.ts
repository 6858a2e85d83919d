import cluster from 'node:cluster'
import { closeSync, openSync } from 'node:fs'
import { isatty } from 'node:tty'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { beginDrain, buildApp } from './app.js'
import { loadConfig } from './config/load.js'
import { checkPaths } from './main/paths.js'
import { ConfigError } from './config/schema.js'
import { listenErrorMessage, listenProblem } from './main/listen-error.js'
import { onStopSignals } from './main/stop-signals.js'
import { logDestination } from './main/log-destination.js'
import { LocalStoreError } from './resolve/local-store/store.js'
import type { Config } from './config/schema.js'
import { budgetsExceeded, workerCount, workerShare } from './main/workers.js'
import { memoryWarning, memoryWarningMessage } from './main/memory-limit.js'
import { answerHostMetrics, answerPrimaryAsks } from './observe/metrics.js'
import { relayFleetMessages } from './resolve/fleet/messages.js'

/** The only place that reads the environment, handles signals and listens. */
async function main(): Promise<void> {
  const terminals = [0, 1, 2].filter((fd) => isatty(fd))
  process.on('exit', () => releaseLostTerminal(terminals))
  const settings = loadSettings()
  const logger = pino(
    {
      level: settings.logLevel,
      // Never log what a client must keep to itself.
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: '[redacted]' }
    },
    await logDestination(settings.logFormat)
  )
  // A worker is told how many there are (the primary counted the cores once): one figure for all of them.
  const workers = Number(process.env.DOI_PROXY_WORKERS ?? '') || workerCount(settings.workers)
  // The container's memory limit (cgroup v1 or v2), once: its caches must fit, or the server dies when they fill.
  const memoryLimit = process.constrainedMemory?.()
  if (workers > 1 && cluster.isPrimary) {
    // Asked once here, so a port in use is one line, not one from each worker and another from the primary.
    const problem = await listenProblem(settings.host, settings.port)
    if (problem !== undefined) refuseToStart(problem)
    warnAboutContact(settings, logger)
    warnAboutMemory(settings, memoryLimit, workers, logger)
    runPrimary(workers, settings, logger)
    return
  }
  // A worker answers the primary's asks for its metrics from the start (empty until its app is built).
  if (cluster.isWorker) answerPrimaryAsks()
  const workerIndex = process.env.DOI_PROXY_WORKER_INDEX
  const config = workerConfig(settings, workers, workerIndex)
  // Before the app: a large CACHE_FILE loaded at start could already be too much.
  if (cluster.isPrimary) warnAboutMemory(config, memoryLimit, workers, logger)
  const app = await startApp(config, logger, workerIndex)
  drainOnStop(app, config, logger)
  try {
    await app.listen({ host: config.host, port: config.port })
  } catch (err) {
    // A port in use, a HOST that is not ours: a setting to change, said in one line (exit 78 as above).
    const message = listenErrorMessage(err, config.host, config.port)
    if (message === undefined) throw err
    refuseToStart(message)
  }
  if (cluster.isPrimary) warnAboutContact(config, logger)
  logger.info(
    { upstream: config.offline ? 'none (offline)' : config.upstreamUrl, localStore: config.localStoreDir ?? 'none' },
    'doi-proxy is ready'
  )
}

/** The settings from the environment, or one line and exit 78 (refuseToStart) when one cannot work. */
function loadSettings(): Config {
  try {
    const config = loadConfig(process.env)
    // Once, in the primary of WORKERS too: every setting naming a file or directory, before any is opened.
    checkPaths(config)
    return config
  } catch (err) {
    if (err instanceof ConfigError) refuseToStart(err.message)
    throw err
  }
}

/** A worker's own settings: its cache file, and its share of the host's budgets. The same config when not a worker. */
function workerConfig(config: Config, workers: number, workerIndex: string | undefined): Config {
  // Each worker keeps its own cache file: CACHE_FILE.<n>, n from 1 to WORKERS, kept by a replacement.
  if (cluster.isWorker && workerIndex !== undefined && config.cacheFile !== undefined) {
    config = { ...config, cacheFile: `${config.cacheFile}.${workerIndex}` }
  }
  // Together the workers keep to the host's budgets towards doi.org, the agencies and the open-access provider.
  if (cluster.isWorker && workers > 1) config = { ...config, workers, ...workerShare(config, workers) }
  return config
}

/** The app, built (src/app.ts), or one line and exit 78 when what a setting names cannot be used. */
async function startApp(config: Config, logger: pino.Logger, workerIndex: string | undefined): Promise<FastifyInstance> {
  try {
    return await buildApp(config, { logger, clusterWorker: cluster.isWorker ? { index: Number(workerIndex ?? 0) } : undefined })
  } catch (err) {
    // A file a setting names that cannot be used after all (its content: a GeoIP database, an
    // open-access feed; a local store gone since the check) is a configuration mistake: say so plainly.
    if (err instanceof ConfigError || err instanceof LocalStoreError) {
      refuseToStart((err as Error).message)
    }
    throw err
  }
}

/**
 * On SIGTERM or SIGINT (or, in a worker, the primary's message): drain, wait DRAIN_DELAY_MS, close, within
 * SHUTDOWN_GRACE_MS. Not on the faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) nor SIGABRT, SIGTRAP: a JS
 * listener makes a fault return to the faulting instruction, forever, at full CPU, deaf to SIGTERM
 * (Node's docs say so); without one the process dies of it, as it should.
 */
function drainOnStop(app: FastifyInstance, config: Config, logger: pino.Logger): void {
  // SIGTERM and SIGINT are ours (below), not close-with-grace's: the same signal delivered twice must
  // not cut the drain short.
  let stopReason: string | undefined
  const grace = closeWithGrace(
    { delay: config.shutdownGraceMs, logger, skip: [...FAULT_SIGNALS, 'SIGTERM', 'SIGINT'] },
    async ({ signal, err }) => {
      if (err !== undefined) logger.error({ err }, 'shutting down after an error')
      else logger.info({ signal: signal ?? stopReason }, 'shutting down: finishing in-flight requests')
      beginDrain(app)
      // Give load balancers time to see /readyz fail before the listener closes.
      if (config.drainDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.drainDelayMs))
      await app.close()
    }
  )
  const stop = (reason: string): void => {
    if (stopReason !== undefined) return
    stopReason = reason
    grace.close()
  }
  // A worker drains once, however it is told: the primary's message, or a signal of its own (systemd's
  // default KillMode=control-group and a terminal's Ctrl-C signal every process of the group). A second
  // Ctrl-C stops the primary at once, and a worker goes with it (node:cluster ends a worker whose primary is gone).
  if (cluster.isWorker) {
    onStopSignals(stop, () => {})
    process.on('message', (message) => {
      if (message === STOP_MESSAGE) stop('asked by the primary')
    })
  } else {
    onStopSignals(stop, (signal) => {
      logger.error({ signal }, 'a second signal: exiting at once')
      process.exit(1)
    })
  }
}

/**
 * WORKERS > 1: the primary only forks workers (node:cluster shares the listening port among them),
 * replaces one that dies, and on SIGTERM/SIGINT tells each to drain and stop. Each worker is a whole
 * server with its own cache.
 */
function runPrimary(count: number, config: Config, logger: pino.Logger): void {
  let stopping = false
  const listening = new WeakSet<object>()
  const indexOf = new WeakMap<object, number>()
  const fork = (index: number): void => {
    const worker = cluster.fork({ DOI_PROXY_WORKER_INDEX: String(index), DOI_PROXY_WORKERS: String(count) })
    indexOf.set(worker, index)
    worker.once('listening', () => listening.add(worker))
  }
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
      return
    }
    // A worker that never listened (bad setting, port taken) would fail again: stop instead of looping,
    // and the others with it. Exit code 78: the worker has said why in its one line; nothing to add.
    if (!listening.has(worker)) {
      stopping = true
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGKILL')
      if (code !== 78) logger.error({ pid: worker.process.pid, code, signal }, 'a worker failed to start; stopping')
      process.exit(code ?? 1)
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'a worker died; starting another')
    fork(indexOf.get(worker) ?? 1)
  })
  const stop = (signal: NodeJS.Signals): void => {
    stopping = true
    logger.info({ signal, workers: count }, 'shutting down the workers')
    // A message: a worker that got the signal itself (its whole process group was signalled) drains once.
    for (const worker of Object.values(cluster.workers ?? {})) worker?.send(STOP_MESSAGE)
    setTimeout(() => process.exit(1), config.drainDelayMs + config.shutdownGraceMs + 1000).unref()
  }
  onStopSignals(stop, () => {
    process.exit(1)
  }) // a second signal: at once
  // A scrape of /metrics reaches one worker, which asks here for every worker's series.
  answerHostMetrics()
  // What one worker tells the others (the registry's Retry-After, a purge) goes through here.
  relayFleetMessages()
  for (let i = 1; i <= count; i++) fork(i)
  logger.info(
    { workers: count, each: workerShare(config, count) },
    'started the workers; each has its share of the upstream, agency, open-access, Crossref and landing-host budgets'
  )
  const exceeded = budgetsExceeded(config, count)
  if (exceeded.length > 0) {
    logger.warn(
      { workers: count, exceeded },
      'more workers than these budgets allow: each worker has one, so together they have more than the setting; lower WORKERS or raise the setting'
    )
  }
}

/** A setting that cannot work: one line naming it, and EX_CONFIG, never a stack trace (docs/operations.md). */
function refuseToStart(message: string): never {
  process.stderr.write(`doi-proxy: ${message}\n`)
  process.exit(78)
}

/** What the primary sends a worker to make it drain and stop. */
const STOP_MESSAGE = 'doi-proxy:stop'

const FAULT_SIGNALS: closeWithGrace.AllEvents[] = ['SIGSEGV', 'SIGBUS', 'SIGFPE', 'SIGILL', 'SIGABRT', 'SIGTRAP']

/**
 * At exit Node 20 restores the terminal its stdio started on, and aborts when that terminal has hung up
 * (tcsetattr: EIO; nodejs/node#51519, fixed upstream by #58200, still in the Node 20 we run). So a
 * stdio descriptor whose terminal is gone is pointed at /dev/null first: Node leaves another file alone.
 */
function releaseLostTerminal(terminals: number[]): void {
  for (const fd of terminals) {
    if (isatty(fd)) continue // still there (isatty fails with EIO once it has hung up)
    try {
      closeSync(fd)
      const again = openSync('/dev/null', 'r+') // the lowest free descriptor: fd itself
      if (again !== fd) closeSync(again) // then fd stays closed, which Node skips too
    } catch {
      /* nothing better to do on the way out */
    }
  }
}

/** doi.org asks its clients to say who they are; without CONTACT_EMAIL its operators cannot reach you. */
function warnAboutContact(config: Config, logger: pino.Logger): void {
  if (config.offline || config.contactEmail !== undefined) return
  let host = ''
  try {
    host = new URL(config.upstreamUrl).hostname
  } catch {
    /* checked at start */
  }
  if (host === 'doi.org' || host.endsWith('.doi.org')) {
    logger.warn(
      { upstream: config.upstreamUrl },
      "CONTACT_EMAIL is empty: set it to an address doi.org's operators can reach you at (it goes into the User-Agent); anonymous heavy clients get rate-limited"
    )
  }
}

/** A record cache larger than the memory limit allows fills up hours after start, then V8 stops the process: said at start. */
function warnAboutMemory(config: Config, limit: number | undefined, workers: number, logger: pino.Logger): void {
  const warning = memoryWarning(limit, workers, config.cacheMaxBytes)
  if (warning === undefined) return
  logger.warn(
    {
      setting: 'CACHE_MAX_BYTES',
      cacheMaxBytes: warning.cacheMaxBytes,
      memoryLimitMiB: warning.limitMiB,
      workers: warning.workers,
      suggested: warning.suggestedCacheMaxBytes
    },
    memoryWarningMessage(warning)
  )
}

main().catch((err: unknown) => {
  process.stderr.write(`doi-proxy failed to start: ${(err as Error)?.stack ?? String(err)}\n`)
  process.exit(1)
})
