import { readFileSync } from 'node:fs'
import { parse } from 'yaml'

/** docker-compose.yml as compose reads it (YAML merge keys resolved). No Docker engine runs here: it is read, not run. */
export interface Service {
  image?: string
  build?: unknown
  profiles?: string[]
  environment?: Record<string, string>
  volumes?: string[]
  ports?: string[]
  mem_limit?: string
  healthcheck?: { test: string[] }
  depends_on?: Record<string, { condition: string }>
  command?: string[]
}

export interface Compose {
  services: Record<string, Service>
  volumes: Record<string, unknown>
}

export const COMPOSE_TEXT = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8')
export const compose = parse(COMPOSE_TEXT, { merge: true }) as Compose

/** Services in `profile`. */
export const inProfile = (profile: string): Array<[string, Service]> =>
  Object.entries(compose.services).filter(([, s]) => s.profiles?.includes(profile))

/** The doi-proxy replicas of the `replicas` profile (the services built from the Dockerfile). */
export const replicas = inProfile('replicas').filter(([, s]) => s.build !== undefined)

/** `${X:-default}` and `${X}` as compose expands them with `vars` set (an unset `${X}` is empty). */
export function interpolate(text: string, vars: Record<string, string> = {}): string {
  return text.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => {
    const value = vars[name]
    return value !== undefined && value !== '' ? value : (fallback ?? '')
  })
}

/** The environment compose gives `s` with `vars` set on the host (nothing set: every default). */
export function envOf(s: Service, vars: Record<string, string> = {}): Record<string, string> {
  return Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), vars)]))
}
