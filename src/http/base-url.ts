import type { FastifyRequest } from 'fastify'

// A Host header is echoed into alias redirects and self-links: accept only a plain host[:port].
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/**
 * The absolute base URL of this resolver, with a trailing slash: the configured public base URL
 * (deployments behind a reverse proxy), else the request's scheme and host.
 */
export function baseUrlFor(request: FastifyRequest, publicBaseUrl: string | undefined, fallbackHost: string): string {
  return configuredBaseUrl(publicBaseUrl) ?? baseUrlOf(request.host, request.protocol, fallbackHost)
}

/**
 * PUBLIC_BASE_URL as a base URL, with its trailing slash (the setting is kept without one); undefined
 * when it is not set, and the base URL must come from the request.
 */
export function configuredBaseUrl(publicBaseUrl: string | undefined): string | undefined {
  return publicBaseUrl === undefined ? undefined : `${publicBaseUrl}/`
}

/** The same from a host and a scheme as read (Fastify's, or the raw request's on the hot path). */
export function baseUrlOf(host: string | undefined, protocol: string, fallbackHost: string): string {
  // X-Forwarded-Proto (behind TRUST_PROXY) is a header like any other: only http or https becomes a scheme.
  return `${protocol === 'https' ? 'https' : 'http'}://${host !== undefined && SAFE_HOST.test(host) ? host : fallbackHost}/`
}
