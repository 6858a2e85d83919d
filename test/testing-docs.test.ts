import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { FakeAgency } from './support/fake-agency.js'
import { FakeUpstream } from './support/fake-upstream.js'
import { admin, str } from './support/records.js'
import { exitOf, startServer } from './support/server-process.js'

// docs/testing-with-doi-proxy.md, run as written: its pytest and Node (vitest) examples against a real
// doi-proxy process that records (RECORD_TO) from a fake registry and agency, stopped with SIGTERM, then
// against a second one that replays the recorded directory offline. (Its R example is not run here: no R
// on the test machine.)

const DOC = readFileSync(new URL('../docs/testing-with-doi-proxy.md', import.meta.url), 'utf8')
const DOI = '10.1126/science.169.3946.635'

function block(language: string): string {
  const m = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(DOC)
  if (m === null) throw new Error(`no ${language} block in the doc`)
  return m[1]!
}

function hasPytest(): boolean {
  try {
    execFileSync('python3', ['-c', 'import pytest, requests'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** A command run with DOI_RESOLVER set: its exit code and everything it printed. */
async function run(command: string, args: string[], resolver: string, cwd?: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd, env: { ...process.env, DOI_RESOLVER: resolver } })
  let output = ''
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString()
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, output }
}

async function pytest(file: string, resolver: string): Promise<{ code: number | null; output: string }> {
  return await run('python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', file], resolver)
}

/** A fake agency and registry holding the doc's DOI, and a directory for the example; all gone after the test. */
async function registry(): Promise<{ agency: FakeAgency; upstream: FakeUpstream; dir: string }> {
  const agency = await FakeAgency.start({
    [DOI]: {
      'application/vnd.citationstyles.csl+json': `{"type":"article-journal","DOI":"${DOI}","title":"Structure of ordinary water"}`,
      'text/x-bibliography;style=apa': `Frank, H. S. (1970). The Structure of Ordinary Water. Science, 169(3946), 635–641. https://doi.org/${DOI}\n`
    }
  })
  const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}" /></locations>`
  const upstream = await FakeUpstream.start({
    10.1126: [
      admin(),
      str(1, 'HS_SERV', '10.SERV/CROSSREF'),
      str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>')
    ],
    '10.SERV/CROSSREF': [admin(), str(1, '10320/loc', conneg)],
    [DOI]: [str(1, 'URL', 'https://www.science.org/doi/10.1126/science.169.3946.635'), admin()]
  })
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-testing-doc-'))
  onTestFinished(async () => {
    rmSync(dir, { recursive: true, force: true })
    await upstream.close()
    await agency.close()
  })
  return { agency, upstream, dir }
}

/** The doc's Node example, run by this repository's vitest in `dir` (node_modules linked in). */
async function nodeExample(dir: string, resolver: string): Promise<{ code: number | null; output: string }> {
  return await run(
    process.execPath,
    [fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url)), 'run', '--root', dir],
    resolver,
    dir
  )
}

/**
 * The example run against a doi-proxy recording from the registry (then stopped with SIGTERM), and again
 * against one replaying the recording offline: it passes both times, and the second asks nothing of the
 * registry or the agency. The recording's directory.
 */
async function recordThenReplay(
  at: { agency: FakeAgency; upstream: FakeUpstream; dir: string },
  example: (resolver: string) => Promise<{ code: number | null; output: string }>,
  passed: RegExp
): Promise<string> {
  const { agency, upstream } = at
  const records = join(at.dir, 'doi-records')
  const recording = await startServer({
    RECORD_TO: records,
    METADATA_MODE: 'fetch',
    METADATA_HOSTS: agency.host,
    UPSTREAM_URL: upstream.url,
    DRAIN_DELAY_MS: '0'
  })
  const online = await example(`http://127.0.0.1:${recording.port}`)
  expect(online.output).toMatch(passed)
  expect(online.code).toBe(0)
  recording.child.kill('SIGTERM')
  expect(await exitOf(recording.child)).toBe(0)

  const fetchedOnline = upstream.seen.length + agency.seen.length
  const replaying = await startServer({ OFFLINE: 'true', LOCAL_STORE_DIR: records })
  const offline = await example(`http://127.0.0.1:${replaying.port}`)
  expect(offline.output).toMatch(passed)
  expect(offline.code).toBe(0)
  expect(upstream.seen.length + agency.seen.length).toBe(fetchedOnline)
  return records
}

describe('docs/testing-with-doi-proxy.md', () => {
  it.skipIf(!hasPytest())(
    'its pytest example passes online while recording, and offline from the recording, with SIGTERM flushing the file',
    async () => {
      const { agency, upstream, dir } = await registry()
      const tests = join(dir, 'test_citation.py')
      writeFileSync(tests, block('python'))
      const records = await recordThenReplay({ agency, upstream, dir }, async (resolver) => await pytest(tests, resolver), /2 passed/)
      // Stopped at once: what was fetched is written at shutdown, not lost with the process.
      expect(readFileSync(join(records, 'recorded.ndjson'), 'utf8')).toContain('text/x-bibliography;style=apa')
    },
    180_000
  )

  it('its Node (vitest) example passes online while recording, and offline from the recording', async () => {
    const { agency, upstream, dir } = await registry()
    writeFileSync(join(dir, 'citation.test.js'), block('js'))
    symlinkSync(fileURLToPath(new URL('../node_modules', import.meta.url)), join(dir, 'node_modules'))
    await recordThenReplay({ agency, upstream, dir }, async (resolver) => await nodeExample(dir, resolver), /1 passed/)
  }, 180_000)
})
