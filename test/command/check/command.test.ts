import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer as createHttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { XMLValidator } from 'fast-xml-parser'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setup } from '../../support/app.js'
import { admin, str, PROBE_RECORDS } from '../../support/records.js'
import { closedPort, doiProxy } from '../../support/server-process.js'

const REPO = new URL('../../..', import.meta.url).pathname

// docs/checking-dois.md's examples of output, each compared below with what a run prints.
const DOC = readFileSync(new URL('../../../docs/checking-dois.md', import.meta.url), 'utf8')
const docExample = (holding: string): string =>
  [...DOC.matchAll(/```text\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/^ {2}/gm, '')).find((b) => b.includes(holding))!

const RECORDS = { ...PROBE_RECORDS, '10/abc': [admin(), str(1, 'HS_ALIAS', '10.5555/plain')] }

describe('doi-proxy check', { timeout: 120_000 }, () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'doi-proxy-check-'))
    await mkdir(join(dir, '.git'))
    await mkdir(join(dir, 'docs'))
    await mkdir(join(dir, 'build'))
    await writeFile(join(dir, '.gitignore'), 'build/\n')
    await writeFile(
      join(dir, 'docs', 'index.md'),
      '# Refs\n\nSee [the paper](https://doi.org/10.5555/plain).\n\nAnd doi:10.5555/missing, and https://doi.org/10/abc.\n'
    )
    await writeFile(join(dir, 'docs', 'refs.bib'), '@article{a,\n  doi = {10.5555/multi}\n}\n@article{b,\n  doi = {10.5555/gone}\n}\n')
    await writeFile(join(dir, 'build', 'index.html'), '<a href="https://doi.org/10.5555/ignored-by-git">x</a>')
    await writeFile(join(dir, 'CITATION.cff'), 'doi: 10.5555/plain\n')
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  async function server(): Promise<{ url: string; upstream: Awaited<ReturnType<typeof setup>>['upstream'] }> {
    const { app, upstream } = await setup({ records: RECORDS })
    await app.listen({ port: 0, host: '127.0.0.1' })
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, upstream }
  }

  it('prints each unregistered DOI with file:line and a summary, and exits 1', async () => {
    const { url, upstream } = await server()
    const run = await doiProxy(['check', '--server', url, '.'], dir)
    expect(run.stdout).toBe(
      [
        'docs/index.md:5: 10.5555/missing is not registered',
        'docs/refs.bib:5: 10.5555/gone is not registered',
        'Checked 6 DOIs (5 distinct) in 3 files: 4 registered, 2 not registered, 0 could not be checked.',
        ''
      ].join('\n')
    )
    expect(run.code).toBe(1)
    // .gitignore's build/ was not read; no landing page was asked (only the fake registry was).
    expect(upstream.count('10.5555/ignored-by-git')).toBe(0)
  })

  it('exits 0 when every DOI is registered', async () => {
    const { url } = await server()
    const run = await doiProxy(['check', '--server', url, 'CITATION.cff'], dir)
    expect(run.stdout).toBe('Checked 1 DOI (1 distinct) in 1 file: 1 registered, 0 not registered, 0 could not be checked.\n')
    expect(run.code).toBe(0)
  })

  it('--format github writes workflow annotations on the lines', async () => {
    const { url } = await server()
    const run = await doiProxy(['check', '--server', url, '--format', 'github', 'docs'], dir)
    expect(run.stdout.split('\n')).toContain(
      '::error file=docs/index.md,line=5,title=DOI not registered::10.5555/missing is not registered'
    )
    expect(run.code).toBe(1)
  })

  it('--format junit writes a JUnit report with a failure per unregistered DOI', async () => {
    const { url } = await server()
    const run = await doiProxy(['check', '--server', url, '--format', 'junit', 'docs'], dir)
    expect(run.stdout).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="doi-proxy check" tests="5" failures="2" errors="0" skipped="0">/
    )
    expect(run.stdout).toContain('<failure message="10.5555/gone is not registered" type="unregistered"/>')
    expect(run.code).toBe(1)
  })

  it('--format json lists every DOI found with its verdict', async () => {
    const { url } = await server()
    const run = await doiProxy(['check', '--server', url, '--format', 'json', 'docs/index.md'], dir)
    const report = JSON.parse(run.stdout) as {
      summary: { found: number }
      results: Array<{ written: string; doi: string | null; registered: boolean }>
    }
    expect(report.summary.found).toBe(3)
    expect(report.results.map((r) => [r.written, r.doi, r.registered])).toEqual([
      ['10.5555/plain', '10.5555/plain', true],
      ['10.5555/missing', null, false],
      ['10/abc', '10.5555/plain', true]
    ])
  })

  it('an upstream failure is "could not be checked": exit 0, or 1 with --fail-on unknown', async () => {
    const { url, upstream } = await server()
    upstream.mode = { kind: 'html', status: 503 }
    await writeFile(join(dir, 'one.txt'), '10.5555/plain\n')
    const lenient = await doiProxy(['check', '--server', url, 'one.txt'], dir)
    expect(lenient.stdout).toMatch(/^one.txt:1: 10.5555\/plain could not be checked: /)
    expect(lenient.code).toBe(0)
    expect((await doiProxy(['check', '--server', url, '--fail-on', 'unknown', 'one.txt'], dir)).code).toBe(1)
  })

  it('against an offline server, a DOI not in its records "could not be checked", never "is not registered": exit 0, or 1 with --fail-on unknown', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { offline: true } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    await writeFile(join(dir, 'one.txt'), '10.1000/182\n')
    const lenient = await doiProxy(['check', '--server', url, 'one.txt'], dir)
    expect(lenient.stdout).toMatch(/^one.txt:1: 10.1000\/182 could not be checked: not in this resolver's records/)
    expect(lenient.stdout).toContain('0 not registered, 1 could not be checked.')
    expect(lenient.code).toBe(0)
    expect((await doiProxy(['check', '--server', url, '--fail-on', 'unknown', 'one.txt'], dir)).code).toBe(1)
    expect(upstream.seen).toHaveLength(0)
  })

  it('--upstream with OFFLINE=true: a DOI not held "could not be checked", never "is not registered"', async () => {
    await writeFile(join(dir, 'one.txt'), '10.1000/182\n')
    const run = await doiProxy(['check', '--upstream', 'one.txt'], dir, { OFFLINE: 'true', UPSTREAM_URL: 'http://127.0.0.1:9' })
    expect(run.stdout).toMatch(/^one.txt:1: 10.1000\/182 could not be checked: not in this resolver's records/)
    expect(run.stdout).not.toContain('is not registered')
    expect(run.code).toBe(0)
  })

  it('--upstream resolves in the process, through the same code, without a server', async () => {
    const { upstream } = await setup({ records: RECORDS })
    const run = await doiProxy(['check', '--upstream', 'docs'], dir, { UPSTREAM_URL: upstream.url })
    expect(run.stdout).toContain('Checked 5 DOIs (5 distinct) in 2 files: 3 registered, 2 not registered')
    expect(run.code).toBe(1)
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('--upstream run from the repository sees its shipped sample records, as a server started there does', async () => {
    const { upstream } = await setup({ records: RECORDS })
    await writeFile(join(dir, 'samples.md'), 'doi:10.5555/sample and doi:10.5072/sample-dataset\n')
    const run = await doiProxy(['check', '--upstream', join(dir, 'samples.md')], REPO, { UPSTREAM_URL: upstream.url, CACHE_FILE: '' })
    expect(run.stdout).toContain(': 2 registered, 0 not registered')
    expect(run.code).toBe(0)
    expect(upstream.count('10.5555/sample') + upstream.count('10.5072/sample-dataset')).toBe(0)
  })

  it('--upstream uses the local records LOCAL_STORE_DIR names, and none with LOCAL_STORE_DIR= empty', async () => {
    const { upstream } = await setup({ records: RECORDS })
    await mkdir(join(dir, 'records'))
    await writeFile(
      join(dir, 'records', 'ours.ndjson'),
      JSON.stringify({ handle: '10.5555/ours', values: [str(1, 'URL', 'https://example.org/ours')] }) + '\n'
    )
    await writeFile(join(dir, 'ours.txt'), '10.5555/ours\n')
    const held = await doiProxy(['check', '--upstream', 'ours.txt'], dir, { UPSTREAM_URL: upstream.url, LOCAL_STORE_DIR: 'records' })
    expect(held.stdout).toContain(': 1 registered, 0 not registered')
    const none = await doiProxy(['check', '--upstream', 'ours.txt'], dir, { UPSTREAM_URL: upstream.url, LOCAL_STORE_DIR: '' })
    expect(none.stdout).toContain(': 0 registered, 1 not registered')
  })

  describe('a file cannot command the terminal or the CI runner that reads the report', () => {
    const NAME = 'nl\n::warning file=a::INJECTED\n.md'
    // eslint-disable-next-line no-control-regex
    const CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/
    /** Lines of output that a GitHub Actions runner would obey, other than our own annotations. */
    const injected = (out: string): string[] => out.split('\n').filter((l) => /^\s*::/.test(l) && !/^::(error|warning) file=/.test(l))

    it.each(['text', 'github'])(
      '--format %s: a file name with newlines and a workflow command, a DOI with terminal controls',
      async (format) => {
        const { url } = await server()
        await writeFile(join(dir, 'docs', NAME), 'doi:10.5555/missing\x1b]52;c;cHduZWQ=\x07\x1b[2J and 10.5555/gone\u009b2J\n')
        const run = await doiProxy(['check', '--server', url, '--format', format, 'docs'], dir)
        expect(injected(run.stdout)).toEqual([])
        expect(run.stdout).not.toMatch(CONTROLS)
        expect(run.stdout).toContain(format === 'text' ? docExample('::warning') : 'file=docs/nl\\u000a%3A%3Awarning')
        expect(run.code).toBe(1)
      }
    )

    it('the note about a skipped file shows its name on one line', async () => {
      await writeFile(join(dir, `bin${NAME}`), Buffer.from([0, 1, 2]))
      const run = await doiProxy(['check', '--server', 'http://127.0.0.1:9', `bin${NAME}`], dir)
      expect(run.stderr).toContain('note: skipped binnl\\u000a::warning file=a::INJECTED\\u000a.md: binary\n')
      expect(injected(run.stderr)).toEqual([])
    })

    it('a link whose path decodes to a control character is reported as not a DOI, the run goes on', async () => {
      const { url } = await server()
      await writeFile(join(dir, 'link.md'), '[x](https://doi.org/10.5555/plain%0A%1Bc) and 10.5555/plain\n')
      const run = await doiProxy(['check', '--server', url, 'link.md'], dir)
      expect(run.stdout).toMatch(/^link\.md:1: 10\.5555\/plain\\u000a\\u001bc is not registered \(.*control character/)
      expect(run.stdout).not.toMatch(CONTROLS)
      expect(run.stdout).toContain('1 registered, 1 not registered')
      expect(run.code).toBe(1)
    })
  })

  describe('against a server with a rate limit (RATE_LIMIT_MAX)', () => {
    async function limitedServer(windowMs: number): Promise<{ url: string; upstream: Awaited<ReturnType<typeof setup>>['upstream'] }> {
      const records: Record<string, Array<ReturnType<typeof admin>>> = {}
      for (let i = 0; i < 8; i++) records[`10.5555/n${i}`] = [admin(), str(1, 'URL', `http://example.org/${i}`)]
      const { app, upstream } = await setup({
        records,
        overrides: { rateLimitMax: 3, rateLimitWindowMs: windowMs, rateLimitAllowList: [], batchConcurrency: 1 }
      })
      await app.listen({ port: 0, host: '127.0.0.1' })
      await writeFile(join(dir, 'eight.txt'), Array.from({ length: 8 }, (_, i) => `10.5555/n${i}`).join('\n'))
      return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, upstream }
    }

    it('asks again about the DOIs refused with retryAfter, after the wait the server asks for, until each is answered', async () => {
      const { url, upstream } = await limitedServer(1000)
      const run = await doiProxy(['check', '--server', url, 'eight.txt'], dir)
      expect(run.stdout).toBe('Checked 8 DOIs (8 distinct) in 1 file: 8 registered, 0 not registered, 0 could not be checked.\n')
      // 3 of 8 answered, 5 refused until the 1 s window ends; then 3 of those 5, and the last 2 after another wait.
      expect(run.stderr.split('\n').slice(0, 1).join('') + '\n').toBe(docExample('note: the server asked to wait'))
      expect(run.stderr).toContain('asking again about 2 DOIs in 1 s')
      expect(run.code).toBe(0)
      // Each DOI was looked up once: a refused line cost the registry nothing, and an answered one is not asked again.
      for (let i = 0; i < 8; i++) expect(upstream.count(`10.5555/n${i}`)).toBe(1)
    })

    it('a whole batch refused with 429 and Retry-After (the limit already spent) is sent again after the wait', async () => {
      // A doi-proxy whose first answer is the whole batch's 429, as when this client's budget is spent before it starts.
      const bodies: string[] = []
      const proxy = createHttpServer((req, res) => {
        let body = ''
        req.on('data', (d: Buffer) => {
          body += d.toString()
        })
        req.on('end', () => {
          bodies.push(body)
          if (bodies.length === 1) {
            res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' }).end('{"message":"too many DOI lookups"}')
            return
          }
          res.writeHead(200, { 'content-type': 'application/x-ndjson' })
          res.end(
            body
              .split('\n')
              .map(
                (doi) =>
                  JSON.stringify({ input: doi, doi, registered: true, url: 'http://example.org/', source: 'upstream', status: 302 }) + '\n'
              )
              .join('')
          )
        })
      })
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
      try {
        await writeFile(join(dir, 'two.txt'), '10.5555/a\n10.5555/b\n')
        const run = await doiProxy(['check', '--server', `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, 'two.txt'], dir)
        expect(run.stderr).toBe('note: the server asked to wait: asking again about 2 DOIs in 1 s (--max-wait 60 s in all)\n')
        expect(run.stdout).toBe('Checked 2 DOIs (2 distinct) in 1 file: 2 registered, 0 not registered, 0 could not be checked.\n')
        expect(bodies).toEqual(['10.5555/a\n10.5555/b', '10.5555/a\n10.5555/b'])
      } finally {
        await new Promise((resolve) => proxy.close(resolve))
      }
    })

    it("waits no longer than --max-wait in all: what is still refused then could not be checked, with the server's reason", async () => {
      const { url } = await limitedServer(60_000)
      const started = Date.now()
      const run = await doiProxy(['check', '--server', url, '--max-wait', '5', 'eight.txt'], dir)
      expect(Date.now() - started).toBeLessThan(30_000)
      expect(run.stdout).toMatch(/^eight.txt:4: 10.5555\/n3 could not be checked: You have made too many DOI lookups in a short time/)
      expect(run.stdout).toContain('Checked 8 DOIs (8 distinct) in 1 file: 3 registered, 0 not registered, 5 could not be checked.')
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
    })
  })

  describe('every file it reads is bounded, a .gitignore too', () => {
    it('a .gitignore of 200,000 rules is not applied, and says so; the others still are', async () => {
      const { url, upstream } = await server()
      await writeFile(join(dir, 'docs', '.gitignore'), Array.from({ length: 200_000 }, (_, i) => `dir${i}/**/file-${i}-*.md`).join('\n'))
      const run = await doiProxy(['check', '--server', url, '.'], dir)
      expect(run.stderr).toBe(docExample('note: skipped'))
      expect(run.stdout).toContain('Checked 6 DOIs (5 distinct) in 3 files')
      expect(upstream.count('10.5555/ignored-by-git')).toBe(0)
    })

    it('.gitignore files past 256 KiB in all are not applied, and each says so (twelve nested ones of 60 KB each)', async () => {
      const { url, upstream } = await server()
      // Each rule is tried on every path below its file: twelve of these nested took 28 s and 360 MB.
      const rules = (level: number): string =>
        [`ignored-${level}.md`, ...Array.from({ length: 2300 }, (_, i) => `dir${i}/**/file-${level}-${i}-*.md`)].join('\n')
      const levels = Array.from({ length: 12 }, (_, level) => `n${level}`)
      for (let level = 0; level < levels.length; level++) {
        const here = join(dir, 'docs', ...levels.slice(0, level + 1))
        await mkdir(here, { recursive: true })
        await writeFile(join(here, '.gitignore'), rules(level))
        await writeFile(join(here, `ignored-${level}.md`), `doi:10.5555/ignored-by-git-${level}\n`)
      }
      expect(rules(11).length).toBeGreaterThan(60_000)
      expect(rules(11).length).toBeLessThan(65_536)
      const run = await doiProxy(['check', '--server', url, 'docs'], dir)
      // Four fit in 262,144 bytes; the fifth and each below it are named, deepest last.
      expect(run.stderr.split('\n').filter((l) => l !== '')).toEqual(
        levels
          .slice(4)
          .map(
            (_, i) =>
              `note: skipped docs/${levels.slice(0, i + 5).join('/')}/.gitignore: the .gitignore files of this run would hold more than 262144 bytes in all; its rules are not applied`
          )
      )
      // The four applied ignore their files; the files the others name are checked.
      for (let level = 0; level < 12; level++) expect(upstream.count(`10.5555/ignored-by-git-${level}`)).toBe(level < 4 ? 0 : 1)
    })

    it('a .gitignore that is a symbolic link is not followed (as git does not), so a link to a pipe cannot hang the run', async () => {
      const { url } = await server()
      execFileSync('mkfifo', [join(dir, 'pipe')])
      await symlink(join(dir, 'pipe'), join(dir, 'docs', '.gitignore'))
      const run = await doiProxy(['check', '--server', url, 'docs'], dir)
      expect(run.stderr).toBe('note: skipped docs/.gitignore: a symbolic link; its rules are not applied\n')
      expect(run.code).toBe(1)
    })

    it('a named path that is not a regular file (a pipe) is skipped with a note, not waited on', async () => {
      const { url } = await server()
      execFileSync('mkfifo', [join(dir, 'pipe.md')])
      const run = await doiProxy(['check', '--server', url, 'pipe.md', 'CITATION.cff'], dir)
      expect(run.stderr).toBe('note: skipped pipe.md: not a regular file\n')
      expect(run.stdout).toContain('Checked 1 DOI (1 distinct) in 1 file')
    })
  })

  it.each([
    [['check'], 'no PATH given'],
    [['check', '--format', 'xml', '.'], '--format must be one of text, json, junit, github'],
    [['check', '--fail-on', 'sometimes', '.'], '--fail-on must be unregistered or unknown'],
    [['check', '--server', 'ftp://x', '.'], '--server must be an http(s) URL'],
    [['check', '--max-wait', '1m', '.'], '--max-wait must be a whole number of seconds'],
    [['check', 'no/such/dir'], 'no such file or directory: no/such/dir']
  ])('%j is a usage error (exit 2): %s', async (args, message) => {
    const run = await doiProxy(args, dir)
    expect(run.stderr).toContain(message)
    expect(run.code).toBe(2)
  })

  describe('with the registry down', () => {
    async function downRegistry(): Promise<string> {
      const { url, upstream } = await server()
      await upstream.close()
      await writeFile(join(dir, 'two.txt'), '10.5555/plain\n10.5555/multi\n')
      return url
    }

    it('each DOI line gives the short reason; what the operator can do is said once, under the summary', async () => {
      const run = await doiProxy(['check', '--server', await downRegistry(), 'two.txt'], dir)
      const lines = run.stdout.trimEnd().split('\n')
      expect(lines.slice(0, 2)).toEqual([
        'two.txt:1: 10.5555/plain could not be checked: We could not reach the DOI registry to look this DOI up: it refused the connection (nothing listens at the address this resolver is set to use).',
        'two.txt:2: 10.5555/multi could not be checked: We could not reach the DOI registry to look this DOI up: it refused the connection (nothing listens at the address this resolver is set to use).'
      ])
      expect(lines[2]).toBe('Checked 2 DOIs (2 distinct) in 1 file: 0 registered, 0 not registered, 2 could not be checked.')
      expect(lines[3]).toMatch(/^Why some could not be checked: If you run this resolver: check its network and UPSTREAM_URL/)
      expect(run.stdout.split('If you run this resolver')).toHaveLength(2)
      expect(run.code).toBe(0)
    })

    it('prints what docs/checking-dois.md shows for an outage', async () => {
      const doc = readFileSync(join(REPO, 'docs/checking-dois.md'), 'utf8')
      const shown = /```text\n(docs\/index\.md:3: [^\n]*could not be checked[\s\S]*?)```/.exec(doc)?.[1]
      expect(shown).toBeDefined()
      const url = await downRegistry()
      await writeFile(join(dir, 'docs', 'index.md'), '# Refs\n\nSee doi:10.5555/plain.\n')
      expect((await doiProxy(['check', '--server', url, 'docs/index.md'], dir)).stdout).toBe(shown)
    })

    it('JUnit counts them as skipped when the exit status is 0, and as errors with --fail-on unknown (exit 1)', async () => {
      const url = await downRegistry()
      const lenient = await doiProxy(['check', '--server', url, '--format', 'junit', 'two.txt'], dir)
      expect(XMLValidator.validate(lenient.stdout)).toBe(true)
      expect(lenient.stdout).toContain('<testsuites name="doi-proxy check" tests="2" failures="0" errors="0" skipped="2">')
      expect(lenient.stdout).toContain('<skipped message="10.5555/plain could not be checked: We could not reach the DOI registry')
      expect(lenient.code).toBe(0)
      const strict = await doiProxy(['check', '--server', url, '--format', 'junit', '--fail-on', 'unknown', 'two.txt'], dir)
      expect(strict.stdout).toContain('<testsuites name="doi-proxy check" tests="2" failures="0" errors="2" skipped="0">')
      expect(strict.code).toBe(1)
    })
  })

  it.each(['junit', 'json', 'github'])(
    'a server that cannot be reached still gives a valid %s report naming the failure (exit 2)',
    async (format) => {
      const url = `http://127.0.0.1:${await closedPort()}`
      const run = await doiProxy(['check', '--server', url, '--format', format, 'docs'], dir)
      const message = `cannot reach doi-proxy at ${url} (ECONNREFUSED); start it, or pass --server URL or --upstream`
      if (format === 'junit') {
        expect(XMLValidator.validate(run.stdout)).toBe(true)
        expect(run.stdout).toContain('<testsuites name="doi-proxy check" tests="1" failures="0" errors="1" skipped="0">')
        expect(run.stdout).toContain(`<error message="${message}" type="not-checked"/>`)
      }
      if (format === 'json') expect(JSON.parse(run.stdout)).toEqual({ error: message, summary: null, results: [] })
      if (format === 'github') expect(run.stdout).toBe(`::error title=doi-proxy check::${message}\n`)
      expect(run.stderr).toContain(message)
      expect(run.code).toBe(2)
    }
  )

  it('a server that cannot be reached is exit 2, saying so', async () => {
    const run = await doiProxy(['check', '--server', 'http://127.0.0.1:9', 'docs'], dir)
    expect(run.stderr).toContain('cannot reach doi-proxy at http://127.0.0.1:9')
    expect(run.code).toBe(2)
  })
})
