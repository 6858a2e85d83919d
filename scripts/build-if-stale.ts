/**
 * `npm start`'s build step: `npm run build` only when dist/ is older than the sources, so a start with
 * nothing changed takes no compile (~10 s before). dist/.build-stamp is written after a build that
 * succeeded; the build runs again when it is missing (a fresh clone) or older than any file or folder
 * in src/ or a tsconfig (an edit, a `git pull`, a file removed).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
export const BUILD_STAMP = join(ROOT, 'dist', '.build-stamp')

/** The newest modification time (ms) of `path` and, for a folder, of everything in it. */
function newestMtime(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = stat.mtimeMs
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)))
  return newest
}

/** Does dist/ need building? */
export function buildIsStale(): boolean {
  if (!existsSync(BUILD_STAMP) || !existsSync(join(ROOT, 'dist', 'main.js'))) return true
  const sources = Math.max(
    newestMtime(join(ROOT, 'src')),
    newestMtime(join(ROOT, 'tsconfig.json')),
    newestMtime(join(ROOT, 'tsconfig.build.json'))
  )
  return statSync(BUILD_STAMP).mtimeMs < sources
}

/** `npm run build` when dist/ is stale; true when dist/ is up to date afterwards. */
export function buildIfStale(log: (line: string) => void): boolean {
  if (!buildIsStale()) return true
  log('dist/ is missing or older than src/: running npm run build')
  const result = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
  if (result.status !== 0) return false
  writeFileSync(BUILD_STAMP, `${new Date().toISOString()}\n`)
  return true
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!buildIfStale((line) => process.stderr.write(`doi-proxy: ${line}\n`))) process.exit(1)
}
