#!/usr/bin/env node
// The `doi-proxy` command (package.json "bin"): the compiled CLI, dist/command/cli.js. A clone has no
// dist/ until it is built (`npm pack` builds it first, so a tarball always has it): say so and how,
// rather than the shell's "doi-proxy: not found".
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

// `npm run doi-proxy -- …` runs in the package's root; npm says where it was typed (INIT_CWD): relative
// paths are the user's, from there. Only under that script: another package's scripts that run this
// command mean their paths from their own root, as npm runs them.
if (process.env.npm_lifecycle_event === 'doi-proxy' && process.env.npm_package_name === 'doi-proxy' && process.env.INIT_CWD) {
  process.chdir(process.env.INIT_CWD)
}

const cli = new URL('../dist/command/cli.js', import.meta.url)
if (existsSync(cli)) {
  await import(cli.href)
} else {
  const root = fileURLToPath(new URL('..', import.meta.url))
  process.stderr.write(
    `doi-proxy: not built yet (${fileURLToPath(cli)} is missing): run \`npm run build\` in ${root}, or run the command there as \`npm run doi-proxy -- …\`, which builds first\n`
  )
  process.exitCode = 69 // sysexits.h EX_UNAVAILABLE: the command cannot run here as it is
}
