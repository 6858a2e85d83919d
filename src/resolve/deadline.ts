/**
 * Wait for `pending` no longer than the request's deadline (behaviour.md §9), on the performance.now()
 * clock; past it, reject with `late()`. The work itself goes on (its outcome may still be stored):
 * only this waiter stops waiting.
 */
export async function within<T> (pending: Promise<T>, deadline: number | undefined, late: () => Error): Promise<T> {
  if (deadline === undefined || deadline === Infinity) return await pending
  const left = deadline - performance.now()
  if (left <= 0) throw late()
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([pending, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(late()), left)
    })])
  } finally {
    clearTimeout(timer)
  }
}
