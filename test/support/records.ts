import type { HandleValue } from '../../src/handle/types.js'

/**
 * Test records modelled on the reference probe (test/fixtures/cnri_hdlproxy_9.2.0_probe.txt):
 * prefix 10.5555, the same handles and values, so our answers can be compared with the transcript.
 */
const TS = '2026-11-22T10:39:19Z'

export function admin(index = 100): HandleValue {
  return {
    index,
    type: 'HS_ADMIN',
    data: { format: 'admin', value: { handle: '0.NA/10.5555', index: 300, permissions: '111111111111' } },
    ttl: 86400,
    timestamp: TS
  }
}

export function str(index: number, type: string, value: string, ttl: number | string = 86400): HandleValue {
  return { index, type, data: { format: 'string', value }, ttl, timestamp: TS }
}

export const LOC_XML =
  '<locations>\n<location id="1" href="http://example.org/loc-a" weight="1" />\n' +
  '<location id="2" href="http://example.org/loc-b" weight="0" country="gb" />\n' +
  '<location id="3" href="http://example.org/meta" weight="0" view="metadata" />\n</locations>'

export const PROBE_RECORDS: Record<string, HandleValue[]> = {
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/multi': [
    admin(),
    str(1, 'URL', 'http://example.org/first'),
    str(2, 'URL', 'http://example.org/second'),
    str(3, 'EMAIL', 'someone@example.org'),
    str(4, 'DESC', 'A record with several values')
  ],
  '10.5555/loc': [admin(), str(1, 'URL', 'http://example.org/loc-url'), str(2, '10320/loc', LOC_XML)],
  '10.5555/alias': [admin(), str(1, 'HS_ALIAS', '10.5555/plain')],
  '10.5555/novalues': [admin()],
  '10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0': [admin(), str(1, 'URL', 'http://example.org/sici')],
  '10.5555/hash#frag': [admin(), str(1, 'URL', 'http://example.org/hash')],
  '10.5555/percent%20x': [admin(), str(1, 'URL', 'http://example.org/percent')],
  '10.5555/with space': [admin(), str(1, 'URL', 'http://example.org/space')],
  '10.5555/café': [admin(), str(1, 'URL', 'http://example.org/unicode')],
  '10.5555/trailing/': [admin(), str(1, 'URL', 'http://example.org/trailing')],
  '10.5555/query?x=1': [admin(), str(1, 'URL', 'http://example.org/query')],
  '10.5555/UPPER': [admin(), str(1, 'URL', 'http://example.org/upper')],
  10.5555: [admin(), str(2, 'HS_SERV', '10.SERV/CROSSREF'), str(3, 'EMAIL', 'admin@example.org')]
}
