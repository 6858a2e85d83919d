/**
 * The pages of the institutional resolver (behaviour.md §10, §12): /settings, where a reader picks
 * a library service or none, and the page for an OpenURL that names no DOI. Pure functions from
 * data to a string; everything shown is escaped.
 */
import type { LocalServiceConfig } from '../../config/local-services.js'
import { OPENURL_DOI_KEYS } from '../../handle/openurl.js'
import type { PageContext } from './pages.js'
import { escapeHtml, htmlDocument } from './html.js'

export interface SettingsView {
  services: readonly LocalServiceConfig[]
  /** The saved choice: a service id, 'none', or undefined (automatic). */
  current: string | undefined
  /** The reader has just saved (the 303 after the form). */
  saved: boolean
  /** The cookie's name, shown to the reader. */
  cookieName: string
}

const TITLE = 'Where DOI links take you'

function describe(services: readonly LocalServiceConfig[], current: string | undefined): string {
  if (current === 'none') return "DOI links take you to the publisher's site, always."
  const chosen = services.find((s) => s.id === current)
  if (chosen !== undefined) return `DOI links take you to <strong>${escapeHtml(chosen.name)}</strong> first, wherever you are.`
  return "Automatic: DOI links take you to your library's service when you are on its network, and to the publisher's site elsewhere."
}

function radio(id: string, value: string, labelHtml: string, checked: boolean): string {
  return `<div><input type="radio" id="${escapeHtml(id)}" name="service" value="${escapeHtml(value)}"${checked ? ' checked' : ''}> <label for="${escapeHtml(id)}">${labelHtml}</label></div>`
}

export function renderSettingsPage(ctx: PageContext, view: SettingsView): string {
  if (view.services.length === 0) {
    return htmlDocument(
      TITLE,
      `<h1>${TITLE}</h1>
<p>This resolver has no library service set up, so there is nothing to choose here: every DOI link takes you to the address its publisher registered.</p>`,
      ctx.baseUrl
    )
  }
  const saved = view.saved ? '<p class="note" role="status">Your choice is saved.</p>\n' : ''
  const options = [
    radio('service-auto', '', "Automatic: my library's service when I am on its network", view.current === undefined),
    ...view.services.map((s) => radio(`service-${s.id}`, s.id, `${escapeHtml(s.name)}, wherever I am`, view.current === s.id)),
    radio('service-none', 'none', "The publisher's site, always (no library service)", view.current === 'none')
  ].join('\n')
  return htmlDocument(
    TITLE,
    `<h1>${TITLE}</h1>
<p>Your library can send you to the copy of an article it pays for (through its link resolver) instead of the publisher's site, where you may meet a paywall.</p>
${saved}<p>Now: ${describe(view.services, view.current)}</p>
<form action="${escapeHtml(ctx.baseUrl)}settings" method="post">
<fieldset>
<legend>Send me to</legend>
${options}
</fieldset>
<button type="submit">Save</button>
</form>
<p>Your choice is kept for a year in a cookie of this site (<code>${escapeHtml(view.cookieName)}</code>) in this browser only. It holds the name of the service and nothing about you. A link that ends in <code>?nols=y</code> always goes to the publisher.</p>`,
    ctx.baseUrl
  )
}

/** The 400 page for an OpenURL without a DOI: which keys we read, with examples. */
export function renderOpenUrlHelpPage(ctx: PageContext): string {
  const rows = OPENURL_DOI_KEYS.map(
    (k) =>
      `<tr><td><code>${escapeHtml(k.key)}</code></td><td>${escapeHtml(k.note)}</td><td>${escapeHtml(`${ctx.baseUrl}openurl?${k.example}`)}</td></tr>`
  ).join('\n')
  return htmlDocument(
    'No DOI in this OpenURL',
    `<h1>No DOI in this OpenURL</h1>
<p>This resolver answers OpenURLs that name a DOI, and we found none in this one. We read these keys, in this order:</p>
<div class="scroll"><table>
<caption>Keys that name a DOI</caption>
<thead><tr><th scope="col">Key</th><th scope="col">Notes</th><th scope="col">Example</th></tr></thead>
<tbody>
${rows}
</tbody>
</table></div>
<p>Other OpenURL keys (titles, ISSNs, authors) are ignored: we resolve DOIs only. The resolver's own parameters, such as <code>nols</code>, <code>noredirect</code> and <code>urlappend</code>, may come along.</p>`,
    ctx.baseUrl
  )
}
