// Command-line options shared by the benchmark runner and the soak.

/** Call `handle` for each option; `value()` takes the option's argument (the next word). */
export function forEachOption(argv: readonly string[], help: string, handle: (arg: string, value: () => string) => boolean): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ''
    const value = (): string => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${arg} needs a value`)
      return v
    }
    if (handle(arg, value)) continue
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(help + '\n')
      process.exit(0)
    }
    throw new Error(`unknown option "${arg}"\n${help}`)
  }
}

/** `--server-env KEY=VALUE`: add the pair to `env`, or say what is wrong with it. */
export function addEnvPair(pair: string, env: Record<string, string>): void {
  const eq = pair.indexOf('=')
  if (eq <= 0) throw new Error(`--server-env wants KEY=VALUE, got "${pair}"`)
  env[pair.slice(0, eq)] = pair.slice(eq + 1)
}
