import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import type { Config } from '../src/config/schema.js'
import { FakeAgency } from './support/fake-agency.js'
import { FakeUpstream } from './support/fake-upstream.js'
import { admin, str } from './support/records.js'
import type { HandleValue } from '../src/handle/types.js'

// Every example request in the README answers what the README says it does: each `curl` line and each
// request of the quick start's table is run here, against the sample store with no network, or (for the
// examples that need the network) against a fake DOI registry and agency holding the DOIs they name as
// doi.org does (a Crossref and a DataCite prefix whose namespace handles send negotiation to the agencies).

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

interface Expected {
  /** offline: the sample store, OFFLINE=true; online: the samples over a fake registry; fetch: the same with METADATA_MODE=fetch. */
  on: 'offline' | 'online' | 'fetch'
  status: number
  location?: RegExp
  contentType?: RegExp
  body?: RegExp
  /** X-Cache of the first answer, then of the same request again. */
  xCache?: [string, string]
}

const CROSSREF_LOC = (base: string): string =>
  `<locations><location weight="0" http_role="conneg" href_template="${base}/{hdl}" /></locations>`

/** The README's lines, by the line as written (command and comment): what each must answer. */
const CURL: Record<string, Expected> = {
  '$ curl -i http://127.0.0.1:8000/10.5555/sample': {
    on: 'offline',
    status: 302,
    location: /^https:\/\/www\.doi\.org\/$/,
    contentType: /^text\/html; charset=utf-8$/,
    body: /<a href="https:\/\/www\.doi\.org\/">/
  },
  'curl -i http://127.0.0.1:8000/10.1000/182': {
    on: 'online',
    status: 302,
    location: /^https:\/\/www\.doi\.org\/the-identifier\/resources\/handbook\/$/
  },
  "curl -LH 'Accept: application/x-bibtex' http://127.0.0.1:8000/10.5281/zenodo.3678325                 # BibTeX, from DataCite's service":
    { on: 'online', status: 302, location: /^https:\/\/data\.crosscite\.org\/10\.5281%2Fzenodo\.3678325$/ },
  "curl -LH 'Accept: application/vnd.citationstyles.csl+json' http://127.0.0.1:8000/10.1126/science.169.3946.635  # CSL-JSON, from Crossref's":
    { on: 'online', status: 302, location: /^https:\/\/data\.crossref\.org\/10\.1126%2Fscience\.169\.3946\.635$/ },
  "curl -LH 'Accept: text/x-bibliography; style=apa' http://127.0.0.1:8000/10.1126/science.169.3946.635   # an APA citation": {
    on: 'online',
    status: 302,
    location: /^https:\/\/data\.crossref\.org\/10\.1126%2Fscience\.169\.3946\.635$/
  },
  "curl -s 'http://127.0.0.1:8000/10.1126/science.169.3946.635?action=showurls'                          # the candidates": {
    on: 'online',
    status: 200,
    contentType: /^text\/xml/,
    body: /data\.crossref\.org/
  },
  "curl -H 'Accept: application/vnd.citationstyles.csl+json' http://127.0.0.1:8000/10.5555/sample  # CSL-JSON": {
    on: 'offline',
    status: 200,
    contentType: /^application\/vnd\.citationstyles\.csl\+json/,
    body: /"DOI": "10\.5555\/sample"/
  },
  "curl -H 'Accept: text/x-bibliography; style=apa' http://127.0.0.1:8000/10.5555/sample          # an APA citation": {
    on: 'offline',
    status: 200,
    contentType: /^text\/x-bibliography/,
    body: /^doi-proxy\. \(2024\)\. A sample record of doi-proxy\. doi-proxy\. https:\/\/doi\.org\/10\.5555\/sample\n$/
  },
  "curl -i -H 'Accept: text/x-bibliography; style=mla' http://127.0.0.1:8000/10.5555/sample       # 406: only APA is held": {
    on: 'offline',
    status: 406,
    body: /Held: .*text\/x-bibliography;style=apa/
  },
  "curl -i  -H 'Accept: application/x-bibtex' http://127.0.0.1:8000/10.1126/science.169.3946.635  # redirect: 302 to data.crossref.org": {
    on: 'online',
    status: 302,
    location: /^https:\/\/data\.crossref\.org\//
  },
  "curl -i  -H 'Accept: application/x-bibtex' http://127.0.0.1:8000/10.1126/science.169.3946.635  # fetch: 200, the BibTeX, X-Cache: MISS then HIT":
    { on: 'fetch', status: 200, contentType: /^application\/x-bibtex/, body: /^@article/, xCache: ['MISS', 'HIT'] }
}

/** The quick start's table: `request` (and its Accept) → what it answers. */
const TABLE: Record<string, Expected> = {
  '/10.5555/sample?noredirect': { on: 'offline', status: 200, body: /Index[\s\S]*Type[\s\S]*Timestamp[\s\S]*Data/ },
  '/10.5555/sample-alias': { on: 'offline', status: 301, location: /\/10\.5555\/sample$/ },
  '/10.5555/does-not-exist': { on: 'online', status: 404, body: /DOI Not Found/ },
  '/api/handles/10.5555/sample?pretty': { on: 'offline', status: 200, body: /"responseCode": 1/ },
  '/doiRA/10.5555/sample': { on: 'offline', status: 200, body: /^\[\s*\{\s*"DOI": ?"10\.5555\/sample",\s*"RA": ?"Crossref"\s*\}\s*\]$/ },
  '/10.5072/sample-dataset|application/x-bibtex': { on: 'offline', status: 200, body: /^@misc\{/ },
  '/openurl?rft_id=info:doi/10.5555/sample': { on: 'offline', status: 302, location: /^https:\/\/www\.doi\.org\/$/ }
}

/** Every curl command in the README: in code blocks, and in inline code. */
function curlLines(): string[] {
  const lines: string[] = []
  let inBlock = false
  for (const line of README.split('\n')) {
    if (line.startsWith('```')) {
      inBlock = !inBlock
      continue
    }
    if (inBlock && /^(\$ )?curl /.test(line)) lines.push(line.trimEnd())
    else if (!inBlock) for (const m of line.matchAll(/`(curl [^`]*http:\/\/127\.0\.0\.1:8000[^`]*)`/g)) lines.push(m[1]!)
  }
  return lines
}

/** The rows of the quick start's table whose request is a DOI's: `/…` and an optional `Accept`. */
function tableRows(): string[] {
  const rows: string[] = []
  for (const m of README.matchAll(/^\| `(\/[^`]*10\.\d+[^`]*)`(?: with `Accept: ([^`]+)`)? \|/gm)) {
    rows.push(m[2] === undefined ? m[1]! : `${m[1]}|${m[2]}`)
  }
  return rows
}

/** A curl line as a request: the path after the base URL and the -H headers. */
function requestOf(line: string): { url: string; headers: Record<string, string> } {
  const command = line.replace(/^\$ /, '').replace(/\s+#.*$/, '')
  const headers: Record<string, string> = { 'user-agent': 'curl/8.5.0', accept: '*/*' }
  for (const m of command.matchAll(/-\w*H '([^:']+): ([^']*)'/g)) headers[m[1]!.toLowerCase()] = m[2]!
  const url = /'?http:\/\/127\.0\.0\.1:8000(\/[^' ]*)'?/.exec(command)?.[1]
  if (url === undefined) throw new Error(`no URL of the quick-start server in: ${line}`)
  return { url, headers }
}

let agency: FakeAgency
let upstream: FakeUpstream
const apps = new Map<Expected['on'], FastifyInstance>()

beforeAll(async () => {
  agency = await FakeAgency.start({ '10.1126/science.169.3946.635': { 'application/x-bibtex': '@article{Frank_1970, title={Inquiry}}\n' } })
  const records: Record<string, HandleValue[]> = {
    '10.1000': [admin(), str(1, 'HS_SERV', '10.SERV/DOI')],
    '10.1000/182': [str(1, 'URL', 'https://www.doi.org/the-identifier/resources/handbook/')],
    10.1126: [
      admin(),
      str(1, 'HS_SERV', '10.SERV/CROSSREF'),
      str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>')
    ],
    '10.SERV/CROSSREF': [admin(), str(1, '10320/loc', CROSSREF_LOC('https://data.crossref.org'))],
    '10.1126/science.169.3946.635': [str(1, 'URL', 'https://www.science.org/doi/10.1126/science.169.3946.635')],
    10.5281: [
      admin(),
      str(1, 'HS_SERV', '10.SERV/DATACITE'),
      str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/DATACITE</locs></HS_NAMESPACE>')
    ],
    '10.SERV/DATACITE': [admin(), str(1, '10320/loc', CROSSREF_LOC('https://data.crosscite.org'))],
    '10.5281/zenodo.3678325': [str(1, 'URL', 'https://zenodo.org/records/3678325')]
  }
  upstream = await FakeUpstream.start(records)
  // No load shedding: building three apps at once lags the event loop of a busy test machine.
  const base: Config = { ...buildConfig(undefined, {}), upstreamUrl: upstream.url, cacheFile: undefined, maxEventLoopDelayMs: 0 }
  const configs: Record<Expected['on'], Config> = {
    offline: { ...base, offline: true },
    online: base,
    // The same registry, but Crossref's namespace handle points at the fake agency, which fetch mode may ask.
    fetch: { ...base, metadataMode: 'fetch', metadataHosts: [agency.host] }
  }
  for (const [on, config] of Object.entries(configs) as Array<[Expected['on'], Config]>) {
    const app = await buildApp(config)
    await app.ready()
    apps.set(on, app)
  }
})

afterAll(async () => {
  for (const app of apps.values()) await app.close()
  await upstream?.close()
  await agency?.close()
})

async function check(expected: Expected, url: string, headers: Record<string, string>): Promise<void> {
  if (expected.on === 'fetch') upstream.set('10.SERV/CROSSREF', [admin(), str(1, '10320/loc', CROSSREF_LOC(agency.origin))])
  else upstream.set('10.SERV/CROSSREF', [admin(), str(1, '10320/loc', CROSSREF_LOC('https://data.crossref.org'))])
  const app = apps.get(expected.on)!
  const res = await app.inject({ url, headers })
  expect(res.statusCode, res.body.replace(/<style[\s\S]*<\/style>/, '').slice(0, 3000)).toBe(expected.status)
  if (expected.location !== undefined) expect(res.headers.location).toMatch(expected.location)
  if (expected.contentType !== undefined) expect(res.headers['content-type']).toMatch(expected.contentType)
  if (expected.body !== undefined) expect(res.body).toMatch(expected.body)
  if (expected.xCache !== undefined) {
    expect(res.headers['x-cache']).toBe(expected.xCache[0])
    expect((await app.inject({ url, headers })).headers['x-cache']).toBe(expected.xCache[1])
  }
}

describe("the README's examples answer what it says", () => {
  it("every curl line and every DOI request of the quick start's table has its expected answer here", () => {
    expect(curlLines().filter((l) => CURL[l] === undefined)).toEqual([])
    expect(tableRows().filter((r) => TABLE[r] === undefined)).toEqual([])
    expect(tableRows().length).toBeGreaterThan(5)
  })

  it.each(curlLines().filter((l) => CURL[l] !== undefined))('%s', async (line) => {
    const { url, headers } = requestOf(line)
    await check(CURL[line]!, url, headers)
  })

  it.each(tableRows().filter((r) => TABLE[r] !== undefined))('%s', async (row) => {
    const [url = '', accept] = row.split('|')
    await check(TABLE[row]!, url, accept === undefined ? {} : { accept })
  })
})
