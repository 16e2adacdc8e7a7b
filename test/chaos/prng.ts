/**
 * A small seeded PRNG (mulberry32) so that every chaos run is chosen from its seed alone:
 * the fault, its target and the moment it strikes. Timing still varies between replays;
 * the choices do not.
 */
export interface Rng {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(probability: number): boolean;
}

export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    seed: seed >>> 0,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick(items) {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[Math.floor(next() * items.length)]!;
    },
    chance: (probability) => next() < probability,
  };
}

/** The seed of run `index` of a series starting at `base`: `base + index`, so `CHAOS_SEED=<printed seed> CHAOS_RUNS=1` replays one run. */
export function runSeed(base: number, index: number): number {
  return (base + index) >>> 0;
}
