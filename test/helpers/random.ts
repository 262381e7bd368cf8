/** Seeded randomness for the snapshot generator, the tests that need the same draws each run, and the benchmarks. */

/** mulberry32: a tiny, fast 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seeded random choices, from `mulberry32`. */
export class Random {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  /** An integer from min to max, both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!;
  }
  /** Up to `count` distinct items of the list. */
  some<T>(list: readonly T[], count: number): T[] {
    const out: T[] = [];
    for (let tries = 0; out.length < count && tries < count * 4; tries++) {
      const item = this.pick(list);
      if (!out.includes(item)) out.push(item);
    }
    return out;
  }
}
