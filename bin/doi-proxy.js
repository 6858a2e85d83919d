#!/usr/bin/env node
// The `doi-proxy` command (package.json "bin"): the compiled CLI, dist/command/cli.js. A clone has no
// dist/ until it is built (`npm pack` builds it first, so a tarball always has it): say so and how,
// rather than the shell's "doi-proxy: not found".
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const cli = new URL('../dist/command/cli.js', import.meta.url)
if (existsSync(cli)) {
  await import(cli.href)
} else {
  const root = fileURLToPath(new URL('..', import.meta.url))
  process.stderr.write(`doi-proxy: not built yet (${fileURLToPath(cli)} is missing): run \`npm run build\` in ${root}, or run the command there as \`npm run doi-proxy -- …\`, which builds first\n`)
  process.exitCode = 69 // sysexits.h EX_UNAVAILABLE: the command cannot run here as it is
}
