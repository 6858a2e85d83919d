import { accessSync, closeSync, constants, openSync, opendirSync, statSync } from 'node:fs'
import type { Stats } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { ConfigError, OPTIONS } from '../config/schema.js'
import type { Config, PathUse } from '../config/schema.js'

/**
 * Every setting the table marks as naming a file or directory (its `path`), checked the same way at
 * start: a mistake stops the start with one line naming the setting and the path (main.ts: exit 78),
 * before the file is opened and a failure would be a stack trace. A file's content is its reader's to judge.
 */
export function checkPaths(config: Config): void {
  for (const [key, option] of Object.entries(OPTIONS) as Array<[keyof Config, (typeof OPTIONS)[keyof Config]]>) {
    const use = option.path
    const value = config[key]
    if (use === undefined || value === undefined) continue
    if (typeof value !== 'string') throw new Error(`${key}: the table gives it a path, but its value is not text`)
    const problem = pathProblem(value, use)
    if (problem !== undefined) {
      throw new ConfigError(`invalid setting ${key} (${option.env}): ${JSON.stringify(value)} ${problem}; it must name ${WANTED[use]}`)
    }
  }
  const copyProblem = registryCopyProblem(config)
  if (copyProblem !== undefined) {
    throw new ConfigError(`invalid setting registryCopy (REGISTRY_COPY): ${JSON.stringify(config.registryCopy)} ${copyProblem}`)
  }
}

/**
 * The registry copy's directory (issue 43), once it is known to be a readable directory: it must hold a
 * copy (LMDB's `data.mdb`; the format inside is the store's to judge when it opens), and an updating server
 * (REGISTRY_COPY_UPDATE_HOURS) must be able to write it (its file and the lock file beside it).
 */
export function registryCopyProblem(config: Pick<Config, 'registryCopy' | 'registryCopyUpdateHours'>): string | undefined {
  const dir = config.registryCopy
  if (dir === undefined) return undefined
  const data = join(dir, 'data.mdb')
  const found = statOf(data)
  if (typeof found === 'string') {
    if (found === 'ENOENT') return `holds no registry copy (no data.mdb); make one with doi-proxy import --to ${dir}`
    return `has a data.mdb that cannot be looked at (${found})`
  }
  if (!found.isFile()) return 'has a data.mdb that is not a file'
  const readable = failure(() => {
    closeSync(openSync(data, 'r'))
  }, 'has a data.mdb that cannot be read')
  if (readable !== undefined || config.registryCopyUpdateHours === 0) return readable
  return failure(() => {
    accessSync(dir, constants.W_OK)
    accessSync(data, constants.W_OK)
  }, 'cannot be written, and REGISTRY_COPY_UPDATE_HOURS updates it: give the server write access, or set REGISTRY_COPY_UPDATE_HOURS=0 (a read-only copy)')
}

const WANTED: Record<PathUse, string> = {
  'file to read': 'a file it can read',
  'directory to read': 'a directory it can read',
  'file to write': 'a file it can write (created, with its directories, if missing)',
  'directory to write': 'a directory it can write into (created, with its parents, if missing)'
}

/** What is wrong with `path` for `use`, or undefined when nothing is. */
export function pathProblem(path: string, use: PathUse): string | undefined {
  const found = statOf(path)
  if (typeof found === 'string') {
    // ENOTDIR: a file where a directory on the way should be; nothing there either.
    if (found !== 'ENOENT' && found !== 'ENOTDIR') return `cannot be looked at (${found})`
    return use.endsWith('to read') ? 'does not exist' : creatable(path)
  }
  switch (use) {
    case 'file to read':
      if (found.isDirectory()) return 'is a directory, not a file'
      return failure(() => {
        closeSync(openSync(path, 'r'))
      }, 'cannot be read')
    case 'directory to read':
      if (!found.isDirectory()) return 'is not a directory'
      return failure(() => {
        opendirSync(path).closeSync()
      }, 'cannot be read')
    case 'file to write': {
      if (found.isDirectory()) return 'is a directory, not a file'
      // Written as a temporary file renamed over it (the cache snapshot): its directory is what must be
      // writable; the file itself may well be read-only.
      const directory = dirname(resolve(path))
      return failure(
        () => {
          accessSync(directory, constants.W_OK | constants.X_OK)
        },
        `cannot be replaced: its directory ${JSON.stringify(directory)} cannot be written into`
      )
    }
    case 'directory to write':
      if (!found.isDirectory()) return 'is an existing file, not a directory'
      return failure(() => {
        accessSync(path, constants.W_OK)
      }, 'cannot be written into')
  }
}

/** A path that does not exist yet can be made when its nearest existing ancestor is a directory we may write. */
function creatable(path: string): string | undefined {
  let ancestor = dirname(resolve(path))
  for (;;) {
    const found = statOf(ancestor)
    if (typeof found !== 'string') {
      if (!found.isDirectory()) return `cannot be created: ${JSON.stringify(ancestor)} is a file, not a directory`
      return failure(
        () => {
          accessSync(ancestor, constants.W_OK | constants.X_OK)
        },
        `cannot be created in ${JSON.stringify(ancestor)}`
      )
    }
    if (found !== 'ENOENT' && found !== 'ENOTDIR') return `cannot be created: ${JSON.stringify(ancestor)} cannot be looked at (${found})`
    const up = dirname(ancestor)
    if (up === ancestor) return 'cannot be created'
    ancestor = up
  }
}

function statOf(path: string): Stats | string {
  try {
    return statSync(path)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err)
  }
}

/** `what` and the error's code when `attempt` throws. */
function failure(attempt: () => void, what: string): string | undefined {
  try {
    attempt()
    return undefined
  } catch (err) {
    return `${what} (${(err as NodeJS.ErrnoException).code ?? String(err)})`
  }
}
