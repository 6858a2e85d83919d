/**
 * `npm test`'s first step (npm runs `pretest` before `test`): the programs the tests drive must be
 * installed, or it stops at once with the line that installs them (README, Tests).
 */
import { missingTestTools } from '../test/support/test-tools.js'

const missing = missingTestTools()
if (missing.length > 0) {
  process.stderr.write(
    `npm test needs programs this machine does not have:\n${missing.join('\n')}\n` +
      '(Debian/Ubuntu, as root or with sudo; .ci/run installs both. On macOS: brew install --cask chromium; brew install redis.)\n'
  )
  process.exit(1)
}
