import type { FastifyReply, FastifyRequest } from 'fastify'
import { networkMatcher } from './client.js'

/**
 * The access rule of the operators' pages (`/status`, `/health`): clients inside STATUS_ALLOW only
 * (`request.ip` honours TRUST_PROXY); no CORS headers, so another site open in an operator's browser cannot
 * read them; kept by no cache. Answers whether the request may see the page (the headers are set either way).
 */
export function operatorOnly(statusAllow: readonly string[]): (request: FastifyRequest, reply: FastifyReply) => boolean {
  const allowed = networkMatcher(statusAllow)
  return (request, reply) => {
    reply.removeHeader('access-control-allow-origin').removeHeader('access-control-expose-headers')
    reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff')
    // Through a proxy we could not see past (TRUST_PROXY off), request.ip is the proxy's own address,
    // often loopback: never a pass.
    const forwarded = request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined
    if (forwarded && request.ip === request.socket.remoteAddress) return false
    return allowed(request.ip)
  }
}
