import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import type { LocalServiceConfig } from '../../src/config/local-services.js'

// /settings and /settings/set (behaviour.md §10): a reader picks a library service or none.

const BASE = 'https://doi.library.example'
const SFX: LocalServiceConfig = {
  id: 'sfx',
  name: 'University Library',
  url: 'https://sfx.example.edu/sfxlcl41?id=doi:{doi}',
  networks: ['192.0.2.0/24'],
  prefixes: []
}
const LAW: LocalServiceConfig = {
  id: 'law',
  name: 'Law <Library> & Archive',
  url: 'https://law.example.edu/openurl?rft_id=info:doi/{doi}',
  networks: [],
  prefixes: []
}
const RECORDS = { 10.5555: [admin()], '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')] }
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

async function withServices(services: LocalServiceConfig[] = [SFX, LAW]) {
  return await setup({ records: RECORDS, overrides: { localServices: services, publicBaseUrl: BASE } })
}

function cookieOf(setCookie: string | string[] | undefined): string {
  return (Array.isArray(setCookie) ? setCookie[0] : setCookie)?.split(';')[0] ?? ''
}

describe('the settings page', () => {
  it('lists automatic, each service and none as labelled radio buttons in a form that works without JavaScript', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/settings' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toContain('<html lang="en">')
    expect(res.body).toContain('<title>Where DOI links take you</title>')
    expect(res.body).toContain(`<form action="${BASE}/settings" method="post">`)
    for (const id of ['auto', 'sfx', 'law', 'none']) {
      expect(res.body).toContain(`id="service-${id}"`)
      expect(res.body).toContain(`<label for="service-${id}">`)
    }
    expect(res.body).not.toContain('<script')
  })

  it('escapes service names', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/settings' })
    expect(res.body).toContain('Law &lt;Library&gt; &amp; Archive')
    expect(res.body).not.toContain('<Library>')
  })

  it('shows the saved choice checked', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/settings', headers: { cookie: 'doi_proxy_ls=sfx' } })
    expect(res.body).toMatch(/id="service-sfx" name="service" value="sfx" checked/)
    expect(res.body).toContain('Now: DOI links take you to <strong>University Library</strong>')
  })

  it('without a cookie, automatic is checked', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/settings' })
    expect(res.body).toMatch(/id="service-auto" name="service" value="" checked/)
  })

  it('says plainly when no library service is set up', async () => {
    const { app } = await withServices([])
    const res = await app.inject({ url: '/settings' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('no library service set up')
    expect(res.body).not.toContain('<form')
  })
})

describe('saving a choice from the page', () => {
  it('a same-origin post saves the cookie for a year and comes back to the page, which shows it saved', async () => {
    const { app } = await withServices()
    const res = await app.inject({
      method: 'POST',
      url: '/settings',
      payload: 'service=sfx',
      headers: { ...FORM, origin: BASE, 'sec-fetch-site': 'same-origin' }
    })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`${BASE}/settings?saved`)
    const setCookie = String(res.headers['set-cookie'])
    expect(setCookie).toMatch(/^doi_proxy_ls=sfx; Max-Age=31536000; Path=\//)
    expect(setCookie).toContain('HttpOnly')
    expect(setCookie).toContain('SameSite=Lax')
    expect(setCookie).toContain('Secure')
    const page = await app.inject({ url: '/settings?saved', headers: { cookie: cookieOf(res.headers['set-cookie']) } })
    expect(page.body).toContain('Your choice is saved.')
    expect(page.body).toContain('University Library</strong>')
  })

  it('after saving, the reader off campus is sent to the chosen library', async () => {
    const { app } = await withServices()
    const saved = await app.inject({ method: 'POST', url: '/settings', payload: 'service=law', headers: { ...FORM, origin: BASE } })
    const res = await app.inject({
      url: '/10.5555/plain',
      remoteAddress: '203.0.113.9',
      headers: { cookie: cookieOf(saved.headers['set-cookie']) }
    })
    expect(res.headers.location).toBe('https://law.example.edu/openurl?rft_id=info:doi/10.5555%2Fplain')
  })

  it('a post without Origin (an older browser) is accepted', async () => {
    const { app } = await withServices()
    const res = await app.inject({ method: 'POST', url: '/settings', payload: 'service=none', headers: FORM })
    expect(res.statusCode).toBe(303)
    expect(cookieOf(res.headers['set-cookie'])).toBe('doi_proxy_ls=none')
  })

  it('automatic forgets the cookie', async () => {
    const { app } = await withServices()
    const res = await app.inject({ method: 'POST', url: '/settings', payload: 'service=', headers: { ...FORM, origin: BASE } })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers['set-cookie'])).toMatch(/^doi_proxy_ls=; Max-Age=0;/)
  })

  it('a post from another site is refused with 403 and saves nothing', async () => {
    const { app } = await withServices()
    const res = await app.inject({
      method: 'POST',
      url: '/settings',
      payload: 'service=none',
      headers: { ...FORM, origin: 'https://evil.example' }
    })
    expect(res.statusCode).toBe(403)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.body).toContain('settings page')
  })

  it('a post the browser marks cross-site is refused even without Origin', async () => {
    const { app } = await withServices()
    const res = await app.inject({
      method: 'POST',
      url: '/settings',
      payload: 'service=none',
      headers: { ...FORM, 'sec-fetch-site': 'cross-site' }
    })
    expect(res.statusCode).toBe(403)
    expect(res.headers['set-cookie']).toBeUndefined()
  })

  it('an unknown service is refused with 400', async () => {
    const { app } = await withServices()
    const res = await app.inject({ method: 'POST', url: '/settings', payload: 'service=elsewhere', headers: { ...FORM, origin: BASE } })
    expect(res.statusCode).toBe(400)
    expect(res.headers['set-cookie']).toBeUndefined()
  })

  it('a refusal is our error page, kept by no cache', async () => {
    const { app } = await withServices()
    const res = await app.inject({ method: 'POST', url: '/settings', payload: 'service=elsewhere', headers: { ...FORM, origin: BASE } })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toContain('There is no library service with that name here')
    expect(res.body).toContain('<html lang="en">')
  })

  it('over plain http the cookie is not marked Secure (it could not be sent back)', async () => {
    const { app } = await setup({ records: RECORDS, overrides: { localServices: [SFX] } })
    const res = await app.inject({
      method: 'POST',
      url: '/settings',
      payload: 'service=sfx',
      headers: { ...FORM, origin: 'http://localhost' }
    })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers['set-cookie'])).not.toContain('Secure')
  })

  it('behind an https reverse proxy (TRUST_PROXY) it is', async () => {
    const { app } = await setup({ records: RECORDS, overrides: { localServices: [SFX], trustProxy: true } })
    const res = await app.inject({
      method: 'POST',
      url: '/settings',
      payload: 'service=sfx',
      headers: { ...FORM, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'doi.library.example', origin: BASE }
    })
    expect(res.statusCode).toBe(303)
    expect(String(res.headers['set-cookie'])).toContain('Secure')
  })
})

describe("the cookie setter for a library's login page (/settings/set)", () => {
  it('answers a 1×1 GIF that nobody caches and sets the choice', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/settings/set?service=sfx' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('image/gif')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.rawPayload.subarray(0, 6).toString('latin1')).toBe('GIF89a')
    expect(res.rawPayload.readUInt16LE(6)).toBe(1)
    expect(res.rawPayload.readUInt16LE(8)).toBe(1)
    expect(cookieOf(res.headers['set-cookie'])).toBe('doi_proxy_ls=sfx')
  })

  it("over https the cookie is SameSite=None and Secure, so a browser may keep it from an <img> on the library's site", async () => {
    const { app } = await withServices()
    const setCookie = String((await app.inject({ url: '/settings/set?service=sfx' })).headers['set-cookie'])
    expect(setCookie).toContain('SameSite=None')
    expect(setCookie).toContain('Secure')
  })

  it('refuses an unknown service with 400', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/settings/set?service=elsewhere' })
    expect(res.statusCode).toBe(400)
    expect(res.headers['set-cookie']).toBeUndefined()
  })

  it('service=none is a choice too', async () => {
    const { app } = await withServices()
    expect(cookieOf((await app.inject({ url: '/settings/set?service=none' })).headers['set-cookie'])).toBe('doi_proxy_ls=none')
  })
})
