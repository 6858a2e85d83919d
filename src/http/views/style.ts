/**
 * The one small stylesheet every HTML page carries inline: no external assets, so a page
 * renders the same behind any proxy or offline. Follows the reader's light/dark preference.
 */
export const PAGE_CSS = [
  ':root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--alt:#f4f5f7;--line:#d0d7de;--accent:#0a58b0;--note:#fff8e5;--note-line:#d4a72c;--field-line:#6e7781;--on-accent:#fff}',
  '@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9aa4af;--bg:#0d1117;--alt:#161b22;--line:#30363d;--accent:#58a6ff;--note:#2b2111;--note-line:#9e6a03;--field-line:#8b949e;--on-accent:#0d1117}}',
  '*{box-sizing:border-box}',
  'body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}',
  'main{max-width:72rem;margin:0 auto;padding:1.5rem 1rem 3rem}',
  'h1{font-size:1.5rem;line-height:1.25;margin:0 0 .75rem;overflow-wrap:anywhere}',
  'a{color:var(--accent)}',
  'code,td{overflow-wrap:anywhere}',
  'code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}',
  '.links{margin:0 0 1rem;color:var(--muted)}',
  '.scroll{overflow-x:auto}',
  'table{border-collapse:collapse;width:100%;font-size:.9375rem}',
  'caption{text-align:left;font-weight:600;padding:.25rem 0 .5rem}',
  'th,td{text-align:left;vertical-align:top;padding:.4rem .6rem;border-bottom:1px solid var(--line)}',
  'tbody tr:nth-child(odd){background:var(--alt)}',
  'td:last-child{white-space:pre-wrap;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.875rem}',
  '.ts,.type{white-space:nowrap}',
  'td.type{overflow-wrap:normal}',
  '.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}',
  '.note{background:var(--note);border-left:4px solid var(--note-line);padding:.5rem .75rem;margin:1rem 0}',
  'form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:1rem 0}',
  'input[type=text]{flex:1 1 18rem;min-width:0;padding:.5rem .6rem;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--field-line);border-radius:6px}',
  'button{padding:.5rem 1.1rem;font:inherit;color:var(--on-accent);background:var(--accent);border:0;border-radius:6px;cursor:pointer}',
  // A focus ring that shows on every background, light or dark (behaviour.md §12).
  ':focus-visible{outline:3px solid var(--accent);outline-offset:2px}',
  'fieldset{display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;width:100%;margin:0;padding:0;border:0}',
  'footer{margin-top:2.5rem;color:var(--muted);font-size:.875rem}'
].join('\n')
