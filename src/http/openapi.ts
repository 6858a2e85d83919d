/** The OpenAPI 3.1 description served at /api/openapi.json: the REST API, the batch API, Which RA? and the cache purge, as we serve them. */

const handleValue = {
  type: 'object',
  required: ['index', 'type', 'data', 'ttl'],
  properties: {
    index: { type: 'integer' },
    type: { type: 'string', examples: ['URL', 'HS_ADMIN', '10320/loc'] },
    data: {
      type: 'object',
      required: ['format', 'value'],
      properties: { format: { type: 'string', examples: ['string', 'admin', 'vlist', 'site', 'key', 'base64'] }, value: {} }
    },
    permissions: { type: 'string', description: 'Only when not the usual admin read/write, public read.' },
    ttl: {
      oneOf: [
        { type: 'integer', description: 'relative seconds' },
        { type: 'string', format: 'date-time', description: 'absolute expiry' }
      ]
    },
    timestamp: { type: 'string', format: 'date-time' },
    references: { type: 'array' }
  }
}

const purgeAnswer = {
  type: 'object',
  required: ['doi', 'held', 'redis', 'told', 'message'],
  properties: {
    doi: { type: 'string' },
    held: { type: 'boolean', description: 'Whether the replica that answered held an answer for it.' },
    redis: { enum: ['deleted', 'none', 'failed'], description: 'Its copy in Redis deleted; none: no Redis configured.' },
    told: {
      enum: ['redis', 'host', 'failed'],
      description: "The other replicas told through Redis; host: no Redis, this host's workers only."
    },
    message: { type: 'string' }
  }
}

// A refusal's JSON body, the same for each: one line saying why.
const messageAnswer = { type: 'object', properties: { message: { type: 'string' } } }

const apiAnswer = {
  type: 'object',
  required: ['responseCode'],
  properties: {
    responseCode: {
      type: 'integer',
      description:
        "1 success, 2 error (upstream failure), 4 bad request, 100 handle not found, 102 invalid handle, 200 values not found, 301 not in an offline resolver's local records"
    },
    handle: { type: 'string' },
    values: { type: 'array', items: handleValue },
    message: { type: 'string' }
  }
}

const json = (description: string, schema: object) => ({ description, content: { 'application/json': { schema } } })

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'doi-proxy',
    version: '0.1.0',
    description:
      'A self-hosted DOI resolver. Besides `/{doi}` redirects it serves the Handle REST API and Which RA? exactly as doi.org does, from its cache.'
  },
  paths: {
    '/api/handles/{handle}': {
      get: {
        summary: 'The handle record (Handle REST API)',
        description:
          'The record as the upstream Handle REST API returns it, with the reference key order. HS_ALIAS values are returned, not followed. Also answers HEAD.',
        parameters: [
          {
            name: 'handle',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description: 'The DOI or handle, percent-encoded where needed (# as %23, ? as %3F). No `doi:` prefix is stripped.'
          },
          {
            name: 'type',
            in: 'query',
            schema: { type: 'array', items: { type: 'string' } },
            style: 'form',
            explode: true,
            description: 'Only values of these types; a trailing `.` is a prefix match. Union with `index`.'
          },
          {
            name: 'index',
            in: 'query',
            schema: { type: 'array', items: { type: 'integer' } },
            style: 'form',
            explode: true,
            description: 'Only values with these indexes. A non-integer is a 400 with responseCode 4.'
          },
          {
            name: 'pretty',
            in: 'query',
            schema: { type: 'string' },
            description: 'Indent the JSON by 2 spaces (true when empty, `yes` or `true`).'
          },
          {
            name: 'callback',
            in: 'query',
            schema: { type: 'string' },
            description:
              'JSONP: the answer is `callback(json);` as application/javascript. Characters other than letters, digits, `_` and `$` become `_`.'
          },
          {
            name: 'auth',
            in: 'query',
            schema: { type: 'string' },
            description: 'Bypass the cache and ask the upstream authoritatively (true when empty, `yes` or `true`).'
          },
          {
            name: 'cert',
            in: 'query',
            schema: { type: 'string' },
            description: 'Ask the upstream for a certified answer; bypasses the cache.'
          }
        ],
        responses: {
          200: json('Found (responseCode 1), or values not found for the filters (responseCode 200, empty `values`).', apiAnswer),
          400: json('Bad request: non-integer index (responseCode 4) or empty/invalid handle (responseCode 102).', apiAnswer),
          404: json('Handle not found (responseCode 100); with OFFLINE=true, not in the local records (responseCode 301).', apiAnswer),
          414: json('Handle too long.', apiAnswer),
          502: json('The upstream failed or is unreachable (responseCode 2).', apiAnswer),
          503: json('Too busy to ask the upstream now (responseCode 2).', apiAnswer),
          504: json(
            'The upstream did not answer in time, or the request said `Cache-Control: only-if-cached` and the record is not held (responseCode 2).',
            apiAnswer
          )
        }
      }
    },
    '/api/batch': {
      post: {
        summary: 'Check many DOIs at once',
        description:
          'One DOI a line (text/plain; blank lines and lines starting with `#` are skipped; any other content type is read as text too) or a JSON array of strings. ' +
          'Each line is read as `GET /{doi}` reads its path (`doi:`, `urn:doi:`, `https://doi.org/…`, percent-encoding, shortDOIs such as `10/abc`) and resolved through the same cache and fair queue; ' +
          "no landing page is ever contacted. The answer is NDJSON, streamed, one object per line in input order. A name asked twice is looked up once, whatever its record's TTL. " +
          'With `Cache-Control: only-if-cached`, nothing is looked up: held lines answer, each other line is `registered: null` with status 504. ' +
          'Limits (settings): BATCH_MAX_LINES lines and BATCH_MAX_BYTES bytes per batch (413 naming the limit), BATCH_CONCURRENCY lookups at once. ' +
          "The rate limit (RATE_LIMIT_MAX) counts one lookup for each distinct line neither cached nor local; a lookup refused after the answer started is that line's 429 or 503, with `retryAfter`. Send one batch at a time per client. " +
          'With `?verify=metadata,retraction,landing` (the levels VERIFY_LEVELS allows; another is 400), each registered line also gets `metadata`, `retraction` and `landing` objects for the levels asked (null on the other lines), and a JSON item may be `{"doi", "title", "year", "author"}`, the work its reference cites; the landing level visits the registered URL (never doi.org), politely. A verifying answer sends a blank line while the next line waits (readers skip blank lines).',
        parameters: [
          {
            name: 'verify',
            in: 'query',
            required: false,
            description: 'A comma list of metadata, retraction, landing: what to check of each registered line (docs/checking-dois.md).',
            schema: { type: 'string' },
            example: 'metadata,retraction,landing'
          }
        ],
        requestBody: {
          required: true,
          content: {
            'text/plain': {
              schema: { type: 'string' },
              examples: { lines: { value: '# my paper\n10.1000/182\ndoi:10.1038/nphys1170\nhttps://doi.org/10.5555/missing\n' } }
            },
            'application/json': {
              schema: {
                type: 'array',
                items: {
                  oneOf: [
                    { type: 'string' },
                    {
                      type: 'object',
                      required: ['doi'],
                      properties: {
                        doi: { type: 'string' },
                        title: { type: 'string', maxLength: 1000 },
                        year: { type: 'integer', minimum: 1000, maximum: 2999 },
                        author: { type: 'string', maxLength: 200, description: 'The first author as the reference writes it.' }
                      }
                    }
                  ]
                }
              },
              examples: {
                array: { value: ['10.1000/182', '10/abc'] },
                cited: { value: [{ doi: '10.1038/nphys1170', title: 'Measured measurement', year: 2009, author: 'Aspelmeyer, M.' }] }
              }
            }
          }
        },
        responses: {
          200: {
            description: 'One JSON object a line, in input order, streamed as the lookups finish.',
            content: {
              'application/x-ndjson': {
                schema: {
                  type: 'object',
                  required: ['input', 'doi', 'registered', 'url', 'source', 'status'],
                  properties: {
                    input: { type: 'string', description: 'The line as sent.' },
                    doi: {
                      type: ['string', 'null'],
                      description:
                        'The DOI as the registry holds it, aliases (a shortDOI) followed to their target; null when not registered or unknown.'
                    },
                    registered: {
                      type: ['boolean', 'null'],
                      description:
                        'null when we could not find out (an upstream failure; offline, a name not in the local records, which may well be registered): `error` says why.'
                    },
                    url: {
                      type: ['string', 'null'],
                      description:
                        'Where a plain `GET /{doi}` from a browser redirects to (for an alias, our own URL of its target, as doi.org answers); null when it does not redirect.'
                    },
                    source: {
                      enum: ['local', 'copy', 'cache', 'upstream', null],
                      description:
                        'Where the answer came from: the local records, the registry copy (`REGISTRY_COPY`; offline, its absence too), the cache, the upstream; null for a line that is not a DOI name, and under `Cache-Control: only-if-cached` for a name not held.'
                    },
                    status: {
                      type: ['integer', 'null'],
                      description:
                        'The HTTP status `GET /{doi}` answers (302, 301, 404, 200 for the values page, 502–504 for an upstream failure, 504 under `Cache-Control: only-if-cached` for a name not held); null for every line that is not a DOI name (empty, malformed, or not a DOI), which is never looked up.'
                    },
                    error: {
                      type: 'string',
                      description: 'One line: why the line is not a DOI name (`not a DOI name: …`), or why it could not be checked.'
                    },
                    retryAfter: {
                      type: 'integer',
                      description:
                        "With a 429 or 503 line (a limit reached mid-batch, the client's share of the queue full, load shedding, the registry asking us to wait): seconds to wait before asking about this line again, as Retry-After says."
                    },
                    metadata: {
                      type: ['object', 'null'],
                      description:
                        '`?verify=metadata`: `verdict` match, mismatch or unverifiable; `mismatches` [{field: title|year|author, cited, registered}]; `kind` other-work (the title differs) or details; `why` (unverifiable).'
                    },
                    retraction: {
                      type: ['object', 'null'],
                      description:
                        '`?verify=retraction`: `verdict` retracted, corrected, expression-of-concern, none, or null with `error` (could not be found out); `notice` (its DOI) and `date` (YYYY-MM-DD).'
                    },
                    landing: {
                      type: ['object', 'null'],
                      description:
                        '`?verify=landing`: `verdict` alive, unconfirmed, blocked, dead, or null with `error`; `status` (the last HTTP status), `url` (the final URL), `evidence` (one line).'
                    }
                  }
                }
              }
            }
          },
          400: json(
            'The JSON body is not an array of strings and objects with a `doi`, or `?verify=` names a level this server does not run.',
            messageAnswer
          ),
          413: json('More lines than BATCH_MAX_LINES or more bytes than BATCH_MAX_BYTES; `limit` names which.', {
            type: 'object',
            properties: { message: { type: 'string' }, limit: { enum: ['BATCH_MAX_LINES', 'BATCH_MAX_BYTES'] } }
          }),
          429: json(
            'Rate limited before the answer started (only when some line needs the upstream); Retry-After says when to come back. Later refusals are answered per line.',
            messageAnswer
          ),
          503: json('Too busy to ask the upstream now (load shedding); Retry-After says when to come back.', messageAnswer)
        }
      }
    },
    '/doiRA/{dois}': {
      get: {
        summary: 'Which RA? — the registration agency of each DOI',
        description:
          '`/ra/{dois}` is a synonym. DOIs are comma-separated; encode a comma inside a DOI as %2C. The answer is in input order. ' +
          '"Unknown" when the RA cannot be told, and for a DOI we cannot look up (offline, one not in the local records): never "DOI does not exist" then.',
        parameters: [
          {
            name: 'dois',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            examples: { one: { value: '10.1000/182' }, many: { value: '10.1000/182,10.5555/x' } }
          }
        ],
        responses: {
          200: json('One entry per DOI.', {
            type: 'array',
            items: {
              oneOf: [
                {
                  type: 'object',
                  required: ['DOI', 'RA'],
                  properties: { DOI: { type: 'string' }, RA: { type: 'string', examples: ['Crossref', 'DataCite', 'mEDRA'] } }
                },
                {
                  type: 'object',
                  required: ['DOI', 'status'],
                  properties: { DOI: { type: 'string' }, status: { enum: ['Invalid DOI', 'DOI does not exist', 'Unknown'] } }
                }
              ]
            }
          }),
          400: json('More DOIs than the configured maximum.', messageAnswer)
        }
      }
    },
    '/api/cache/{doi}': {
      delete: {
        summary: 'Purge a DOI from the cache, on every replica',
        description:
          "For the operator: drops the DOI's cached answer (found or not found) from every cache tier (memory, the snapshot file, Redis, open access) of every replica (told through Redis) and worker. Off unless ADMIN_TOKEN is set. A not-found is otherwise kept NEGATIVE_TTL_SECONDS (60 s by default). Never cached.",
        security: [{ adminToken: [] }],
        parameters: [{ name: 'doi', in: 'path', required: true, schema: { type: 'string' }, examples: { one: { value: '10.1000/182' } } }],
        responses: {
          200: json('Dropped everywhere we know of.', purgeAnswer),
          400: json('Not a DOI name.', messageAnswer),
          401: json('No Authorization: Bearer <ADMIN_TOKEN>, or another token. WWW-Authenticate: Bearer.', messageAnswer),
          404: json('Purging is off: ADMIN_TOKEN is not set.', messageAnswer),
          503: json(
            'Dropped here, but Redis did not take the delete or the message: other replicas may keep their copy until it expires. Try again.',
            purgeAnswer
          )
        }
      }
    }
  },
  components: {
    securitySchemes: {
      adminToken: { type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN setting.' }
    }
  }
} as const

/** The document as served, serialised once. */
export const OPENAPI_JSON = JSON.stringify(OPENAPI_DOCUMENT, null, 2)
