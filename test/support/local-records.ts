/** Fixtures shared by the local store's tests: a record as a store-file line, and the URL a stored record points to. */
import type { HandleValue } from '../../src/handle/types.js'
import { valueString } from '../../src/handle/types.js'
import { str } from './records.js'

/** One record with one URL value, as a line of an .ndjson file (or a whole .json file). */
export const urlRecord = (handle: string, url: string): string => JSON.stringify({ handle, values: [str(1, 'URL', url)] })

export function urlOf(values: HandleValue[] | undefined): string | undefined {
  const v = values?.find((x) => x.type === 'URL')
  return v === undefined ? undefined : valueString(v)
}
