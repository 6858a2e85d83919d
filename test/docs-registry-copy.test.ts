import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { crossrefInner, crossrefWork, dataciteRecord, gz, lines, tarOf, write } from './support/copy-files.js'
import { crossrefWork as feedWork, FakeAgencyFeeds } from './support/fake-agency-feeds.js'
import { startServer } from './support/server-process.js'

// docs/registry-copy.md, run as written: every command of its `sh` blocks, in the order of the page, with
// /srv/doi-proxy standing for a directory made here and holding small files in the agencies' formats
// (Crossref's public data file as a directory of .json.gz, DataCite's as a tar with its state CSV); the
// server started as the page starts it (src/main.ts, on a free port that stands for 8000), and the curl
// lines run with the real curl against it. `--update` asks a fake Crossref (CROSSREF_API_URL set here:
// tests never reach the network). The page's sample outputs are compared with what the commands print.
// Only the download commands (`text` block after "not run") are not run: they need the internet.

const REPO = fileURLToPath(new URL('..', import.meta.url))
const DOC = readFileSync(new URL('../docs/registry-copy.md', import.meta.url), 'utf8')
const SRV = '/srv/doi-proxy'
const JAN_2025 = Date.UTC(2025, 0, 1)

interface Block {
  language: string
  text: string
  /** The comment line just before it, if any. */
  note: string
}

function blocks(): Block[] {
  return [...DOC.matchAll(/(?:<!-- ([^>]*) -->\n)?```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    note: m[1] ?? '',
    language: m[2]!,
    text: m[3]!
  }))
}

/** Every command of the page's `sh` blocks, as written, in order. */
function commands(): string[] {
  return blocks()
    .filter((b) => b.language === 'sh')
    .flatMap((b) => b.text.split('\n'))
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

/** The `text` block that follows `after` in the page. */
function sampleAfter(after: string): string {
  const at = DOC.indexOf(after)
  const m = /```text\n([\s\S]*?)```/.exec(DOC.slice(at))
  if (at < 0 || m === null) throw new Error(`no sample output after ${after}`)
  return m[1]!
}

/** A command line's words, single quotes as the shell reads them. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!)
}

/** `VAR=value … command args`: the environment and the rest. */
function split(line: string): { env: Record<string, string>; argv: string[] } {
  const all = words(line)
  const env: Record<string, string> = {}
  while (all.length > 0 && /^[A-Z_]+=/.test(all[0]!)) {
    const [k, ...v] = all.shift()!.split('=')
    env[k!] = v.join('=')
  }
  return { env, argv: all }
}

let root: string
let feeds: FakeAgencyFeeds
const here = (s: string): string => s.replaceAll(SRV, root)

async function run(argv: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, ...args] = argv
  const [file, fileArgs] = cmd === 'doi-proxy' ? [process.execPath, ['--import', 'tsx', 'src/command/cli.ts', ...args]] : [cmd!, args]
  const child = spawn(file, fileArgs, { cwd: REPO, env: { ...process.env, REGISTRY_COPY_MIN_FREE_BYTES: '0', ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

/** The files the page downloads, small: Crossref's as the torrent gives it, DataCite's tar with its CSV. */
async function downloads(): Promise<void> {
  const work = (doi: string, indexedMs: number, url?: string): Record<string, unknown> =>
    crossrefWork(doi, url === undefined ? { indexedMs } : { indexedMs, url })
  const dir = join(root, 'downloads', 'crossref-2024')
  write(
    join(dir, '0000.json.gz'),
    gz(
      crossrefInner([
        ...[0, 1, 2, 3].map((i) => work(`10.5555/w${i}`, JAN_2025)),
        work('10.1103/PhysRev.47.777', Date.UTC(2024, 5, 1)),
        work('10.1103/PhysRev.48.73', Date.UTC(2024, 5, 1)),
        work('10.1103/PhysRev.1.1', Date.UTC(2019, 4, 1))
      ])
    )
  )
  write(
    join(dir, '0001.json.gz'),
    gz(
      crossrefInner([
        work('10.1088/0004-637X/1', Date.UTC(2023, 2, 1)),
        work('10.1088/0004-637X/2', Date.UTC(2023, 2, 1)),
        work('10.5555/evil', JAN_2025, 'javascript:alert(1)'),
        work('10.5555/w4', JAN_2025),
        work('10.1088/0004-637X/3', Date.UTC(2023, 2, 1))
      ])
    )
  )
  await tarOf(join(root, 'downloads', 'datacite-2024.tar'), [
    ['dois/updated_2024-11/part_0000.jsonl.gz', gz(lines([dataciteRecord('10.5281/zenodo.1', { updated: '2024-11-02T00:00:00Z' })]))],
    ['dois/updated_2024-12/part_0000.jsonl.gz', gz(lines([dataciteRecord('10.5281/zenodo.2', { updated: '2024-12-03T00:00:00Z' })]))],
    [
      'dois/DataCite_Public_Data_File_2024.csv',
      'doi,state,client_id,updated\n10.5281/zenodo.1,findable,cern.zenodo,2024-11-02T00:00:00Z\n10.5281/zenodo.2,findable,cern.zenodo,2024-12-03T00:00:00Z\n10.80000/reg-1,registered,demo.client,2024-10-01T00:00:00Z\n'
    ],
    ['README.txt', 'DataCite Public Data File 2024\n']
  ])
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'doi-proxy-registry-copy-doc-'))
  await downloads()
  feeds = await FakeAgencyFeeds.start({
    works: [
      feedWork('10.5555/w0', 'https://publisher.example/moved/w0', '2025-03-01T00:00:00Z'),
      feedWork('10.5555/w9', 'https://publisher.example/w9', '2025-03-02T00:00:00Z')
    ]
  })
})

afterAll(async () => {
  await feeds?.close()
  if (root !== undefined) rmSync(root, { recursive: true, force: true })
})

describe('docs/registry-copy.md', () => {
  it('runs every command of its sh blocks, the downloads excepted, and each does what the page says', async () => {
    const seen: string[] = []
    let port = 0
    for (const line of commands()) {
      seen.push(line)
      const { env, argv } = split(here(line.replaceAll('127.0.0.1:8000', `127.0.0.1:${port}`)))
      if (argv[0] === 'npm' && argv[1] === 'start') {
        // As `npm start` does, from the source: the copy, offline, on a free port.
        const started = await startServer(env)
        port = started.port
        continue
      }
      if (argv[0] === 'curl') {
        expect(port, `${line}: no server started before it`).toBeGreaterThan(0)
        const out = await run(argv, {})
        expect(out.code, line).toBe(0)
        if (line.includes('/10.5555/w0') && line.includes(' -i ')) {
          const got = out.stdout.split('\r\n').map((l) => l.toLowerCase())
          for (const want of sampleAfter('answers the registered URL').trim().split('\n')) expect(got, want).toContain(want.toLowerCase())
        } else if (line.includes('not-in-the-copy')) {
          expect(out.stdout).toMatch(/^HTTP\/1\.1 404/)
          const page = out.stdout.replaceAll('&#39;', "'").replaceAll('&#x27;', "'")
          expect(page).toContain('holds every DOI of 10.5555 registered by 2025-01-01, and not this one; it may have been registered since')
        } else if (line.includes('csl+json')) {
          expect(JSON.parse(out.stdout)).toMatchObject({
            DOI: '10.5555/w0',
            type: 'article-journal',
            'container-title': 'Journal of Tests'
          })
        } else throw new Error(`no expectation for ${line}`)
        continue
      }
      expect(argv[0], line).toBe('doi-proxy')
      if (line.includes('--update')) {
        const out = await run(argv, { ...env, CROSSREF_API_URL: feeds.url })
        expect(out.code, out.stderr).toBe(0)
        expect(out.stderr).toMatch(/crossref updated: the copy now covers it to .* · 1 pages? · 2 records · written 2/)
        // Politely: the contact address as mailto, from the date the copy covers (a day back: the filter is by day).
        const asked = feeds.requestsTo('/works')[0]!
        expect(asked.mailto).toBe('library-systems@university.example')
        expect(asked.query.get('filter')).toBe('from-update-date:2024-12-31')
        continue
      }
      const out = await run(argv, env)
      expect(out.code, out.stderr).toBe(0)
      if (line.includes('crossref-2024/') && !line.includes('--prefix')) {
        expect(here(sampleAfter('**At the end**, the counts:'))).toBe(out.stdout)
      } else if (line.includes('--prefix')) {
        // The two prefixes, changed since 2020: 10.1103's 2 of 3 and 10.1088's 3; the rest filtered.
        expect(out.stdout).toMatch(/^imported 5 · unchanged 0 · filtered 6 · malformed 1 /)
      } else if (line.includes('datacite-2024.tar')) {
        // Its README passed over, not malformed: the tar is DataCite's whole file, its prefixes held whole.
        expect(out.stdout).toMatch(/^imported 3 · unchanged 0 · filtered 0 · malformed 0\n/)
        expect(out.stdout).toContain(
          `passed over 1 entry that holds no records:\n  ${join(root, 'downloads', 'datacite-2024.tar')} › README.txt: text`
        )
        expect(out.stdout).toContain('the copy holds every DataCite DOI of its 2 prefixes as of 2024-12-03')
      } else throw new Error(`no expectation for ${line}`)
    }
    // Nothing skipped: the page's commands are these, in this order.
    expect(seen).toEqual([
      'doi-proxy import --to /srv/doi-proxy/copy /srv/doi-proxy/downloads/crossref-2024/',
      'doi-proxy import --to /srv/doi-proxy/copy /srv/doi-proxy/downloads/datacite-2024.tar',
      'doi-proxy import --to /srv/doi-proxy/copy-physics --prefix 10.1103,10.1088 --since 2020-01-01 /srv/doi-proxy/downloads/crossref-2024/',
      'REGISTRY_COPY=/srv/doi-proxy/copy OFFLINE=true npm start',
      'curl -i http://127.0.0.1:8000/10.5555/w0',
      'curl -i http://127.0.0.1:8000/10.5555/not-in-the-copy',
      "curl -H 'Accept: application/vnd.citationstyles.csl+json' http://127.0.0.1:8000/10.5555/w0",
      'CONTACT_EMAIL=library-systems@university.example doi-proxy import --update crossref --to /srv/doi-proxy/copy'
    ])
  }, 240_000)

  it('shows the disk-full stop and the progress line in the words the import writes (test/resolve/copy/disk-full.test.ts, import-terminal.test.ts make them)', () => {
    expect(sampleAfter('stops with exit status 75 and says where the copy').trim()).toMatch(
      /^stopped: the disk of \S+ is full: \d+ bytes free, and REGISTRY_COPY_MIN_FREE_BYTES keeps \d+; the copy holds everything up to \S+\.tar › \d{4}\.json\.gz item \d+; free some space and run the same command again$/
    )
    expect(sampleAfter('time left and the file it is in:').trim()).toMatch(
      /^importing +\d+% +[\d,]+ records +[\d,]+\/s +[\d.]+ MB\/s +ETA \d+:\d\d +\S+ › \S+$/
    )
  })

  it('keeps its download commands (the only ones not run) pointing at the requester-pays bucket', () => {
    const notRun = blocks().filter((b) => b.note.startsWith('not run'))
    expect(notRun).toHaveLength(1)
    for (const l of notRun[0]!.text.trim().split('\n')) {
      expect(l).toMatch(/^aws s3 (ls|cp) --request-payer requester s3:\/\/api-snapshots-reqpays-crossref\//)
    }
  })
})
