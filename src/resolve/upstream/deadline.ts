/**
 * Wait for `pending` no longer than the request's deadline (behaviour.md §9), on the performance.now()
 * clock; past it, reject with `late()`. The work itself goes on (its outcome may still be stored):
 * only this waiter stops waiting.
 */
export async function within<T>(pending: Promise<T>, deadline: number | undefined, late: () => Error): Promise<T> {
  if (deadline === undefined || deadline === Infinity) return await pending
  const left = deadline - performance.now()
  if (left <= 0) throw late()
  // One promise and one timer (Promise.race made three promises and their handlers, on every miss).
  return await new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(late()), left)
    pending.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(err)
      }
    )
  })
}

/**
 * Wait for `pending` until `signal` aborts; then reject with the signal's reason. As with `within`, the work goes
 * on: only this waiter leaves (a lookup others share, a robots.txt another page needs).
 */
export async function untilAborted<T>(pending: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return await pending
  signal.throwIfAborted()
  let onAbort = (): void => {}
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([pending, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}
