/** Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const EXIT_INTERRUPTED = 130

/**
 * Ctrl-C for a long command: the first stops its work through `signal` (saying what happens to the work in flight),
 * the second leaves at once. `dispose` gives SIGINT back.
 */
export function onInterrupt(write: (text: string) => void, inFlight: string): { signal: AbortSignal; dispose(): void } {
  const stop = new AbortController()
  const onSigint = (): void => {
    if (stop.signal.aborted) process.exit(EXIT_INTERRUPTED)
    write(`\nstopping: ${inFlight} (Ctrl-C again to quit now)\n`)
    stop.abort()
  }
  process.on('SIGINT', onSigint)
  return { signal: stop.signal, dispose: () => process.off('SIGINT', onSigint) }
}
