import closeWithGrace from 'close-with-grace'
import { pino } from 'pino'
import { beginDrain, buildApp } from './app.js'
import { loadConfig } from './config/load.js'
import { ConfigError } from './config/schema.js'
import { LocalStoreError } from './resolve/local-store.js'
import type { Config } from './config/schema.js'

/** The only place that reads the environment, handles signals and listens. */
async function main (): Promise<void> {
  let config: Config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`doi-proxy: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }

  const logger = pino({
    level: config.logLevel,
    // Never log what a client must keep to itself.
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: '[redacted]' }
  })
  let app
  try {
    app = await buildApp(config, { logger })
  } catch (err) {
    // A missing local store directory or GeoIP file is a configuration mistake: say so plainly.
    if (err instanceof LocalStoreError || (err as Error).message?.startsWith('geoipDatabase')) {
      process.stderr.write(`doi-proxy: ${(err as Error).message}\n`)
      process.exit(78)
    }
    throw err
  }

  closeWithGrace({ delay: config.shutdownGraceMs, logger }, async ({ signal, err }) => {
    if (err !== undefined) logger.error({ err }, 'shutting down after an error')
    else logger.info({ signal }, 'shutting down: finishing in-flight requests')
    beginDrain(app)
    // Give load balancers time to see /readyz fail before the listener closes.
    if (config.drainDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.drainDelayMs))
    await app.close()
  })

  await app.listen({ host: config.host, port: config.port })
  logger.info({ upstream: config.offline ? 'none (offline)' : config.upstreamUrl, localStore: config.localStoreDir ?? 'none' }, 'doi-proxy is ready')
}

main().catch((err: unknown) => {
  process.stderr.write(`doi-proxy failed to start: ${(err as Error)?.stack ?? String(err)}\n`)
  process.exit(1)
})
