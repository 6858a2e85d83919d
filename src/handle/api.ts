/**
 * The Handle REST API `/api/handles/{handle}` (behaviour.md R7, behaviour.md §7): query parsing,
 * the handle from the path, response bodies in the reference's key order, and their serialisation
 * byte for byte as the reference (CNRI HANDLE.NET 9.2.0 HandleJsonRestApiServlet + Gson) writes them.
 * Pure: the route fetches the record, applies `filterValues` and calls these.
 */
import type { HandleValue } from './types.js'
import { codePointLength, hasControlChar, percentDecode } from './name.js'
import { lookupParamsOf } from './lookup-params.js'
import type { LookupParams } from './lookup-params.js'

/**
 * What the API reads from the query string. It is the lookup's request too (LookupParams: `auth`, `cert`,
 * `bypassCache`, true by value as `pretty` is), passed whole to the resolver.
 */
export interface ApiParams extends LookupParams {
  /** Every `type` value, in order (repeatable; union with `indexes`). */
  types: string[]
  /** Every `index` value, in order, when all are integers. */
  indexes: number[]
  /** The first `index` value that is not a Java int: the whole request is a 400 (see `apiParamsError`). */
  badIndex?: string
  /** The first `name=value` pair whose percent-encoding is not UTF-8: a 400 (see `apiParamsError`). */
  badEncoding?: string
  pretty: boolean
  /** Present (even empty) when the query has `callback`: JSONP. Not yet sanitised. */
  callback?: string
}

/** A response body: a plain JSON object whose key order is the wire order. */
export type ApiBody = Record<string, unknown>

const JAVA_INT_MIN = -2147483648
const JAVA_INT_MAX = 2147483647

/**
 * Parse the API query string (without the leading '?') as the servlet container does: pairs split on
 * '&' only, '+' becomes a space in names and values, one UTF-8 percent-decode; repeated `type` and
 * `index` are all kept; `pretty`, `callback`, `auth` and `cert` take their FIRST value, as
 * `getParameter` does. Booleans are true only for '', 'yes' or 'true' (any case).
 */
export function parseApiQuery(rawQuery: string): ApiParams {
  const all = new Map<string, string[]>()
  let badEncoding: string | undefined
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const name = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq))
    const value = decodeFormComponent(eq < 0 ? '' : pair.slice(eq + 1))
    if (name === undefined || value === undefined) {
      badEncoding ??= pair
      continue
    }
    const list = all.get(name)
    if (list === undefined) all.set(name, [value])
    else list.push(value)
  }
  const first = (name: string): string | undefined => all.get(name)?.[0]
  const { indexes, badIndex } = parseIndexes(all.get('index') ?? [])
  const params: ApiParams = {
    types: all.get('type') ?? [],
    indexes,
    pretty: isTrueParameter(first('pretty')),
    ...lookupParamsOf((name) => isTrueParameter(first(name)))
  }
  const callback = first('callback')
  if (callback !== undefined) params.callback = callback
  if (badIndex !== undefined) params.badIndex = badIndex
  if (badEncoding !== undefined) params.badEncoding = badEncoding
  return params
}

/** application/x-www-form-urlencoded decoding: '+' is a space, then one UTF-8 percent-decode. */
function decodeFormComponent(raw: string): string | undefined {
  return percentDecode(raw.replaceAll('+', ' '))
}

/** [HNS92] BaseHandleRequestProcessingServlet.getBooleanParameter. */
function isTrueParameter(value: string | undefined): boolean {
  if (value === undefined) return false
  const v = value.toLowerCase()
  return v === '' || v === 'yes' || v === 'true'
}

/** Java's Integer.parseInt on each value; the first failure fails them all, as in the reference. */
function parseIndexes(raw: readonly string[]): { indexes: number[]; badIndex?: string } {
  const indexes: number[] = []
  for (const s of raw) {
    const n = parseJavaInt(s)
    if (n === undefined) return { indexes: [], badIndex: s }
    indexes.push(n)
  }
  return { indexes }
}

/** An optional sign and ASCII digits within the 32-bit range (Java also takes non-ASCII digits; we do not). */
function parseJavaInt(s: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined
  const n = Number(s)
  return n >= JAVA_INT_MIN && n <= JAVA_INT_MAX ? n : undefined
}

/**
 * The 400 body for a query the API cannot use, or undefined when it is fine. A non-integer index gets
 * the reference's exact text (`java.lang.NumberFormatException: For input string: "x"`, no handle):
 * clients of doi.org see it, and it names the bad value clearly enough.
 */
export function apiParamsError(params: ApiParams): ApiBody | undefined {
  if (params.badEncoding !== undefined) {
    return apiError(4, `Invalid percent-encoding (not UTF-8) in query parameter: ${params.badEncoding}`)
  }
  if (params.badIndex !== undefined) {
    return apiError(4, `java.lang.NumberFormatException: For input string: "${params.badIndex}"`)
  }
  return undefined
}

/**
 * The handle from the raw (still percent-encoded) path after '/api/handles': one UTF-8 percent-decode
 * ('+' stays '+'), then ONE leading '/' removed; no prefix stripping, no trimming ([HNS92]
 * BaseHandleRequestProcessingServlet.getPath). '' means the empty handle (`apiEmptyHandle`).
 * undefined when the bytes are not UTF-8 (the reference would make U+FFFD; behaviour.md §2 refuses: 400).
 */
export function apiHandleFromPath(rawPathAfterApiHandles: string): string | undefined {
  const decoded = percentDecode(rawPathAfterApiHandles)
  if (decoded === undefined) return undefined
  return decoded.startsWith('/') ? decoded.slice(1) : decoded
}

/** A REST API path's handle, or the refusal the API answers for it. */
export type ApiHandleParse = { ok: true; handle: string } | { ok: false; status: 400 | 414; body: ApiBody }

/**
 * The handle of a `/api/handles/…` path, every rule of it in this order: UTF-8 (behaviour.md §2), not
 * empty ([HNS92]: "Empty handle invalid"), no control character (behaviour.md §2.2), at most `maxLength`
 * characters (MAX_HANDLE_LENGTH). The route answers the refusal; the prepared answers' door uses it to
 * tell a handle's path from anything else.
 */
export function apiHandleOf(rawPathAfterApiHandles: string, opts: { maxLength: number }): ApiHandleParse {
  const handle = apiHandleFromPath(rawPathAfterApiHandles)
  if (handle === undefined) return { ok: false, status: 400, body: apiError(102, 'The handle is not valid UTF-8 once percent-decoded') }
  if (handle === '') return { ok: false, status: 400, body: apiEmptyHandle() }
  if (hasControlChar(handle)) return { ok: false, status: 400, body: apiError(102, 'The handle contains a control character', handle) }
  if (codePointLength(handle) > opts.maxLength) {
    return { ok: false, status: 414, body: apiError(102, `The handle is longer than ${opts.maxLength} characters`) }
  }
  return { ok: true, handle }
}

/** Success: `{responseCode:1, handle, values}`, each value in the reference's key order. */
export function apiSuccess(handle: string, values: readonly HandleValue[]): ApiBody {
  return { responseCode: 1, handle, values: values.map(orderValue) }
}

/** The handle exists but no value matched `type`/`index`: HTTP 200, `values` before `handle` (behaviour.md R7). */
export function apiValuesNotFound(handle: string): ApiBody {
  return { responseCode: 200, values: [], handle }
}

/** Handle not found: HTTP 404, no `message` key (as doi.org answers). */
export function apiNotFound(handle: string): ApiBody {
  return apiError(100, '', handle)
}

/**
 * Not in an offline resolver's local records: responseCode 301 ("server not responsible for handle", the
 * Handle protocol's own word for a server that does not hold it), not 100, which would say it does not exist.
 * The route sends it with HTTP 404. With a registry copy (issue 43), `absence` is the copy's words for it,
 * the not-found page's own (resolve/copy/tier.ts `absence`).
 */
export function apiNotHeldOffline(handle: string, absence?: string): ApiBody {
  if (absence !== undefined && absence !== '') {
    const words = absence.charAt(0).toUpperCase() + absence.slice(1)
    return apiError(301, `${words}; this resolver is offline and did not ask the DOI System`, handle)
  }
  return apiError(301, "Not in this resolver's local records: it is offline and did not ask the DOI System", handle)
}

/** `GET /api/handles/` with no handle: `{"responseCode":102,"message":"Empty handle invalid"}`, HTTP 400. */
export function apiEmptyHandle(): ApiBody {
  return apiError(102, 'Empty handle invalid')
}

/**
 * Any other `/api/...` path ([HNS92] UnknownApiServlet). `rawRequestPath` is the path as sent, still
 * encoded. The HTTP status is 404, NOT `apiHttpStatus(4)`.
 */
export function apiUnknownEndpoint(method: string, rawRequestPath: string): ApiBody {
  return apiError(4, `Unknown HTTP API endpoint ${method} ${rawRequestPath}`)
}

/**
 * An error body `{responseCode, message, handle}`. An empty message is left out, and so is a missing
 * handle, as the reference's Gson adapter does (handle is appended last).
 */
export function apiError(responseCode: number, message: string, handle?: string): ApiBody {
  const body: ApiBody = { responseCode }
  if (message !== '') body.message = message
  if (handle !== undefined && handle !== '') body.handle = handle
  return body
}

/**
 * The HTTP status for a responseCode, for resolution requests ([HNS92] statusCodeFromResponse; [HTM]
 * §14.4). Upstream failures (responseCode 2) are 500 here; behaviour.md §8 has the route answer 502/504.
 */
export function apiHttpStatus(responseCode: number): number {
  return HTTP_STATUS_BY_RESPONSE_CODE.get(responseCode) ?? 500
}

const HTTP_STATUS_BY_RESPONSE_CODE: ReadonlyMap<number, number> = new Map([
  [1, 200],
  [200, 200], // values-not-found is 200 for a resolution
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
  [402, 403], // the code says 401 (SC_UNAUTHORIZED); the 9.2.0 probe answered 403, and the oracle wins
  [400, 403],
  [401, 403],
  [403, 403],
  [404, 403]
])

export interface SerializedApi {
  contentType: string
  body: string
}

/**
 * Serialise as the reference does: Gson with HTML escaping disabled ('<', '&', '=', "'" stay as they
 * are), compact, or with `pretty` 2-space indentation and `"key": value`, which is what
 * JSON.stringify(x, null, 2) writes. Gson also escapes U+2028 and U+2029; so do we (it keeps JSONP
 * valid JavaScript). With a callback (even empty): `name(<json>);` as application/javascript.
 */
export function serializeApi(body: object, opts: { pretty: boolean; callback?: string | undefined }): SerializedApi {
  const json = escapeLineSeparators(opts.pretty ? JSON.stringify(body, null, 2) : JSON.stringify(body))
  if (opts.callback === undefined) {
    return { contentType: 'application/json;charset=utf-8', body: json }
  }
  return { contentType: 'application/javascript;charset=utf-8', body: `${sanitizeCallback(opts.callback)}(${json});` }
}

/** U+2028/U+2029 can only occur inside JSON strings, so a global replace is safe. */
function escapeLineSeparators(json: string): string {
  return json.replaceAll('\u2028', '\\u2028').replaceAll('\u2029', '\\u2029')
}

/**
 * The reference's JSONP name scrubbing ([HNS92] scrubCallbackParameter): each UTF-16 unit other than
 * '_', '$', A-Z, a-z, a digit (not first) or a character >= U+00A0 becomes '_'. So no '(', '.', ';'
 * or quote can reach the script.
 */
export function sanitizeCallback(name: string): string {
  let out = ''
  for (let i = 0; i < name.length; i++) {
    const ch = name.charAt(i)
    out += isCallbackChar(ch, i) ? ch : '_'
  }
  return out
}

function isCallbackChar(ch: string, position: number): boolean {
  if (ch === '_' || ch === '$') return true
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) return true
  if (ch >= '0' && ch <= '9') return position > 0
  return ch.charCodeAt(0) >= 0xa0
}

// ---- key order of values (behaviour.md R7; [HNS92] GsonUtility.HandleValueGsonTypeAdapter) ----

type JsonObject = Record<string, unknown>

/** index, type, data, permissions, ttl, timestamp, references (only if non-empty), then anything else. */
function orderValue(value: HandleValue): JsonObject {
  const { index, type, data, permissions, ttl, timestamp, references, ...rest } = value
  const out: JsonObject = { index, type, data: orderData(data) }
  if (permissions !== undefined) out.permissions = permissions
  if (ttl !== undefined) out.ttl = ttl
  if (timestamp !== undefined) out.timestamp = timestamp
  if (references !== undefined && !(Array.isArray(references) && references.length === 0)) {
    out.references = Array.isArray(references) ? references.map((ref) => keysFirst(ref, VALUE_REFERENCE_KEYS)) : references
  }
  for (const [k, v] of Object.entries(rest)) setOwn(out, k, v)
  return out
}

const VALUE_REFERENCE_KEYS = ['handle', 'index']
const ADMIN_KEYS = ['handle', 'index', 'permissions', 'legacyByteLength']
const PUBLIC_KEY_KEYS = ['kty', 'n', 'e', 'y', 'p', 'q', 'g']

/** `{format, value}`, with the value's own keys in Gson's order for the formats whose shape is fixed. */
function orderData(data: unknown): unknown {
  if (!isPlainObject(data)) return data
  const ordered = keysFirst(data, ['format', 'value'])
  if (!isPlainObject(ordered)) return ordered
  const value = ordered.value
  switch (ordered.format) {
    case 'admin':
      ordered.value = keysFirst(value, ADMIN_KEYS)
      break
    case 'key':
      ordered.value = keysFirst(value, PUBLIC_KEY_KEYS)
      break
    case 'vlist':
      ordered.value = mapArray(value, (ref) => keysFirst(ref, VALUE_REFERENCE_KEYS))
      break
    case 'site':
      ordered.value = orderSite(value)
      break
    // unknown formats keep the upstream's order
  }
  return ordered
}

const SITE_KEYS = [
  'version',
  'protocolVersion',
  'serialNumber',
  'primarySite',
  'multiPrimary',
  'hashOption',
  'hashFilter',
  'attributes',
  'servers'
]
const SERVER_KEYS = ['serverId', 'address', 'publicKey', 'interfaces']
const INTERFACE_KEYS = ['query', 'admin', 'protocol', 'port']
const ATTRIBUTE_KEYS = ['name', 'value']

/** HS_SITE ([HNS92] SiteInfo/ServerInfo/InterfaceGsonTypeAdapter); the server key is `{format, value}` like data. */
function orderSite(site: unknown): unknown {
  const ordered = keysFirst(site, SITE_KEYS)
  if (!isPlainObject(ordered)) return ordered
  if (ordered.attributes !== undefined) ordered.attributes = mapArray(ordered.attributes, (a) => keysFirst(a, ATTRIBUTE_KEYS))
  if (ordered.servers !== undefined) ordered.servers = mapArray(ordered.servers, orderServer)
  return ordered
}

function orderServer(server: unknown): unknown {
  const ordered = keysFirst(server, SERVER_KEYS)
  if (!isPlainObject(ordered)) return ordered
  if (ordered.publicKey !== undefined) ordered.publicKey = orderData(ordered.publicKey)
  if (ordered.interfaces !== undefined) ordered.interfaces = mapArray(ordered.interfaces, (i) => keysFirst(i, INTERFACE_KEYS))
  return ordered
}

function mapArray(x: unknown, f: (item: unknown) => unknown): unknown {
  return Array.isArray(x) ? x.map(f) : x
}

/** A copy of `obj` with `keys` (those present) first, in that order, then the rest; non-objects as they are. */
function keysFirst(obj: unknown, keys: readonly string[]): unknown {
  if (!isPlainObject(obj)) return obj
  const out: JsonObject = {}
  for (const k of keys) if (Object.hasOwn(obj, k) && obj[k] !== undefined) out[k] = obj[k]
  for (const [k, v] of Object.entries(obj)) if (!Object.hasOwn(out, k)) setOwn(out, k, v)
  return out
}

/** Plain assignment of an upstream key named '__proto__' would change the prototype and lose the field. */
function setOwn(obj: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
}

function isPlainObject(x: unknown): x is JsonObject {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}
