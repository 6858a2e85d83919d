import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { FakeAgency } from './support/fake-agency.js'
import { FakeUpstream } from './support/fake-upstream.js'
import { admin, str } from './support/records.js'
import { exitOf, startServer } from './support/server-process.js'

// docs/testing-with-doi-proxy.md, run as written: its pytest example against a real doi-proxy process that
// records (RECORD_TO) from a fake registry and agency, stopped with SIGTERM, then against a second one
// that replays the recorded directory offline. (Its Node and R examples are not run here: no R on the
// test machine, and the Node one is the same requests as the Python one.)

const DOC = readFileSync(new URL('../docs/testing-with-doi-proxy.md', import.meta.url), 'utf8')
const DOI = '10.1126/science.169.3946.635'

function block (language: string): string {
  const m = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(DOC)
  if (m === null) throw new Error(`no ${language} block in the doc`)
  return m[1]!
}

function hasPytest (): boolean {
  try {
    execFileSync('python3', ['-c', 'import pytest, requests'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

async function pytest (file: string, resolver: string): Promise<{ code: number | null, output: string }> {
  const child = spawn('python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', file], { env: { ...process.env, DOI_RESOLVER: resolver } })
  let output = ''
  child.stdout.on('data', (d: Buffer) => { output += d.toString() })
  child.stderr.on('data', (d: Buffer) => { output += d.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, output }
}

describe('docs/testing-with-doi-proxy.md', () => {
  it.skipIf(!hasPytest())('its pytest example passes online while recording, and offline from the recording, with SIGTERM flushing the file', async () => {
    const agency = await FakeAgency.start({
      [DOI]: {
        'application/vnd.citationstyles.csl+json': `{"type":"article-journal","DOI":"${DOI}","title":"Structure of ordinary water"}`,
        'text/x-bibliography;style=apa': `Frank, H. S. (1970). The Structure of Ordinary Water. Science, 169(3946), 635–641. https://doi.org/${DOI}\n`
      }
    })
    const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}" /></locations>`
    const upstream = await FakeUpstream.start({
      10.1126: [admin(), str(1, 'HS_SERV', '10.SERV/CROSSREF'), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>')],
      '10.SERV/CROSSREF': [admin(), str(1, '10320/loc', conneg)],
      [DOI]: [str(1, 'URL', 'https://www.science.org/doi/10.1126/science.169.3946.635'), admin()]
    })
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-testing-doc-'))
    onTestFinished(async () => {
      rmSync(dir, { recursive: true, force: true })
      await upstream.close()
      await agency.close()
    })
    const tests = join(dir, 'test_citation.py')
    writeFileSync(tests, block('python'))
    const records = join(dir, 'doi-records')

    const recording = await startServer({ RECORD_TO: records, METADATA_MODE: 'fetch', METADATA_HOSTS: agency.host, UPSTREAM_URL: upstream.url, DRAIN_DELAY_MS: '0' })
    const online = await pytest(tests, `http://127.0.0.1:${recording.port}`)
    expect(online.output).toMatch(/2 passed/)
    // Stopped at once: what was fetched is written at shutdown, not lost with the process.
    recording.child.kill('SIGTERM')
    expect(await exitOf(recording.child)).toBe(0)
    expect(readFileSync(join(records, 'recorded.ndjson'), 'utf8')).toContain('text/x-bibliography;style=apa')

    const fetchedOnline = upstream.seen.length + agency.seen.length
    const replaying = await startServer({ OFFLINE: 'true', LOCAL_STORE_DIR: records })
    const offline = await pytest(tests, `http://127.0.0.1:${replaying.port}`)
    expect(offline.output).toMatch(/2 passed/)
    expect(offline.code).toBe(0)
    expect(upstream.seen.length + agency.seen.length).toBe(fetchedOnline)
  }, 180_000)
})
