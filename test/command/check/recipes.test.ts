import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { setup } from '../../support/app.js'
import { admin, str, PROBE_RECORDS } from '../../support/records.js'

// docs/checking-dois.md's recipes, run as written (only the address of doi-proxy changes).
const DOC = readFileSync(new URL('../../../docs/checking-dois.md', import.meta.url), 'utf8')
const LINKINATOR = new URL('../../../node_modules/linkinator/build/src/cli.js', import.meta.url).pathname
const run = promisify(execFile)

/** The fenced blocks of the doc in a language. */
function blocks(lang: string): string[] {
  return [...DOC.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!)
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => {
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** doi-proxy on a free port, with a registered DOI whose landing page (a real server) answers 403 to everyone. */
async function world(): Promise<{ proxy: string; landingHits: () => number }> {
  let hits = 0
  const publisher = createServer((_req, res) => {
    hits++
    res.writeHead(403).end('Forbidden')
  })
  const landing = await listen(publisher)
  const { app } = await setup({ records: { ...PROBE_RECORDS, '10.5555/paywalled': [admin(), str(1, 'URL', `${landing}/article`)] } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { proxy: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, landingHits: () => hits }
}

const ours = (text: string, proxy: string): string => text.replaceAll('http://127.0.0.1:8000', proxy)

/** Whether sphinx-build is on the PATH (Debian's python3-sphinx; .ci/run installs it). */
function hasSphinxBuild(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v sphinx-build'], { stdio: 'pipe' })
    return true
  } catch {
    return false
  }
}
// Skipped only on a machine without it, and loudly; in CI (CI set) the test runs, and fails there without it.
const SKIP_SPHINX = !hasSphinxBuild() && process.env.CI === undefined
if (SKIP_SPHINX) {
  console.warn('SKIPPED the Sphinx linkcheck recipe of docs/checking-dois.md: no sphinx-build here (apt-get install python3-sphinx)')
}

describe('docs/checking-dois.md', { timeout: 60_000 }, () => {
  it('linkinator, as the recipe runs it, passes a registered DOI whose landing page is 403 and fails an unregistered one', async () => {
    const { proxy, landingHits } = await world()
    const page = createServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          '<!doctype html><title>refs</title>' +
            '<a href="https://doi.org/10.5555/paywalled">a paper behind a wall</a> <a href="http://dx.doi.org/10.5555/missing">a typo</a>'
        )
    })
    const site = await listen(page)
    const recipe = blocks('sh').find((b) => b.includes('linkinator'))!
    const search = /--url-rewrite-search '([^']+)'/.exec(recipe)![1]!
    const replace = /--url-rewrite-replace '([^']+)'/.exec(ours(recipe, proxy))![1]!
    const result = await run(process.execPath, [
      LINKINATOR,
      site,
      '--url-rewrite-search',
      search,
      '--url-rewrite-replace',
      replace,
      '--format',
      'json'
    ]).catch((err: { code: number; stdout: string }) => err)
    const report = JSON.parse(result.stdout) as { passed: boolean; links: Array<{ url: string; state: string; status: number }> }
    const states = Object.fromEntries(report.links.map((l) => [l.url.replace(proxy, ''), [l.state, l.status]]))
    expect(states['/api/handles/10.5555/paywalled']).toEqual(['OK', 200])
    expect(states['/api/handles/10.5555/missing']).toEqual(['BROKEN', 404])
    expect(report.passed).toBe(false)
    expect(landingHits()).toBe(0)
  })

  it("lychee's --remap and markdown-link-check's replacementPatterns send DOI links to /api/handles", async () => {
    const { proxy, landingHits } = await world()
    const lychee = /--remap '(\S+) (\S+)'/.exec(
      ours(
        blocks('sh').find((b) => b.includes('lychee'))!,
        proxy
      )
    )!
    const mlc = JSON.parse(
      ours(
        blocks('json').find((b) => b.includes('replacementPatterns'))!,
        proxy
      )
    ) as { replacementPatterns: Array<{ pattern: string; replacement: string }> }
    // Rust reads `$1a` as the group named `1a`: the replacement must not put a word character after a group's number.
    expect(lychee[2]).not.toMatch(/\$\d+\w/)
    const rewrites: Array<(url: string) => string> = [
      // As lychee's Remaps::remap does: the pattern is matched against the parsed URL's text and every match
      // replaced (Rust's Regex::replace_all; `$1` is the first group there as in JavaScript).
      (url) => new URL(url).href.replace(new RegExp(lychee[1]!, 'g'), lychee[2]!),
      (url) => mlc.replacementPatterns.reduce((u, p) => u.replace(new RegExp(p.pattern), p.replacement), url)
    ]
    for (const rewrite of rewrites) {
      const first = await fetch(rewrite('https://doi.org/10.5555/paywalled'))
      expect([first.status, first.status === 200 ? '' : await first.text()]).toEqual([200, ''])
      expect((await fetch(rewrite('http://dx.doi.org/10.5555/missing'))).status).toBe(404)
      expect((await fetch(rewrite('https://doi.org/10.5555%2Fplain'))).status).toBe(200)
    }
    expect(landingHits()).toBe(0)
  })

  it.skipIf(SKIP_SPHINX)(
    "Sphinx's linkcheck with the doc's conf.py passes a registered DOI whose landing page is 403 and fails an unregistered one (needs sphinx-build: python3-sphinx)",
    async () => {
      const { proxy, landingHits } = await world()
      const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-sphinx-'))
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
      writeFileSync(
        join(dir, 'conf.py'),
        ours(
          blocks('python').find((b) => b.includes('linkcheck-process-uri'))!,
          proxy
        )
      )
      writeFileSync(
        join(dir, 'index.rst'),
        [
          'References',
          '==========',
          '',
          'A paper behind a wall: https://doi.org/10.5555/paywalled',
          '',
          'A typo: `a typo <http://dx.doi.org/10.5555/missing>`_',
          '',
          'A section of one: https://doi.org/10.5555/plain#section-2',
          ''
        ].join('\n')
      )
      // No proxy settings from the environment: the links go to the test's doi-proxy on 127.0.0.1, nowhere else.
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LC_ALL: 'C.UTF-8' }
      const build = await run('sphinx-build', ['-b', 'linkcheck', '-q', dir, join(dir, '_build')], { env }).then(
        () => ({ code: 0 }),
        (err: { code: number }) => err
      )
      const checked = readFileSync(join(dir, '_build', 'output.json'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { uri: string; status: string; lineno: number })
      expect(Object.fromEntries(checked.map((c) => [c.uri.replace(proxy, ''), [c.status, c.lineno]]))).toEqual({
        '/api/handles/10.5555/paywalled': ['working', 4],
        '/api/handles/10.5555/missing': ['broken', 6],
        '/api/handles/10.5555/plain': ['working', 8]
      })
      expect(build.code).toBe(1)
      expect(landingHits()).toBe(0)
    }
  )

  it('the batch API example answers what the doc shows', async () => {
    const { proxy } = await world()
    const example = blocks('sh').find((b) => b.includes('/api/batch') && !b.includes('?verify='))!
    const { stdout } = await run('bash', ['-c', ours(example, proxy)])
    expect(stdout).toBe(blocks('json').find((b) => b.includes('{"input":"10.5555/plain"'))!)
  })

  it('a line refused by the rate limit mid-batch is what the doc shows, with its retryAfter', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 1, rateLimitAllowList: [], batchConcurrency: 1 } })
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      remoteAddress: '192.0.2.1',
      headers: { 'content-type': 'text/plain' },
      payload: '10.5555/plain\n10.5555/n7\n'
    })
    const refused = JSON.parse(res.body.trim().split('\n')[1]!) as { error: string; retryAfter: number }
    const shown = JSON.parse(blocks('json').find((b) => b.includes('"retryAfter"'))!) as { retryAfter: number }
    expect({ ...refused, error: refused.error.replace(/in \d+ s/, `in ${shown.retryAfter} s`), retryAfter: shown.retryAfter }).toEqual(
      shown
    )
  })

  it('the GitHub Actions job is valid YAML running doi-proxy check with the github format against its service', () => {
    const workflow = parseYaml(blocks('yaml').find((b) => b.includes('name: DOIs'))!) as {
      jobs: { dois: { services: Record<string, { ports: string[] }>; steps: Array<{ run?: string }> } }
    }
    expect(workflow.jobs.dois.services['doi-proxy']!.ports).toEqual(['8000:8000'])
    expect(workflow.jobs.dois.steps.map((s) => s.run).join('')).toContain('check --format github --server http://127.0.0.1:8000 docs/')
  })
})
