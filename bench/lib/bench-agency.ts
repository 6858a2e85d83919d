/**
 * For the `metadata` scenario: a registration agency's content-negotiation service on 127.0.0.1 (every
 * `/{doi}` answers a small BibTeX record, fresh for a day), and a local record store whose prefix
 * negotiates to it, so our server fetches each DOI's metadata once and then answers from its cache.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface BenchAgency {
  host: string
  /** A store directory (LOCAL_STORE_DIR) holding prefix 10.7000, its namespace handle and `count` DOIs. */
  storeDir: string
  paths: string[]
  requests: () => number
  stop: () => Promise<void>
}

export async function startBenchAgency(count: number): Promise<BenchAgency> {
  let requests = 0
  const server = createServer((req, res) => {
    requests++
    const doi = decodeURIComponent((req.url ?? '/').slice(1))
    res.writeHead(200, { 'content-type': 'application/x-bibtex; charset=utf-8', 'cache-control': 'max-age=86400' })
    res.end(`@misc{${doi},\n  doi = {${doi}},\n  title = {A benchmark record},\n  year = {2026}\n}\n`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`
  const storeDir = mkdtempSync(join(tmpdir(), 'doi-proxy-bench-metadata-'))
  const value = (index: number, type: string, v: string): object => ({ index, type, data: { format: 'string', value: v }, ttl: 86400 })
  const lines = [
    { handle: '10.7000', values: [value(1, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.7000/ns</locs></HS_NAMESPACE>')] },
    {
      handle: '10.7000/ns',
      values: [
        value(1, '10320/loc', `<locations><location weight="0" http_role="conneg" href_template="http://${host}/{hdl}"/></locations>`)
      ]
    },
    ...Array.from({ length: count }, (_, i) => ({
      handle: `10.7000/meta.${i}`,
      values: [value(1, 'URL', `https://publisher.example/meta.${i}`)]
    }))
  ]
  writeFileSync(join(storeDir, 'bench.ndjson'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  return {
    host,
    storeDir,
    paths: Array.from({ length: count }, (_, i) => `/10.7000/meta.${i}`),
    requests: () => requests,
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(storeDir, { recursive: true, force: true })
    }
  }
}
