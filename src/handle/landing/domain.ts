import { getDomain } from 'tldts'

/**
 * The registrable domain of a host (the Public Suffix List's, bundled in tldts: no network): what a
 * publisher owns, so "landed on casino.example, registered on journal.example" tells a taken-over or
 * moved site from a page on another of the publisher's own hosts. An IP address, or a host the list
 * cannot split, is itself.
 */
export function registrableDomain(host: string): string {
  const bare = host
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase()
  return getDomain(bare, { allowPrivateDomains: true }) ?? bare
}
