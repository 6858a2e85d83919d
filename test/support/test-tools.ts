/**
 * The programs the tests drive besides Node: Debian's Chromium (test/browser/) and redis-server (the
 * shared-tier tests). `npm test` checks them first (scripts/check-test-tools.ts), so a machine without
 * them fails in a second with the line that installs them, not after minutes of tests.
 */
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

export interface TestTool {
  name: string
  /** Why the tests need it. */
  why: string
  /** The path of the program, or undefined when none is found. */
  find: (env: NodeJS.ProcessEnv) => string | undefined
  install: string
}

/** The first executable called one of `names` on PATH. */
export function findOnPath(names: readonly string[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    for (const name of names) {
      const path = join(dir, name)
      try {
        accessSync(path, constants.X_OK)
        return path
      } catch {
        /* not here */
      }
    }
  }
  return undefined
}

export const TEST_TOOLS: readonly TestTool[] = [
  {
    name: 'Chromium',
    why: 'the browser tests open every page in a real headless Chromium (playwright-core downloads none)',
    find: (env) =>
      env.CHROMIUM_PATH !== undefined && env.CHROMIUM_PATH !== '' ? env.CHROMIUM_PATH : findOnPath(['chromium', 'chromium-browser'], env),
    install: 'apt-get install -y --no-install-recommends chromium   (or set CHROMIUM_PATH to a Chromium or Chrome binary)'
  },
  {
    name: 'redis-server',
    why: 'the shared-cache tests start real Redis servers on loopback ports',
    find: (env) => findOnPath(['redis-server'], env),
    install: 'apt-get install -y --no-install-recommends redis-server'
  }
]

/** The tools missing from this machine, each as the lines that say what it is for and how to install it. */
export function missingTestTools(env: NodeJS.ProcessEnv = process.env): string[] {
  return TEST_TOOLS.filter((tool) => tool.find(env) === undefined).map((tool) => `  - ${tool.name}: ${tool.why}.\n      ${tool.install}`)
}
