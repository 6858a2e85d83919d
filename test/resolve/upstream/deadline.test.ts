import { describe, expect, it } from 'vitest'
import { untilAborted, within } from '../../../src/resolve/upstream/deadline.js'

const late = (): Error => new Error('late')

describe('a waiter bounded by a deadline', () => {
  it('gets the value that comes before the deadline', async () => {
    await expect(within(Promise.resolve(7), performance.now() + 1_000, late)).resolves.toBe(7)
  })

  it('gives up at the deadline, with the error it was given', async () => {
    await expect(within(new Promise(() => {}), performance.now() + 20, late)).rejects.toThrow('late')
  })

  it('gives up at once when the deadline has passed', async () => {
    await expect(within(Promise.resolve(7), performance.now() - 1, late)).rejects.toThrow('late')
  })
})

describe('a waiter that leaves when its reader does', () => {
  it('gets the value while the signal has not aborted', async () => {
    await expect(untilAborted(Promise.resolve('v'), new AbortController().signal)).resolves.toBe('v')
  })

  it("leaves with the signal's reason as soon as it aborts, the work going on", async () => {
    const controller = new AbortController()
    let finish = (_v: string): void => {}
    const work = new Promise<string>((resolve) => {
      finish = resolve
    })
    const waiting = untilAborted(work, controller.signal)
    controller.abort(new Error('the reader left'))
    await expect(waiting).rejects.toThrow('the reader left')
    finish('done')
    await expect(work).resolves.toBe('done')
  })

  it('leaves at once when the signal has already aborted', async () => {
    const controller = new AbortController()
    controller.abort(new Error('gone'))
    await expect(untilAborted(Promise.resolve('v'), controller.signal)).rejects.toThrow('gone')
  })

  it('takes its listener off the signal when the value comes', async () => {
    const controller = new AbortController()
    let added = 0
    let removed = 0
    const signal = controller.signal
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      added++
      add(...args)
    }) as typeof add
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      removed++
      remove(...args)
    }) as typeof remove
    for (let i = 0; i < 20; i++) await untilAborted(Promise.resolve(i), signal)
    expect([added, removed]).toEqual([20, 20])
  })
})
