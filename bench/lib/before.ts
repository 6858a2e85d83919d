/**
 * `--before <git-ref>`: an older commit of this repository, built in bench/.tmp, to run beside the
 * current server in the same benchmark run (same machine, same moment, same baselines). The tree
 * comes from `git archive` (nothing is added to .git, no worktree to prune), node_modules is a
 * symlink to ours (no npm ci), and the commit's own `npm run build` makes its dist/main.js.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, TMP } from './processes.js'

export interface BeforeBuild {
  /** The directory holding the commit's tree and its dist/ (bench/.tmp/before-<short>). */
  dir: string
  sha: string
  short: string
  /** The commit's subject line, shortened to 80 characters. */
  subject: string
  /** The server's name in the results: `doi-proxy before (<short>)`. */
  name: string
  /** Delete the directory (also done when the process exits, however it exits). */
  remove(): void
}

/** What every "doi-proxy before (…)" row's server name starts with. */
export const BEFORE_PREFIX = 'doi-proxy before'

function git(args: string[]): string {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' })
  if (result.status !== 0) {
    throw new Error(`git ${args.join(' ')} failed: ${(result.stderr ?? '').trim() || String(result.error ?? result.status)}`)
  }
  return result.stdout.trim()
}

/** Extract `ref` into bench/.tmp/before-<short> and build it there. */
export function buildBefore(ref: string, log: (line: string) => void): BeforeBuild {
  const sha = git(['rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`])
  const short = git(['rev-parse', '--short', sha])
  const fullSubject = git(['log', '-1', '--format=%s', sha])
  const subject = fullSubject.length > 80 ? `${fullSubject.slice(0, 79)}…` : fullSubject
  const dir = join(TMP, `before-${short}`)
  let removed = false
  const remove = (): void => {
    if (removed) return
    removed = true
    rmSync(dir, { recursive: true, force: true })
    rmSync(`${dir}.tar`, { force: true })
  }
  // Whatever way the run ends (an error, Ctrl-C: processes.ts exits on SIGINT/SIGTERM), the copy goes.
  process.once('exit', remove)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  try {
    log(`--before ${ref}: extracting ${short} into ${dir}`)
    git(['archive', '--format=tar', '-o', `${dir}.tar`, sha])
    const tar = spawnSync('tar', ['-x', '-f', `${dir}.tar`, '-C', dir], { stdio: ['ignore', 'inherit', 'inherit'] })
    if (tar.status !== 0) throw new Error(`tar -x failed (${String(tar.error ?? tar.status)})`)
    rmSync(`${dir}.tar`, { force: true })
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
    log(`--before ${ref}: npm run build in ${dir}`)
    const build = spawnSync('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] })
    const main = join(dir, 'dist', 'main.js')
    if (build.status !== 0) {
      if (!existsSync(main)) throw new Error(`npm run build failed for ${short} and ${main} does not exist`)
      log(
        `--before ${ref}: npm run build reported errors (this commit against today's node_modules?); benchmarking the dist/ it emitted anyway`
      )
    }
  } catch (err) {
    remove()
    throw err
  }
  return { dir, sha, short, subject, name: `${BEFORE_PREFIX} (${short})`, remove }
}
