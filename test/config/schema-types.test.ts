import { describe, expect, expectTypeOf, it } from 'vitest'
import { buildConfig, defaultConfig, OPTIONS } from '../../src/config/schema.js'
import type { Config, Option, OptionTable } from '../../src/config/schema.js'

// The table and Config cannot drift: the `@ts-expect-error` lines below are checked by
// `tsc -p tsconfig.json` (npm run typecheck), which fails if any of them compiles.

describe('the settings table', () => {
  it("has exactly one row per Config field, each of its field's type", () => {
    expectTypeOf<keyof typeof OPTIONS>().toEqualTypeOf<keyof Config>()
    expectTypeOf(OPTIONS.port).toEqualTypeOf<Option<number>>()
    expectTypeOf(OPTIONS.logFormat.parse).returns.toEqualTypeOf<'auto' | 'json' | 'pretty'>()
    expect(Object.keys(OPTIONS)).toEqual(Object.keys(defaultConfig()))
  })

  it('does not compile with a Config field that has no row', () => {
    interface Wider extends Config {
      newSetting: number
    }
    // @ts-expect-error: newSetting has no row
    const table: OptionTable<Wider> = OPTIONS
    expect(table).toBe(OPTIONS)
  })

  it('does not compile with a row missing', () => {
    const { host, ...withoutHost } = OPTIONS
    // @ts-expect-error: host is missing
    const table: OptionTable<Config> = withoutHost
    expect(table).not.toHaveProperty('host')
    expect(host.env).toBe('HOST')
  })

  it('does not compile with a row that has no Config field', () => {
    // @ts-expect-error: newSetting is not a field of Config
    const table: OptionTable<Config> = { ...OPTIONS, newSetting: OPTIONS.port }
    expect(table).toHaveProperty('newSetting')
  })

  it('does not compile with a parser or default of another type than its field', () => {
    // @ts-expect-error: port is a number, not a string
    const parser: OptionTable<Config> = { ...OPTIONS, port: { ...OPTIONS.port, parse: () => '8000' } }
    // @ts-expect-error: logFormat is auto, json or pretty
    const wider: OptionTable<Config> = { ...OPTIONS, logFormat: { ...OPTIONS.logFormat, parse: (raw: unknown) => String(raw) } }
    // @ts-expect-error: port's default is a number
    const fallback: OptionTable<Config> = { ...OPTIONS, port: { ...OPTIONS.port, default: '8000' } }
    expect([parser, wider, fallback].map((table) => table.port.env)).toEqual(['PORT', 'PORT', 'PORT'])
  })

  it('does not compile with a `path` on a setting that is not text (only a path can name a file)', () => {
    // @ts-expect-error: port is a number
    const numbered: OptionTable<Config> = { ...OPTIONS, port: { ...OPTIONS.port, path: 'file to read' } }
    // @ts-expect-error: not one of the uses src/main/paths.ts checks
    const unknown: OptionTable<Config> = { ...OPTIONS, cacheFile: { ...OPTIONS.cacheFile, path: 'socket' } }
    expect([numbered.port.path, unknown.cacheFile.path]).toEqual(['file to read', 'socket'])
  })
})

describe('every default', () => {
  // A default outside its own setting's range or shape would be refused if written in the config file.
  for (const [key, option] of Object.entries(OPTIONS)) {
    if (option.default === undefined) continue
    it(`passes its own check when given in the config file: ${key}`, () => {
      expect(buildConfig({ [key]: option.default }, {})).toEqual(buildConfig(undefined, {}))
    })
  }
})
