/** Prepared answers before routing: a cached DOI's kept answer is written by the raw listener (src/http/prepared-answers.ts). */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { setFrontDoor } from '../http/server-edge.js'
import type { AppContext } from '../services.js'

async function preparedAnswers(app: FastifyInstance, { services }: AppContext): Promise<void> {
  const { prepared } = services
  setFrontDoor(app.server, (req, res) => prepared.serve(req, res))
}

export default fp(preparedAnswers, { name: 'prepared-answers', fastify: '5.x' })
