/**
 * Map a list with at most `concurrency` calls in flight, yielding the results in input order, each as
 * soon as it and all before it are done. At most `window` results wait ahead of the reader, so a long
 * list streams in constant memory; nothing new starts once `signal` is aborted (a reader who left).
 * p-map and p-limit keep every result until the end or lose the order, so this is ours.
 */
export async function* mapInOrder<T, R>(
  items: readonly T[],
  fn: (item: T) => Promise<R>,
  opts: { concurrency: number; window: number; signal: AbortSignal }
): AsyncGenerator<R[]> {
  const { signal } = opts
  const window = Math.max(opts.window, opts.concurrency)
  let running = 0
  const slots: Array<() => void> = []
  const acquire = async (): Promise<void> => {
    if (running < opts.concurrency) {
      running++
      return
    }
    await new Promise<void>((resolve) => slots.push(resolve))
  }
  const release = (): void => {
    const next = slots.shift()
    if (next === undefined) running--
    else next()
  }
  const ahead: Array<Slot<R>> = []
  const start = (item: T): Slot<R> => {
    const slot: Slot<R> = { done: false, value: undefined, promise: undefined as unknown as Promise<void> }
    slot.promise = (async () => {
      await acquire()
      try {
        // A reader who left: the items not started yet are never looked up.
        if (signal.aborted) throw signal.reason
        slot.value = await fn(item)
        slot.done = true
      } finally {
        release()
      }
    })()
    // Rejections are taken where the slot is read; one left unread must not crash the process.
    slot.promise.catch(() => {})
    return slot
  }
  let next = 0
  while (next < items.length || ahead.length > 0) {
    while (next < items.length && ahead.length < window && !signal.aborted) ahead.push(start(items[next++] as T))
    if (signal.aborted) throw signal.reason
    await ahead[0]!.promise
    // Everything done at the head goes out at once, in one chunk.
    const out: R[] = []
    while (ahead.length > 0 && ahead[0]!.done) out.push(ahead.shift()!.value as R)
    yield out
  }
}

interface Slot<R> {
  done: boolean
  value: R | undefined
  promise: Promise<void>
}
