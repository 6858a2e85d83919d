import { readFileSync } from 'node:fs'
import { buildConfig, ConfigError } from './schema.js'
import type { Config } from './schema.js'

/** Read CONFIG_FILE (if set) and the environment into a validated Config. Only the entry points call this (main.ts, and `doi-proxy check --upstream`). */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const path = env.CONFIG_FILE
  let file: Record<string, unknown> | undefined
  if (path !== undefined && path !== '') {
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch (err) {
      throw new ConfigError(`cannot read CONFIG_FILE ${JSON.stringify(path)}: ${messageOf(err)}`)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (err) {
      throw new ConfigError(`CONFIG_FILE ${JSON.stringify(path)} is not valid JSON: ${messageOf(err)}`)
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError(`CONFIG_FILE ${JSON.stringify(path)} must hold a JSON object`)
    }
    file = Object.fromEntries(Object.entries(parsed))
  }
  return buildConfig(file, env)
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
