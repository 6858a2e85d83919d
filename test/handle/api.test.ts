import { describe, expect, it } from 'vitest'
import {
  apiEmptyHandle,
  apiError,
  apiHandleFromPath,
  apiHandleOf,
  apiHttpStatus,
  apiNotFound,
  apiNotHeldOffline,
  apiParamsError,
  apiSuccess,
  apiUnknownEndpoint,
  apiValuesNotFound,
  parseApiQuery,
  sanitizeCallback,
  serializeApi
} from '../../src/handle/api.js'
import type { ApiBody, ApiParams } from '../../src/handle/api.js'
import { filterValues } from '../../src/handle/record.js'
import { cacheKey } from '../../src/handle/name.js'
import type { HandleValue } from '../../src/handle/types.js'

// ---- The reference transcript, replayed through our pure functions ----

/** What the fake upstream knows: a record, or a handle-server error. */
type Upstream = HandleValue[] | { responseCode: number; message: string }

/** A value with its keys in ANOTHER order than the reference writes, as some upstream might send it. */
function scrambled(index: number, type: string, format: string, value: unknown, ts: string): HandleValue {
  return { timestamp: ts, ttl: 86400, data: { value, format }, type, index }
}

function admin(index: number, handle: string, ts: string): HandleValue {
  return scrambled(index, 'HS_ADMIN', 'admin', { permissions: '111111111111', index: 300, handle }, ts)
}

const PROBE_PUBKEY_N =
  '7ppEIXcnEVJfEOCLMif67XFN8VZhWCQVMXvcx472HWpKl23D59qHlKGq-GpdV8gguB2Ynu8KetM6shxJKKhsAU4Uq600hbNXmGHNBOagFwJK8rIZ3RHKdfOap9UCSOynH31G3Bzr1lRDGo4w9Fru28t4DRRvexEBgaOpVTl6Hr_1YPaU3XLzjq1EUA1WDtlfomEivzhamCQepzFFmmJh9OZSXF3kRiHLTEgUwYkUD2wM5B2f7GgIA3tK4pobVDe-DO80uStJ7MZsOsC8S--z9at7SR_SkQG1xzzrlwv7edKTXysWGIPmwJgEldxk8FOXkIKZjTCLt-GFXmku23ajBw'

/** The probe's test handles (transcript header), as the upstream would hold them. */
function probeRecords(ts: string): Map<string, Upstream> {
  const a = admin(100, '0.NA/10.5555', ts)
  const url = (index: number, href: string): HandleValue => scrambled(index, 'URL', 'string', href, ts)
  const prefix = [
    a,
    admin(101, '10.5555/admin', ts),
    scrambled(300, 'HS_PUBKEY', 'key', { e: 'AQAB', n: PROBE_PUBKEY_N, kty: 'RSA' }, ts),
    scrambled(301, 'HS_SECKEY', 'string', 'password', ts)
  ]
  const records: Array<[string, Upstream]> = [
    ['10.5555/plain', [a, url(1, 'http://example.org/plain')]],
    [
      '10.5555/multi',
      [
        a,
        url(1, 'http://example.org/first'),
        url(2, 'http://example.org/second'),
        scrambled(3, 'EMAIL', 'string', 'someone@example.org', ts),
        scrambled(4, 'DESC', 'string', 'several values', ts)
      ]
    ],
    ['10.5555/novalues', [a]],
    ['10.5555/alias', [a, scrambled(1, 'HS_ALIAS', 'string', '10.5555/plain', ts)]],
    ['10.5555/hash#frag', [a, url(1, 'http://example.org/hash')]],
    ['10.5555', prefix],
    ['0.NA/10.5555', prefix],
    ['10.9999/x', { responseCode: 301, message: "That prefix doesn't live here" }]
  ]
  // case_sensitive=no on the probe's server: handles fold ASCII case
  return new Map(records.map(([h, r]) => [cacheKey(h), r]))
}

const RECORDS = { 1: probeRecords('2026-11-22T10:39:19Z'), 2: probeRecords('2026-11-22T10:40:55Z') }

/** What the /api/handles route does with these functions (behaviour.md R7 order: empty handle, then the query). */
function answerApi(target: string, records: ReadonlyMap<string, Upstream>): { status: number; contentType: string; body: string } {
  const q = target.indexOf('?')
  const rawPath = q < 0 ? target : target.slice(0, q)
  const params = parseApiQuery(q < 0 ? '' : target.slice(q + 1))
  const send = (body: ApiBody): { status: number; contentType: string; body: string } => ({
    status: apiHttpStatus(body.responseCode as number),
    ...serializeApi(body, params)
  })
  const handle = apiHandleFromPath(rawPath.slice('/api/handles'.length))
  if (handle === undefined) return send(apiError(4, 'Invalid UTF-8 in handle'))
  if (handle === '') return send(apiEmptyHandle())
  const paramsError = apiParamsError(params)
  if (paramsError !== undefined) return send(paramsError)
  const found = records.get(cacheKey(handle))
  if (found === undefined) return send(apiNotFound(handle))
  if (!Array.isArray(found)) return send(apiError(found.responseCode, found.message, handle))
  const values = filterValues(found, { types: params.types, indexes: params.indexes })
  return send(values.length === 0 ? apiValuesNotFound(handle) : apiSuccess(handle, values))
}

// [target, probe, HTTP status, Content-Type, body]: cut by Content-Length from
// test/fixtures/cnri_hdlproxy_9.2.0_probe.txt (CNRI HANDLE.NET 9.2.0, prefix 10.5555)
const PROBE_API_EXCHANGES: ReadonlyArray<[string, 1 | 2, number, string, string]> = [
  [
    '/api/handles/10.5555/plain',
    1,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/plain","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"},{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
  ],
  [
    '/api/handles/10.5555/PLAIN?type=URL',
    1,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/PLAIN","values":[{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
  ],
  [
    '/api/handles/10.5555/multi?index=2',
    1,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/multi","values":[{"index":2,"type":"URL","data":{"format":"string","value":"http://example.org/second"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
  ],
  ['/api/handles/10.5555/nonexistent', 1, 404, 'application/json;charset=utf-8', '{"responseCode":100,"handle":"10.5555/nonexistent"}'],
  [
    '/api/handles/10.9999/x',
    1,
    400,
    'application/json;charset=utf-8',
    '{"responseCode":301,"message":"That prefix doesn\'t live here","handle":"10.9999/x"}'
  ],
  [
    '/api/handles/10.5555/novalues',
    1,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/novalues","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
  ],
  [
    '/api/handles/10.5555/alias',
    1,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/alias","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"},{"index":1,"type":"HS_ALIAS","data":{"format":"string","value":"10.5555/plain"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
  ],
  [
    '/api/handles/10.5555/hash%23frag?pretty',
    1,
    200,
    'application/json;charset=utf-8',
    '{\n  "responseCode": 1,\n  "handle": "10.5555/hash#frag",\n  "values": [\n    {\n      "index": 100,\n      "type": "HS_ADMIN",\n      "data": {\n        "format": "admin",\n        "value": {\n          "handle": "0.NA/10.5555",\n          "index": 300,\n          "permissions": "111111111111"\n        }\n      },\n      "ttl": 86400,\n      "timestamp": "2026-11-22T10:39:19Z"\n    },\n    {\n      "index": 1,\n      "type": "URL",\n      "data": {\n        "format": "string",\n        "value": "http://example.org/hash"\n      },\n      "ttl": 86400,\n      "timestamp": "2026-11-22T10:39:19Z"\n    }\n  ]\n}'
  ],
  [
    '/api/handles/10.5555/multi?type=URL&type=EMAIL',
    1,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/multi","values":[{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/first"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"},{"index":2,"type":"URL","data":{"format":"string","value":"http://example.org/second"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"},{"index":3,"type":"EMAIL","data":{"format":"string","value":"someone@example.org"},"ttl":86400,"timestamp":"2026-11-22T10:39:19Z"}]}'
  ],
  [
    '/api/handles/10.5555/alias?type=HS_ALIAS',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/alias","values":[{"index":1,"type":"HS_ALIAS","data":{"format":"string","value":"10.5555/plain"},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]}'
  ],
  [
    '/api/handles/10.5555%2Fplain',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/plain","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]}'
  ],
  [
    '/api/handles/10.5555/plain?callback=cb',
    2,
    200,
    'application/javascript;charset=utf-8',
    'cb({"responseCode":1,"handle":"10.5555/plain","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]});'
  ],
  [
    '/api/handles/10.5555/plain?index=1&type=HS_ADMIN',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/plain","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]}'
  ],
  [
    '/api/handles/10.5555/plain?index=999',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":200,"values":[],"handle":"10.5555/plain"}'
  ],
  [
    '/api/handles/10.5555/plain?type=EMAIL',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":200,"values":[],"handle":"10.5555/plain"}'
  ],
  [
    '/api/handles/10.5555/plain',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555/plain","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":1,"type":"URL","data":{"format":"string","value":"http://example.org/plain"},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]}'
  ],
  ['/api/handles/', 2, 400, 'application/json;charset=utf-8', '{"responseCode":102,"message":"Empty handle invalid"}'],
  [
    '/api/handles/10.5555',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"10.5555","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":101,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"10.5555/admin","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":300,"type":"HS_PUBKEY","data":{"format":"key","value":{"kty":"RSA","n":"7ppEIXcnEVJfEOCLMif67XFN8VZhWCQVMXvcx472HWpKl23D59qHlKGq-GpdV8gguB2Ynu8KetM6shxJKKhsAU4Uq600hbNXmGHNBOagFwJK8rIZ3RHKdfOap9UCSOynH31G3Bzr1lRDGo4w9Fru28t4DRRvexEBgaOpVTl6Hr_1YPaU3XLzjq1EUA1WDtlfomEivzhamCQepzFFmmJh9OZSXF3kRiHLTEgUwYkUD2wM5B2f7GgIA3tK4pobVDe-DO80uStJ7MZsOsC8S--z9at7SR_SkQG1xzzrlwv7edKTXysWGIPmwJgEldxk8FOXkIKZjTCLt-GFXmku23ajBw","e":"AQAB"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":301,"type":"HS_SECKEY","data":{"format":"string","value":"password"},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]}'
  ],
  [
    '/api/handles/0.NA/10.5555?type=HS_ADMIN',
    2,
    200,
    'application/json;charset=utf-8',
    '{"responseCode":1,"handle":"0.NA/10.5555","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.5555","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"},{"index":101,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"10.5555/admin","index":300,"permissions":"111111111111"}},"ttl":86400,"timestamp":"2026-11-22T10:40:55Z"}]}'
  ]
]

const DOIORG_CAPTURES: ReadonlyArray<[string, string]> = [
  [
    'GET https://doi.org/api/handles/10/p54k',
    '{"responseCode":1,"handle":"10/p54k","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10","index":200,"permissions":"011111110010"}},"ttl":86400,"timestamp":"2025-09-16T04:52:06Z"},{"index":1,"type":"HS_ALIAS","data":{"format":"string","value":"10.1021/JACS.5C01100"},"ttl":86400,"timestamp":"2025-09-16T04:52:06Z"}]}'
  ],
  [
    'GET https://doi.org/api/handles/10.1021/jacs.5c01100',
    '{"responseCode":1,"handle":"10.1021/jacs.5c01100","values":[{"index":1,"type":"URL","data":{"format":"string","value":"https://pubs.acs.org/doi/10.1021/jacs.5c01100"},"ttl":86400,"timestamp":"2025-02-28T14:08:23Z"},{"index":700050,"type":"700050","data":{"format":"string","value":"2025031202241500560"},"ttl":86400,"timestamp":"2025-03-12T09:29:26Z"},{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.na/10.1021","index":200,"permissions":"111111110010"}},"ttl":86400,"timestamp":"2025-02-28T14:08:23Z"}]}'
  ],
  [
    'GET https://doi.org/api/handles/10.1002/chem.202000622',
    '{"responseCode":1,"handle":"10.1002/chem.202000622","values":[{"index":1,"type":"URL","data":{"format":"string","value":"https://onlinelibrary.wiley.com/doi/10.1002/chem.202000622"},"ttl":86400,"timestamp":"2020-09-25T16:02:07Z"},{"index":700050,"type":"700050","data":{"format":"string","value":"2020100503563800217"},"ttl":86400,"timestamp":"2020-10-05T12:25:43Z"},{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.na/10.1002","index":200,"permissions":"111111110010"}},"ttl":86400,"timestamp":"2020-03-30T02:01:43Z"}]}'
  ],
  [
    'GET https://doi.org/api/handles/10.1002/anie.201804551?type=URL',
    '{"responseCode":1,"handle":"10.1002/anie.201804551","values":[{"index":1,"type":"URL","data":{"format":"string","value":"https://onlinelibrary.wiley.com/doi/abs/10.1002/anie.201804551"},"ttl":86400,"timestamp":"2020-03-19T11:37:54Z"}]}'
  ],
  [
    'GET https://doi.org/api/handles/10.1002/anie.201804551?type=HS_ADMIN',
    '{"responseCode":1,"handle":"10.1002/anie.201804551","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.na/10.1002","index":200,"permissions":"111111110010"}},"ttl":86400,"timestamp":"2018-05-15T11:31:52Z"}]}'
  ]
]

const CROSSREF_SERVICE_BODY =
  '{"responseCode":1,"handle":"10.serv/crossref","values":[{"index":2,"type":"HS_SITE","data":{"format":"site","value":{"version":1,"protocolVersion":"2.1","serialNumber":2,"primarySite":false,"multiPrimary":false,"attributes":[{"name":"desc","value":"CrossRef secondary"}],"servers":[{"serverId":1,"address":"208.254.38.90","publicKey":{"format":"key","value":{"kty":"DSA","y":"pMbs83U175Qo-FncLpuMn_5l75mu89H4wrmUGyd0hcikGCjTITAT9Eue4nnkniDy18BEvBg9P3OikIAtHR-nxgSXT9n8jzz-ShAYAJHT90Dh4O9wem6mftC8f5CuTINQxDC5lC3zSGb_OK5abrqKBtUPVBgPz-Y8_2aoCJ6DJno","p":"_X9TgR11EilS30qcLuzk5_YRt1I870QAwx4_gLZRJmlFXUAiUftZPY1Y-r_F9bow9subVWzXgTuAHTRv8mZgt2uZUKWkn5_oBHsQIsJPu6nX_rfGG_g7V-fGqKYVDwT7g_bTxR7DAjVUE1oWkTL2dfOuK2HXKu_yIgMZndFIAcc","q":"l2BQjxUjC8yykrmCouuEC_BYHPU","g":"9-GghdabPd7LvKtcNrhXuXmUr7v6OuqC-VdMCz0HgmdRWVeOutRZT-ZxBxCBgLRJFnEj6EwoFhO3zwkyjMim4TwWeotUfI0o4KOuHiuzpnWRbqN_C_ohNWLx-2J6ASQ7zKTxvqhRkImog9_hWuWfBpKLZl6Ae1UlZAFMO_7PSSo"}},"interfaces":[{"query":true,"admin":true,"protocol":"TCP","port":2641},{"query":true,"admin":false,"protocol":"UDP","port":2641},{"query":true,"admin":true,"protocol":"HTTP","port":8000}]}]}},"ttl":86400,"timestamp":"2016-09-21T17:37:43Z"},{"index":3,"type":"10320/ra_name","data":{"format":"string","value":"Crossref"},"ttl":86400,"timestamp":"2016-09-21T17:37:43Z"},{"index":9,"type":"#HS_SITE#Denver","data":{"format":"base64","value":"AAECAQABAAIAAAAAAAAAAQAAAARkZXNjAAAAFkNyb3NzUmVmIE1pcnJvciBEZW52ZXIAAAABAAAAAQAAAAAAAAAAAAAAAD97mPgAAAG5AAAAC0RTQV9QVUJfS0VZAAAAAAAVAJdgUI8VIwvMspK5gqLrhAvwWBz1AAAAgQD9f1OBHXUSKVLfSpwu7OTn9hG3UjzvRADDHj+AtlEmaUVdQCJR+1k9jVj6v8X1ujD2y5tVbNeBO4AdNG/yZmC3a5lQpaSfn+gEexAiwk+7qdf+t8Yb+DtX58aophUPBPuD9tPFHsMCNVQTWhaRMvZ1864rYdcq7/IiAxmd0UgBxwAAAIEA9+GghdabPd7LvKtcNrhXuXmUr7v6OuqC+VdMCz0HgmdRWVeOutRZT+ZxBxCBgLRJFnEj6EwoFhO3zwkyjMim4TwWeotUfI0o4KOuHiuzpnWRbqN/C/ohNWLx+2J6ASQ7zKTxvqhRkImog9/hWuWfBpKLZl6Ae1UlZAFMO/7PSSoAAACBAJOopl56CBVDfnso5hKD/ei71eXE9vOdO/Q1BPtSLAp73WcftwFnEyAXqR7tKJLzMpn0CBwplaSL03zpsHpKnppiGkpm0Ic5CsIRZsJA+SER07SUn1myzh9lndp4hK0LfTFB+WUDYuf6FbrlL49Ea3IauTbtD3uri9rbM2yvAbXtAAAAAwMBAAAKUQAAAAAKUQMCAAAfQA=="},"ttl":86400,"timestamp":"2018-06-18T20:07:39Z"},{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.SERV","index":200,"permissions":"111111110010"}},"ttl":86400,"timestamp":"2016-09-21T17:37:43Z"},{"index":200,"type":"HS_VLIST","data":{"format":"vlist","value":[{"handle":"200/1","index":300},{"handle":"200/4","index":300},{"handle":"200/23","index":300},{"handle":"200/27","index":300},{"handle":"0.SERV/10.crossref","index":311},{"handle":"10.cradmin/cruser","index":300},{"handle":"10.SERV/CROSSREF","index":303},{"handle":"10.SERV/CROSSREF","index":305},{"handle":"10.SERV/CROSSREF","index":307},{"handle":"10.SERV/CROSSREF","index":311},{"handle":"10.SERV/CROSSREF","index":312},{"handle":"10.SERV/CROSSREF","index":313},{"handle":"10.SERV/CROSSREF","index":314},{"handle":"10.SERV/CROSSREF","index":315},{"handle":"10.SERV/CROSSREF","index":316},{"handle":"200/28","index":300}]},"ttl":86400,"timestamp":"2018-04-20T14:30:26Z"},{"index":303,"type":"HS_PUBKEY","data":{"format":"key","value":{"kty":"DSA","y":"jvujg9dFy3HCRUPcWNquM6Nzk9iIq-atgMf0bNUr_urGgKDyHIwGKuNs3wIZHvcJiKijRX9Vqn6SOfXrP9f1HeT9aa5ry8oeszvLnPzgdNkJ4jWZlzdnmtIu0ebdVKK_oOiKbLW65-kCG1J4ustBzPMF-j8DXjqOrSkChRXzcSc","p":"_X9TgR11EilS30qcLuzk5_YRt1I870QAwx4_gLZRJmlFXUAiUftZPY1Y-r_F9bow9subVWzXgTuAHTRv8mZgt2uZUKWkn5_oBHsQIsJPu6nX_rfGG_g7V-fGqKYVDwT7g_bTxR7DAjVUE1oWkTL2dfOuK2HXKu_yIgMZndFIAcc","q":"l2BQjxUjC8yykrmCouuEC_BYHPU","g":"9-GghdabPd7LvKtcNrhXuXmUr7v6OuqC-VdMCz0HgmdRWVeOutRZT-ZxBxCBgLRJFnEj6EwoFhO3zwkyjMim4TwWeotUfI0o4KOuHiuzpnWRbqN_C_ohNWLx-2J6ASQ7zKTxvqhRkImog9_hWuWfBpKLZl6Ae1UlZAFMO_7PSSo"}},"ttl":86400,"timestamp":"2016-09-21T17:37:43Z"}]}'

describe('GET /api/handles answers byte for byte as the reference proxy (probe transcript)', () => {
  it.each(PROBE_API_EXCHANGES)('%s (probe %i) → %i', (target, probe, status, contentType, body) => {
    expect(answerApi(target, RECORDS[probe])).toEqual({ status, contentType, body })
  })

  // The one exchange we do not replay: '?prefix=' lists a handle server's handles, which a DOI proxy
  // does not offer (we answer 102 to an empty handle). Its body shape and status still hold.
  it('a responseCode 402 (authentication needed) reads {"responseCode":402,"handle":…} with HTTP 403, as the 9.2.0 run answered', () => {
    expect(serializeApi(apiError(402, '', '10.5555'), { pretty: false }).body).toBe('{"responseCode":402,"handle":"10.5555"}')
    expect(apiHttpStatus(402)).toBe(403)
  })
})

describe('doi.org responses come out byte-identical through apiSuccess + serializeApi', () => {
  // test/fixtures/doiorg_api_handles_captured.json (northword/zotero-format-metadata, lcnittl/pyDOI)
  const cases: Array<[string, string]> = [
    ...DOIORG_CAPTURES,
    ['10.SERV/CROSSREF (handle_10.SERV-CROSSREF_record_2020.json, 6 values)', CROSSREF_SERVICE_BODY]
  ]

  it.each(cases)('%s', (_request, body) => {
    const parsed = JSON.parse(body) as { handle: string; values: HandleValue[] }
    expect(serializeApi(apiSuccess(parsed.handle, parsed.values), { pretty: false }).body).toBe(body)
  })

  it.each(cases)('%s, even when the upstream sends every key in reverse order', (_request, body) => {
    const parsed = JSON.parse(body) as { handle: string; values: HandleValue[] }
    const reversed = parsed.values.map((v) => reverseKeys(v, 6) as HandleValue)
    expect(serializeApi(apiSuccess(parsed.handle, reversed), { pretty: false }).body).toBe(body)
  })

  it('the DOI Factsheet example 10.1000/1 ([DOI-FS] §5, behaviour.md R7)', () => {
    const values: HandleValue[] = [
      {
        ttl: 86400,
        index: 100,
        type: 'HS_ADMIN',
        timestamp: '2000-04-13T15:08:57Z',
        data: { value: { permissions: '011111111111', handle: '0.NA/10.1000', index: 200 }, format: 'admin' }
      },
      {
        timestamp: '2004-09-10T19:49:59Z',
        ttl: 86400,
        data: { format: 'string', value: 'https://www.doi.org/index.html' },
        type: 'URL',
        index: 1
      }
    ]
    expect(serializeApi(apiSuccess('10.1000/1', values), { pretty: false }).body).toBe(
      '{"responseCode":1,"handle":"10.1000/1","values":[{"index":100,"type":"HS_ADMIN","data":{"format":"admin","value":{"handle":"0.NA/10.1000","index":200,"permissions":"011111111111"}},"ttl":86400,"timestamp":"2000-04-13T15:08:57Z"},{"index":1,"type":"URL","data":{"format":"string","value":"https://www.doi.org/index.html"},"ttl":86400,"timestamp":"2004-09-10T19:49:59Z"}]}'
    )
  })
})

/** A copy with object keys reversed, down to `depth` levels of objects and arrays. */
function reverseKeys(x: unknown, depth: number): unknown {
  if (depth === 0 || typeof x !== 'object' || x === null) return x
  if (Array.isArray(x)) return x.map((item) => reverseKeys(item, depth - 1))
  return Object.fromEntries(
    Object.entries(x)
      .reverse()
      .map(([k, v]) => [k, reverseKeys(v, depth - 1)])
  )
}

describe('value key order: index, type, data, permissions, ttl, timestamp, references, then the rest (behaviour.md R7, [HNS92] GsonUtility)', () => {
  const data = { format: 'string', value: 'x' }
  it.each<[string, HandleValue, string]>([
    [
      'permissions sits between data and ttl',
      { ttl: 5, permissions: '1110', data, type: 'T', index: 1 },
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"permissions":"1110","ttl":5}'
    ],
    [
      'no timestamp when the upstream sent none',
      { index: 1, type: 'T', data, ttl: 86400 },
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":86400}'
    ],
    [
      'an absolute ttl stays an ISO string',
      { index: 1, type: 'T', data, ttl: '2030-01-01T00:00:00Z' },
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":"2030-01-01T00:00:00Z"}'
    ],
    [
      'an empty references list is left out',
      { references: [], index: 1, type: 'T', data, ttl: 1 },
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":1}'
    ],
    [
      'references come after timestamp, each {handle, index}',
      { references: [{ index: 300, handle: '0.NA/10.1' }], timestamp: '2020-01-01T00:00:00Z', index: 1, type: 'T', data, ttl: 1 },
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":1,"timestamp":"2020-01-01T00:00:00Z","references":[{"handle":"0.NA/10.1","index":300}]}'
    ],
    [
      'fields we do not know are passed through, untouched, at the end',
      { zeta: { b: 1, a: [2] }, index: 1, alpha: null, type: 'T', data, ttl: 1 },
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":1,"zeta":{"b":1,"a":[2]},"alpha":null}'
    ],
    [
      'an HS_VLIST lists {handle, index}',
      { index: 200, type: 'HS_VLIST', data: { value: [{ index: 300, handle: '10.1/a' }], format: 'vlist' }, ttl: 1 },
      '{"index":200,"type":"HS_VLIST","data":{"format":"vlist","value":[{"handle":"10.1/a","index":300}]},"ttl":1}'
    ],
    [
      'a base64 value is written as sent',
      { index: 9, type: 'X', data: { value: 'AAEC', format: 'base64' }, ttl: 1 },
      '{"index":9,"type":"X","data":{"format":"base64","value":"AAEC"},"ttl":1}'
    ],
    [
      'an upstream field named __proto__ is kept as a field',
      JSON.parse('{"__proto__":{"x":1},"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":1}') as HandleValue,
      '{"index":1,"type":"T","data":{"format":"string","value":"x"},"ttl":1,"__proto__":{"x":1}}'
    ]
  ])('%s', (_name, value, expected) => {
    expect(serializeApi(apiSuccess('10.1/a', [value]), { pretty: false }).body).toBe(
      `{"responseCode":1,"handle":"10.1/a","values":[${expected}]}`
    )
  })

  it('does not change the cached record it was given', () => {
    const value: HandleValue = { ttl: 1, data: { value: { index: 1, handle: 'h' }, format: 'admin' }, type: 'HS_ADMIN', index: 100 }
    const before = JSON.stringify(value)
    apiSuccess('10.1/a', [value])
    expect(JSON.stringify(value)).toBe(before)
  })
})

describe('error bodies (behaviour.md R7; [HNS92] ResponseGsonTypeHierarchyAdapter appends handle last)', () => {
  it.each<[string, ApiBody, number, string]>([
    ['not found: 404 and no message', apiNotFound('10.1/x'), 404, '{"responseCode":100,"handle":"10.1/x"}'],
    ['values not found: 200, values before handle', apiValuesNotFound('10.1/x'), 200, '{"responseCode":200,"values":[],"handle":"10.1/x"}'],
    ['empty handle: 400', apiEmptyHandle(), 400, '{"responseCode":102,"message":"Empty handle invalid"}'],
    // Offline: 301, "server not responsible for handle" ([HNS92] AbstractResponse.RC_SERVER_NOT_RESP), never 100.
    [
      'offline, not in the local records: 301 (the route answers 404)',
      apiNotHeldOffline('10.1/x'),
      400,
      '{"responseCode":301,"message":"Not in this resolver\'s local records: it is offline and did not ask the DOI System","handle":"10.1/x"}'
    ],
    // Offline with a registry copy (issue 43): the copy's words, as the not-found page says them (resolve/copy/tier.ts).
    [
      'offline, not in the registry copy: its words first',
      apiNotHeldOffline('10.1/x', "it is not in this resolver's copy of the registry"),
      400,
      '{"responseCode":301,"message":"It is not in this resolver\'s copy of the registry; this resolver is offline and did not ask the DOI System","handle":"10.1/x"}'
    ],
    [
      'upstream failure: responseCode 2 with a message (the route answers 502/504)',
      apiError(2, 'Upstream timed out', '10.1/x'),
      500,
      '{"responseCode":2,"message":"Upstream timed out","handle":"10.1/x"}'
    ],
    [
      'unknown API endpoint: the raw path in the message (the route answers 404)',
      apiUnknownEndpoint('GET', '/api/xyz%20'),
      400,
      '{"responseCode":4,"message":"Unknown HTTP API endpoint GET /api/xyz%20"}'
    ]
  ])('%s', (_name, body, status, json) => {
    expect(apiHttpStatus(body.responseCode as number)).toBe(status)
    expect(serializeApi(body, { pretty: false }).body).toBe(json)
  })
})

describe('HTTP status for each responseCode ([HNS92] statusCodeFromResponse, [HTM] §14.4)', () => {
  it.each([
    [1, 200],
    [200, 200],
    [100, 404],
    [101, 409],
    [201, 409],
    [4, 400],
    [102, 400],
    [202, 400],
    [301, 400],
    [302, 300],
    [303, 300],
    [5, 501],
    [3, 503],
    [7, 503],
    [402, 403], // the code reads 401; the 9.2.0 probe answered 403 (transcript, '?prefix=')
    [400, 403],
    [401, 403],
    [403, 403],
    [404, 403],
    [2, 500],
    [999, 500]
  ])('responseCode %i → HTTP %i', (code, status) => {
    expect(apiHttpStatus(code)).toBe(status)
  })
})

describe('query parameters ([HNS92] BaseHandleRequestProcessingServlet; container decoding: + is a space, & only)', () => {
  const none: ApiParams = { types: [], indexes: [], pretty: false, auth: false, cert: false, bypassCache: false }
  it.each<[string, string, ApiParams]>([
    ['nothing', '', none],
    ['repeated type, kept in order', 'type=URL&type=EMAIL', { ...none, types: ['URL', 'EMAIL'] }],
    ['a trailing-dot type is kept as sent', 'type=URL.', { ...none, types: ['URL.'] }],
    ['repeated index', 'index=1&index=100', { ...none, indexes: [1, 100] }],
    ['signed indexes, as Integer.parseInt', 'index=-1&index=%2B5', { ...none, indexes: [-1, 5] }],
    ['type and index together (a union, applied by filterValues)', 'index=1&type=HS_ADMIN', { ...none, types: ['HS_ADMIN'], indexes: [1] }],
    ['+ is a space in a value', 'type=10320/loc+x', { ...none, types: ['10320/loc x'] }],
    ['percent-decoded once, as UTF-8', 'type=%C3%A9%2525', { ...none, types: ['é%25'] }],
    [';' + ' does not separate', 'type=URL;type=EMAIL', { ...none, types: ['URL;type=EMAIL'] }],
    ['a bare pretty is true', 'pretty', { ...none, pretty: true }],
    ['pretty= is true', 'pretty=', { ...none, pretty: true }],
    ['pretty=yes / TRUE are true', 'pretty=yes&auth=TRUE', { ...none, pretty: true, auth: true, bypassCache: true }],
    ['pretty=1, on, false are false', 'pretty=1&auth=on&cert=false', none],
    ['the first value of a boolean decides', 'pretty=no&pretty=yes', none],
    ['auth and cert', 'auth&cert=true', { ...none, auth: true, cert: true, bypassCache: true }],
    ['cert alone skips the cache too', 'cert', { ...none, cert: true, bypassCache: true }],
    ['callback, the first one', 'callback=cb&callback=other', { ...none, callback: 'cb' }],
    ['an empty callback is still a callback', 'callback', { ...none, callback: '' }],
    ['names are case-sensitive', 'TYPE=URL&Pretty', none],
    ['empty pairs are skipped', '&&type=URL&', { ...none, types: ['URL'] }],
    ['a non-integer index', 'index=1&index=x', { ...none, badIndex: 'x' }],
    ["an index past Java's int range", 'index=2147483648', { ...none, badIndex: '2147483648' }],
    ['the largest int is fine', 'index=2147483647&index=-2147483648', { ...none, indexes: [2147483647, -2147483648] }],
    ['index=+1 decodes to " 1", which Java refuses', 'index=+1', { ...none, badIndex: ' 1' }],
    ['an empty index', 'index=', { ...none, badIndex: '' }],
    ['a decimal index', 'index=1.0', { ...none, badIndex: '1.0' }],
    ['a value that is not UTF-8', 'type=%FF&pretty', { ...none, pretty: true, badEncoding: 'type=%FF' }]
  ])('%s: ?%s', (_name, query, expected) => {
    expect(parseApiQuery(query)).toEqual(expected)
  })
})

describe('a bad query is a 400 with responseCode 4', () => {
  it.each<[string, string]>([
    ['index=x', '{"responseCode":4,"message":"java.lang.NumberFormatException: For input string: \\"x\\""}'],
    ['index=%22', '{"responseCode":4,"message":"java.lang.NumberFormatException: For input string: \\"\\"\\""}'],
    ['type=%C3', '{"responseCode":4,"message":"Invalid percent-encoding (not UTF-8) in query parameter: type=%C3"}']
  ])('?%s', (query, json) => {
    const body = apiParamsError(parseApiQuery(query))
    expect(body).toBeDefined()
    expect(apiHttpStatus(body?.responseCode as number)).toBe(400)
    expect(serializeApi(body ?? {}, { pretty: false }).body).toBe(json)
  })

  it('a good query has no error', () => {
    expect(apiParamsError(parseApiQuery('type=URL&index=1&pretty'))).toBeUndefined()
  })

  it('the empty handle is reported before a bad index, as the reference checks it first', () => {
    expect(answerApi('/api/handles/?index=x', RECORDS[1]).body).toBe('{"responseCode":102,"message":"Empty handle invalid"}')
  })
})

describe('the handle from the path after /api/handles ([HNS92] getPath: decodeURLIgnorePlus, one "/" removed)', () => {
  it.each<[string, string | undefined]>([
    ['/10.1000/1', '10.1000/1'],
    ['/10.5555%2Fplain', '10.5555/plain'],
    ['/10.5555/hash%23frag', '10.5555/hash#frag'],
    ['//10.1000/1', '/10.1000/1'], // only ONE leading slash goes
    ['/doi:10.1000/1', 'doi:10.1000/1'], // no prefix stripping
    ['/%2010.1000/1%20', ' 10.1000/1 '], // no trimming
    ['/10.1000/a+b', '10.1000/a+b'], // + stays +
    ['/10.1000/caf%C3%A9', '10.1000/café'],
    ['/10.1000/100%', '10.1000/100%'], // a lone % is kept
    ['/10.1000/x/', '10.1000/x/'], // a trailing slash is part of the handle
    ['/', ''],
    ['', ''],
    ['/10.1000/%FF', undefined], // not UTF-8: 400 (behaviour.md §2)
    ['/10.1000/%C3', undefined]
  ])('%j → %j', (raw, handle) => {
    expect(apiHandleFromPath(raw)).toBe(handle)
  })
})

describe('JSONP callback names are scrubbed as the reference does ([HNS92] scrubCallbackParameter)', () => {
  it.each([
    ['cb', 'cb'],
    ['processResponse', 'processResponse'], // [DOI-FS] example
    ['$_jQuery123', '$_jQuery123'],
    ['1cb', '_cb'], // a digit cannot come first
    ['a.b', 'a_b'],
    ['alert(1);//', 'alert_1____'],
    ['x</script>', 'x__script_'],
    ['a b-c', 'a_b_c'],
    ['café', 'café'], // >= U+00A0 is allowed
    ['\u0085x', '_x'], // below U+00A0 is not
    ['', '']
  ])('%j → %j', (name, scrubbed) => {
    expect(sanitizeCallback(name)).toBe(scrubbed)
  })

  it('JSONP wraps the JSON as name(json); with application/javascript', () => {
    expect(serializeApi({ responseCode: 1 }, { pretty: false, callback: 'a.b' })).toEqual({
      contentType: 'application/javascript;charset=utf-8',
      body: 'a_b({"responseCode":1});'
    })
  })

  it('an empty callback still answers JSONP, as the reference does', () => {
    expect(serializeApi({ responseCode: 1 }, { pretty: false, callback: '' }).body).toBe('({"responseCode":1});')
  })

  it('pretty and callback combine', () => {
    expect(serializeApi({ responseCode: 1 }, { pretty: true, callback: 'cb' }).body).toBe('cb({\n  "responseCode": 1\n});')
  })
})

describe('JSON text as Gson writes it with HTML escaping disabled ([HNS92] GsonUtility.getGson)', () => {
  it.each<[string, string, string]>([
    ["< > & = ' are not escaped", "<a href='x'>&</a>", '"<a href=\'x\'>&</a>"'],
    ['U+2028 and U+2029 are escaped (Gson does; keeps JSONP valid)', 'a\u2028b\u2029c', '"a\\u2028b\\u2029c"'],
    ['quotes, backslashes and controls', '"\\\n\t\u0001', '"\\"\\\\\\n\\t\\u0001"'],
    ['non-ASCII is written as is', 'café ✓', '"café ✓"'],
    ['a slash is not escaped', 'http://x/y', '"http://x/y"']
  ])('%s', (_name, value, json) => {
    expect(serializeApi({ v: value }, { pretty: false }).body).toBe(`{"v":${json}}`)
  })

  it('pretty printing: 2 spaces, "key": value, empty arrays as []', () => {
    expect(serializeApi(apiValuesNotFound('10.1/x'), { pretty: true }).body).toBe(
      '{\n  "responseCode": 200,\n  "values": [],\n  "handle": "10.1/x"\n}'
    )
  })
})

// The REST API path's rules, in the order the route answers them (behaviour.md §2, §2.2; [HNS92]; MAX_HANDLE_LENGTH).
describe("apiHandleOf: a /api/handles path's handle, or the API's refusal", () => {
  it.each([
    ['/10.1000/1', 10, { ok: true, handle: '10.1000/1' }],
    ['/10.1000/caf%C3%A9', 16, { ok: true, handle: '10.1000/café' }],
    ['/10.1000/%F0%9F%98%80', 9, { ok: true, handle: '10.1000/😀' }], // a surrogate pair is one character
    [
      '/10.1000/%FF',
      10,
      { ok: false, status: 400, body: { responseCode: 102, message: 'The handle is not valid UTF-8 once percent-decoded' } }
    ],
    ['/', 10, { ok: false, status: 400, body: { responseCode: 102, message: 'Empty handle invalid' } }],
    ['', 10, { ok: false, status: 400, body: { responseCode: 102, message: 'Empty handle invalid' } }],
    [
      '/10.1000/a%0Ab',
      10,
      { ok: false, status: 400, body: { responseCode: 102, message: 'The handle contains a control character', handle: '10.1000/a\nb' } }
    ],
    ['/10.1000/123', 10, { ok: false, status: 414, body: { responseCode: 102, message: 'The handle is longer than 10 characters' } }],
    [
      '/10.1000/%FF%0A',
      1,
      { ok: false, status: 400, body: { responseCode: 102, message: 'The handle is not valid UTF-8 once percent-decoded' } }
    ] // UTF-8 first
  ])('%j (limit %i) → %j', (raw, maxLength, expected) => {
    expect(apiHandleOf(raw, { maxLength })).toEqual(expected)
  })
})
