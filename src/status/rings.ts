/**
 * Fixed-size rings for the status page (issue 15): memory is decided when a ring is made and never
 * grows, whatever the traffic. Pure: no clock, no I/O.
 */

/** The last `capacity` numbers pushed, oldest first when read. */
export class NumberRing {
  private readonly data: Float64Array
  private start = 0
  private count = 0

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('a ring holds at least one value')
    this.data = new Float64Array(capacity)
  }

  get length(): number {
    return this.count
  }

  /** Adds a value; when full, the oldest one is dropped. */
  push(value: number): void {
    if (this.count < this.capacity) {
      this.data[(this.start + this.count) % this.capacity] = value
      this.count++
    } else {
      this.data[this.start] = value
      this.start = (this.start + 1) % this.capacity
    }
  }

  /** Adds to the newest value (pushes one when the ring is empty). */
  addToLast(delta: number): void {
    if (this.count === 0) {
      this.push(delta)
      return
    }
    const i = (this.start + this.count - 1) % this.capacity
    this.data[i] = (this.data[i] ?? 0) + delta
  }

  /** Raises the newest value to at least `value`. */
  maxIntoLast(value: number): void {
    if (this.count === 0) {
      this.push(value)
      return
    }
    const i = (this.start + this.count - 1) % this.capacity
    if ((this.data[i] ?? 0) < value) this.data[i] = value
  }

  /** The i-th value, oldest first. */
  at(i: number): number | undefined {
    if (i < 0 || i >= this.count) return undefined
    return this.data[(this.start + i) % this.capacity]
  }

  toArray(): number[] {
    const out = new Array<number>(this.count)
    for (let i = 0; i < this.count; i++) out[i] = this.data[(this.start + i) % this.capacity] ?? 0
    return out
  }

  sum(): number {
    let total = 0
    for (let i = 0; i < this.count; i++) total += this.data[(this.start + i) % this.capacity] ?? 0
    return total
  }
}

/** The last `capacity` items pushed, oldest first when read. */
export class ItemRing<T> {
  private readonly items: T[] = []
  private start = 0

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('a ring holds at least one item')
  }

  get length(): number {
    return this.items.length
  }

  push(item: T): void {
    if (this.items.length < this.capacity) {
      this.items.push(item)
    } else {
      this.items[this.start] = item
      this.start = (this.start + 1) % this.capacity
    }
  }

  /** The newest item. */
  last(): T | undefined {
    if (this.items.length === 0) return undefined
    return this.items[(this.start + this.items.length - 1) % this.items.length]
  }

  toArray(): T[] {
    return [...this.items.slice(this.start), ...this.items.slice(0, this.start)]
  }
}

/**
 * Several number rings that advance together, one slot per time step (e.g. 360 slots of 10 s: an
 * hour). Only the names given at construction exist, so the set of series is bounded too.
 */
export class SlotRings<Name extends string> {
  private readonly rings: Map<Name, NumberRing>

  constructor(
    readonly names: readonly Name[],
    readonly capacity: number
  ) {
    this.rings = new Map(names.map((n) => [n, new NumberRing(capacity)]))
  }

  get length(): number {
    return this.rings.values().next().value?.length ?? 0
  }

  /** Starts `count` new slots at zero in every series (at most a ring's capacity). */
  advance(count: number): void {
    const n = Math.min(Math.max(0, Math.floor(count)), this.capacity)
    for (const ring of this.rings.values()) for (let i = 0; i < n; i++) ring.push(0)
  }

  add(name: Name, delta: number): void {
    this.rings.get(name)?.addToLast(delta)
  }

  max(name: Name, value: number): void {
    this.rings.get(name)?.maxIntoLast(value)
  }

  series(name: Name): number[] {
    return this.rings.get(name)?.toArray() ?? []
  }

  sum(name: Name): number {
    return this.rings.get(name)?.sum() ?? 0
  }
}
