import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'

describe('pages (issue 2 item 7)', () => {
  it('the home page has a GET form that resolves a DOI', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.body).toMatch(/<form[^>]+method="get"/i)
    expect(res.body).toContain('name="hdl"')
  })

  it("the home form's answer redirects to the shareable /{doi} URL with the chosen options", async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/?hdl=10.5555%2Fplain&noredirect=on', headers: { host: 'resolver.example' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://resolver.example/10.5555/plain?noredirect=on')
  })

  it('the home form reads browser form encoding: + is a space, %2B a plus (SICI DOIs)', async () => {
    const { app } = await setup()
    const space = await app.inject({ url: '/?hdl=10.5555%2Fwith+space', headers: { host: 'resolver.example' } })
    expect(space.headers.location).toBe('http://resolver.example/10.5555/with%20space')
    const plus = await app.inject({
      url: '/?hdl=10.1002%2F(SICI)1097-0274(199909)36%3A1%2B%3C1%3A%3AAID-AJIM2%3E3.0.CO%3B2-0',
      headers: { host: 'resolver.example' }
    })
    expect(plus.headers.location).toBe('http://resolver.example/10.1002/(SICI)1097-0274(199909)36:1%2B%3C1::AID-AJIM2%3E3.0.CO;2-0')
  })

  it.each([
    ['https://doi.org/10.5555/plain', 'a pasted doi.org URL'],
    ['http://dx.doi.org/10.5555/plain', 'a pasted dx.doi.org URL'],
    ['doi:10.5555/plain', 'a doi: name'],
    [' 10.5555/plain ', 'spaces around it']
  ])("the home form sends %s (%s) to the DOI's own URL", async (typed) => {
    const { app } = await setup()
    const res = await app.inject({ url: `/?${new URLSearchParams({ hdl: typed }).toString()}`, headers: { host: 'resolver.example' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://resolver.example/10.5555/plain')
  })

  it('the home form keeps a # inside the DOI encoded', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/?hdl=10.5555%2Fhash%23frag', headers: { host: 'resolver.example' } })
    expect(res.headers.location).toBe('http://resolver.example/10.5555/hash%23frag')
  })

  it("the values page lists Index, Type, Timestamp and Data with the reference's HS_ADMIN text", async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/plain?noredirect' })
    expect(res.statusCode).toBe(200)
    for (const heading of ['Index', 'Type', 'Timestamp', 'Data']) expect(res.body).toContain(heading)
    expect(res.body).toContain(
      'handle=0.NA/10.5555; index=300; [create hdl,delete hdl,create derived prefix,delete derived prefix,read val,modify val,del val,add val,modify admin,del admin,add admin,list]'
    )
    expect(res.body).toContain('2026-11-22 10:39:19Z')
  })

  it("a prefix alone shows the prefix record's values", async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('10.SERV/CROSSREF</td></tr>')
  })

  it('the not-found page is a 404 naming the DOI', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/nonexistent' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('DOI Not Found')
    expect(res.body).toContain('10.5555/nonexistent')
  })

  it('a DOI with a trailing slash that does not exist warns and links to the DOI without it', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/plain/', headers: { host: 'resolver.example' } })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('href="http://resolver.example/10.5555/plain"')
  })

  it('a prefix that does not exist gets the prefix-only hint', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.7777' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toMatch(/prefix/i)
  })

  it('a DOI echoed into a page is escaped', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/10.5555/%3Cscript%3Ealert(1)%3C%2Fscript%3E' })
    expect(res.statusCode).toBe(404)
    expect(res.body).not.toContain('<script>alert(1)')
    expect(res.body).toContain('&lt;script&gt;')
  })

  it('error pages exist for 400 and 414', async () => {
    const { app } = await setup()
    const bad = await app.inject({ url: '/10.5555/%FF' })
    expect(bad.statusCode).toBe(400)
    expect(bad.body).toContain('<title>')
    const long = await app.inject({ url: `/10.5555/${'a'.repeat(4100)}` })
    expect(long.statusCode).toBe(414)
    expect(long.body).toMatch(/too long|longer/i)
  })
})
