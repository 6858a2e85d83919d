import { describe, expect, it } from 'vitest'
import { createPageScanner, MAX_JSON_LD, namesDoi } from '../../../src/handle/landing/page-evidence.js'

const DOI = '10.1234/Abc.5'
const TITLE = 'Soil microbes of Iowa: a survey'

function scan(html: string | string[], titles: string[] = [TITLE]) {
  const scanner = createPageScanner(DOI, titles)
  for (const chunk of Array.isArray(html) ? html : [html]) scanner.write(chunk)
  return scanner.end()
}

describe('where a landing page names the DOI', () => {
  it.each([
    ['<meta name="citation_doi" content="10.1234/abc.5">', 'citation_doi'], // Highwire / Google Scholar tags
    ['<meta name="citation_doi" content="doi:10.1234/ABC.5">', 'citation_doi'], // DOIs are case-insensitive
    ['<meta name="DC.Identifier" content="https://doi.org/10.1234/abc.5">', 'dc.identifier'], // Dublin Core
    ['<meta name="dc.identifier" content="info:doi/10.1234/abc.5">', 'dc.identifier'],
    ['<meta name="prism.doi" content="10.1234/abc.5">', 'prism.doi'], // PRISM
    ['<meta property="citation_doi" content="10.1234/abc.5">', 'citation_doi'],
    ['<script type="application/ld+json">{"@id":"https://doi.org/10.1234/abc.5"}</script>', 'JSON-LD'], // schema.org
    [
      '<script type="application/ld+json">{"identifier":{"@type":"PropertyValue","propertyID":"DOI","value":"10.1234/abc.5"}}</script>',
      'JSON-LD'
    ],
    ['<script type="application/ld+json">[{"@graph":[{"sameAs":["https://doi.org/10.1234/abc.5"]}]}]</script>', 'JSON-LD'],
    ['<p>DOI: 10.1234/abc.5</p>', "the page's text"],
    ['<p>https://doi.org/10.1234/abc.5.</p>', "the page's text"], // a sentence's full stop after it
    ['<p>doi.org/10.1234%2Fabc.5</p>', "the page's text"], // percent-encoded
    ['<p>10.1234/&#x61;bc.5</p>', "the page's text"], // entities decoded
    ['<a href="https://doi.org/10.1234/abc.5">Cite this</a>', 'a link on the page']
  ])('%s → %s', (html, at) => {
    expect(scan(html, []).doiAt).toBe(at)
  })

  it.each([
    ['<meta name="citation_doi" content="10.1234/abc.55">'], // another DOI that starts like it
    ['<p>10.1234/abc.5x</p>'],
    ['<p>210.1234/abc.5</p>'],
    ['<script>var doi = "10.1234/abc.5"</script>'], // script text is not what a reader sees
    ['<style>/* 10.1234/abc.5 */</style>'],
    ['<meta name="description" content="10.1234/abc.5">'], // not a DOI meta, and not text
    ['<script type="application/ld+json">{"description":"10.1234/abc.5"}</script>'], // not an identifier key
    ['<script type="application/ld+json">{"@id": "10.1234/abc.5"</script>'] // broken JSON
  ])('%s names no DOI', (html) => {
    expect(scan(html, []).doiAt).toBeUndefined()
  })

  it('finds a DOI split between two chunks of the page', () => {
    expect(scan(['<html><body><p>Cite as doi:10.12', '34/abc', '.5 please</p>'], []).doiAt).toBe("the page's text")
  })

  it('reads no JSON-LD script larger than its bound', () => {
    const big = `{"@id":"https://doi.org/10.1234/abc.5","pad":"${'x'.repeat(MAX_JSON_LD)}"}`
    expect(scan(`<script type="application/ld+json">${big}</script>`, []).doiAt).toBeUndefined()
  })

  it('namesDoi compares without case and at DOI bounds', () => {
    expect(namesDoi('See (10.1234/ABC.5).', DOI)).toBe(true)
    expect(namesDoi('10.1234/abc.5/suppl', DOI)).toBe(false)
  })
})

describe("a landing page's titles", () => {
  it.each([
    ['<meta name="citation_title" content="Soil Microbes of Iowa: A Survey">', 'citation_title'],
    ['<meta name="DC.title" content="Soil microbes of Iowa">', 'dc.title'], // the subtitle dropped
    ['<meta property="og:title" content="Soil microbes of Iówa: a survey">', 'og:title'], // marks folded
    ['<title>Soil microbes of Iowa: a survey | Journal of Soils</title>', '<title>'] // the site's name added
  ])('%s matches the registered title at %s', (html, at) => {
    expect(scan(html).titleMatch?.at).toBe(at)
  })

  it.each([
    ['<title>Online casino bonus 2024</title>'],
    ['<title>Home</title>'], // too short to mean anything
    ['<title>Soil microbes of Iowan wetlands</title>'] // another work that starts alike
  ])('%s does not match', (html) => {
    expect(scan(html).titleMatch).toBeUndefined()
  })

  it('keeps the titles it saw, trimmed, a bounded few', () => {
    const html = Array.from({ length: 20 }, (_, i) => `<meta name="og:title" content="  Title ${i}  ">`).join('')
    const { titles } = scan(html)
    expect(titles).toHaveLength(8)
    expect(titles[0]).toEqual({ at: 'og:title', title: 'Title 0' })
  })
})
