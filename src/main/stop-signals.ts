/**
 * Within this long of the first, another SIGTERM or SIGINT is the same one delivered twice: a
 * terminal's Ctrl-C signals the whole process group, and npm passes it on to its script once more.
 */
export const DOUBLED_SIGNAL_MS = 1000

/**
 * SIGTERM and SIGINT, heard for the whole life of the process: `first` for the first, `again` for one
 * that comes later than DOUBLED_SIGNAL_MS after it (a person pressing Ctrl-C a second time). The
 * listeners are never removed: a signal without a listener has its default action, and a doubled
 * Ctrl-C landing in that moment (close-with-grace's once-listener leaves it open) killed the server
 * before its drain and last snapshot.
 */
export function onStopSignals(first: (signal: NodeJS.Signals) => void, again: (signal: NodeJS.Signals) => void): void {
  let firstAt: number | undefined
  const heard = (signal: NodeJS.Signals): void => {
    if (firstAt === undefined) {
      firstAt = performance.now()
      first(signal)
    } else if (performance.now() - firstAt >= DOUBLED_SIGNAL_MS) {
      again(signal)
    }
  }
  process.on('SIGTERM', heard)
  process.on('SIGINT', heard)
}
