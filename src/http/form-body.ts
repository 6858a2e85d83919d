import type { FastifyInstance } from 'fastify'

/**
 * A form body (application/x-www-form-urlencoded) read as text, at most 16 KB: the reference's query
 * form posted to `/` (behaviour.md R1 step 5), and the forms of /openurl and /settings.
 */
export function acceptFormBodies(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_request, body, done) => {
    done(null, body)
  })
}
