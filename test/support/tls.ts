/**
 * Throw-away certificates made with openssl for tests: a self-signed one (a landing page a crawler must
 * refuse, a certificate nginx is handed on renewal), and the runner test/support/redis.ts makes its CA with.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

/**
 * `openssl ARGS` in `cwd`, asynchronously (a test's app measures its event loop, and a blocked one sheds
 * load: 503); an error that says to install openssl when it is missing.
 */
export async function openssl(cwd: string, ...args: string[]): Promise<void> {
  try {
    await promisify(execFile)('openssl', args, { cwd })
  } catch (err) {
    const { code, stderr } = err as { code?: unknown; stderr?: string }
    throw new Error(
      code === 'ENOENT'
        ? 'openssl is not installed: `apt-get install -y openssl`; .ci/run installs it'
        : `openssl ${args[0]} failed: ${stderr}`
    )
  }
}

export interface SelfSignedOptions {
  /** The subject's CN, e.g. journal.test. */
  commonName: string
  /** The subjectAltName, e.g. `DNS:journal.test,IP:127.0.0.2`. */
  altNames: string
  days: number
}

/** A self-signed EC (P-256) certificate and its key, as PEM; nothing is left on disk. */
export async function selfSignedCert(opts: SelfSignedOptions): Promise<{ key: string; cert: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-tls-'))
  try {
    await openssl(
      dir,
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'key.pem',
      '-out',
      'cert.pem',
      '-days',
      String(opts.days),
      '-subj',
      `/CN=${opts.commonName}`,
      '-addext',
      `subjectAltName=${opts.altNames}`
    )
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
