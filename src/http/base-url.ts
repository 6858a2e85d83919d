import type { FastifyRequest } from 'fastify'

// A Host header is echoed into alias redirects and self-links: accept only a plain host[:port].
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/**
 * The absolute base URL of this resolver, with a trailing slash: the configured public base URL
 * (deployments behind a reverse proxy), else the request's scheme and host.
 */
export function baseUrlFor (request: FastifyRequest, publicBaseUrl: string | undefined, fallbackHost: string): string {
  if (publicBaseUrl !== undefined) return `${publicBaseUrl}/`
  const host = SAFE_HOST.test(request.host) ? request.host : fallbackHost
  // X-Forwarded-Proto (behind TRUST_PROXY) is a header like any other: only http or https becomes a scheme.
  return `${request.protocol === 'https' ? 'https' : 'http'}://${host}/`
}
