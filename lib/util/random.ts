/**
 * A small seeded PRNG (xoshiro128**), so that weight init, LoRA init and sampling are
 * reproducible from a seed and the generator's state can be saved and restored exactly.
 *
 * @module
 */

/** Serialisable generator state: four 32-bit words. */
export type RngState = [number, number, number, number];

/**
 * Seeded random number generator.
 *
 * @example
 * const rng = new Rng(42);
 * rng.uniform(); // in [0, 1)
 * rng.normal();  // standard normal
 */
export class Rng {
  #s: Uint32Array;

  /** Seeds the generator; any integer (including > 2^32 and negative) is accepted. */
  constructor(seed: number | bigint = 0) {
    // splitmix64 expands the seed into four well-mixed words, as xoshiro's authors recommend.
    let x = BigInt.asUintN(64, BigInt(seed));
    const s = new Uint32Array(4);
    for (let i = 0; i < 2; i++) {
      x = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n);
      let z = x;
      z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
      z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
      z = z ^ (z >> 31n);
      s[2 * i] = Number(z & 0xffffffffn);
      s[2 * i + 1] = Number(z >> 32n);
    }
    if (s[0] === 0 && s[1] === 0 && s[2] === 0 && s[3] === 0) s[0] = 1;
    this.#s = s;
  }

  /** Restores a generator from {@link Rng.state}. */
  static fromState(state: RngState): Rng {
    const r = new Rng(0);
    r.#s = Uint32Array.from(state);
    return r;
  }

  /** The current state; `Rng.fromState(rng.state())` continues the same stream. */
  state(): RngState {
    const s = this.#s;
    return [s[0], s[1], s[2], s[3]];
  }

  /** Next uniformly distributed 32-bit unsigned integer. */
  nextU32(): number {
    const s = this.#s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform float in [0, 1) with 53 bits of randomness. */
  uniform(): number {
    const hi = this.nextU32() >>> 5;
    const lo = this.nextU32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.uniform() * n);
  }

  /** Standard normal sample (Box-Muller). */
  normal(): number {
    const u = 1 - this.uniform(); // (0, 1], keeps log finite
    const v = this.uniform();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Fills a new Float32Array with normal(0, std) samples. */
  normalArray(n: number, std = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal() * std;
    return out;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * The held-out env seeds: evaluation (the trainer's, the run API's, the benchmarks') plays one
 * episode on each of `first`, `first + 1`, ... and {@link deriveSeed}, the source of every
 * training seed, never returns one of them, so no run trains on an evaluation episode. The block
 * starts at 1,000,000 (where the learning benchmark's held-out set has always been); `count` is
 * the most episodes one evaluation plays.
 */
export const HELD_OUT_ENV_SEEDS = { first: 1_000_000, count: 100_000 } as const;

/** Whether `seed` is one of the {@link HELD_OUT_ENV_SEEDS}. */
export function isHeldOutEnvSeed(seed: number): boolean {
  return seed >= HELD_OUT_ENV_SEEDS.first &&
    seed < HELD_OUT_ENV_SEEDS.first + HELD_OUT_ENV_SEEDS.count;
}

/**
 * The env seeds of `n` held-out episodes: the held-out block's seeds `from` … `from + n - 1`
 * (default the first `n`). A caller that needs two disjoint sets (e.g. a validation set for a
 * stopping rule beside the reported held-out set) takes them from different `from`.
 *
 * @example
 * heldOutEnvSeeds(3); // [1000000, 1000001, 1000002]
 * heldOutEnvSeeds(2, 256); // [1000256, 1000257]
 */
export function heldOutEnvSeeds(n: number, from = 0): number[] {
  if (
    !Number.isInteger(n) || !Number.isInteger(from) || n < 0 || from < 0 ||
    from + n > HELD_OUT_ENV_SEEDS.count
  ) {
    throw new RangeError(
      `held-out episodes must be integers inside 0 … ${HELD_OUT_ENV_SEEDS.count} (got ${n} from ${from})`,
    );
  }
  return Array.from({ length: n }, (_, i) => HELD_OUT_ENV_SEEDS.first + from + i);
}

/**
 * A 31-bit seed derived from a base seed and a path of integers (e.g. step, group, episode,
 * attempt): the same path gives the same seed, different paths unrelated ones. Derived seeds
 * leave room below 2^31 for `seed + turn`, since a multi-turn episode samples turn t with
 * seed + t, and are never {@link HELD_OUT_ENV_SEEDS} (a hash that lands there is mixed again,
 * which moves about one derived seed in 20,000 and no other). Every derived seed in the project
 * (env seeds of a step's groups, sampler seeds of episodes, judge seeds) comes from here, so a
 * run's randomness is a function of its seed.
 *
 * @example
 * const envSeed = deriveSeed(cfg.seed, step, group);
 * const samplerSeed = deriveSeed(cfg.seed, step, group, episode, attempt);
 */
export function deriveSeed(base: number, ...path: number[]): number {
  let h = base | 0;
  for (const x of path) h = mix(h, x);
  let seed = (h >>> 1) % (2 ** 31 - 1024);
  while (isHeldOutEnvSeed(seed)) {
    h = mix(h, seed);
    seed = (h >>> 1) % (2 ** 31 - 1024);
  }
  return seed;
}

function mix(h: number, x: number): number {
  h = Math.imul(h ^ x, 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}
