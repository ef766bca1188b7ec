/**
 * A prefix cache for the local sampler: the keys and values of sequences the sampler has
 * already run, kept on the device so that a later prompt sharing their beginning only runs
 * its new tokens (as vLLM's automatic prefix caching does).
 *
 * Why it pays in RL: a multi-turn episode's next prompt is the previous prompt, the sampled
 * move and the environment's reply, so without a cache every turn re-runs the whole
 * conversation; and every episode of a GuessTheNumber batch opens with the same rules text.
 * The keys and values at position `p` depend only on tokens `≤ p`, so a stored sequence
 * serves any prompt for as many tokens as the two have in common, even when they diverge
 * later.
 *
 * Entries belong to an owner (one {@link LocalSampler}: one set of weights); lookups only see the
 * owner's entries. An entry is one row of keys and values in the engine's own form: jax-js
 * device arrays ({@link KvCache}, the default) or host arrays for ONNX Runtime
 * (`HostKvCache`, with {@link CacheEntries} of its own). The byte budget is shared by all owners, least recently used first out,
 * so a backend holding many samplers still bounds the device memory of their caches.
 *
 * @module
 */

import { disposeCache, type KvCache } from "./device.ts";

/** Prefixes shorter than this are run again rather than looked up: too little to save. */
export const MIN_CACHED_PREFIX = 32;

/** How the cache handles one engine's rows of keys and values. */
export interface CacheEntries<C> {
  /** The sampler engine whose rows these are. */
  engine: "jax" | "onnx";
  /** Memory a row holds. */
  bytes(c: C): number;
  /** Frees a row. */
  dispose(c: C): void;
  /** A reference to a stored row that the caller consumes (or may read, for host rows). */
  share(c: C): C;
}

/** jax-js device rows: reference-counted arrays. */
const DEVICE_ENTRIES: CacheEntries<KvCache> = {
  engine: "jax",
  bytes: cacheBytes,
  dispose: disposeCache,
  share: (c) => ({ k: c.k.map((a) => a.ref), v: c.v.map((a) => a.ref) }),
};

interface Entry<C> {
  owner: object;
  tokens: Int32Array;
  /** One row, `S ≥ tokens.length` slots; slots past the tokens unused. */
  cache: C;
  bytes: number;
}

/** A hit: the first `length` positions of `cache` hold the prompt's keys and values. */
export interface PrefixHit<C = KvCache> {
  /** How many leading positions of the prompt the entry holds. */
  length: number;
  /** A new reference to the entry's row; the caller consumes it. */
  cache: C;
}

/**
 * Device-resident keys and values of recently run sequences, bounded in bytes.
 *
 * @example
 * const cache = new PrefixCache(128 * 2 ** 20);
 * cache.insert(sampler, tokens, rowCache);           // after generating `tokens`
 * const hit = cache.lookup(sampler, nextPrompt);      // later: reuse the common prefix
 */
export class PrefixCache<C = KvCache> {
  /** Bytes the entries may hold in all. */
  readonly budgetBytes: number;
  /** The sampler engine whose rows it holds. */
  readonly engine: "jax" | "onnx";
  readonly #rows: CacheEntries<C>;
  /** Least recently used first. */
  #entries: Entry<C>[] = [];
  #bytes = 0;
  #hits = 0;
  #misses = 0;
  #savedTokens = 0;

  /** A cache of at most `budgetBytes`, over the device's rows unless `rows` says how entries are kept. */
  constructor(budgetBytes: number, rows?: CacheEntries<C>) {
    if (!(budgetBytes >= 0)) throw new Error(`PrefixCache: budget must be ≥ 0, got ${budgetBytes}`);
    this.budgetBytes = budgetBytes;
    this.#rows = rows ?? (DEVICE_ENTRIES as unknown as CacheEntries<C>);
    this.engine = this.#rows.engine;
  }

  /**
   * The owner's entry sharing the longest prefix with `prompt`, capped at
   * `prompt.length - 1` (the last prompt token must run to give the first draw) and rounded
   * down to a multiple of `block` (a sampler that runs prompts in blocks reuses whole ones).
   * Null when that prefix is shorter than {@link MIN_CACHED_PREFIX}, or when `usable` says the
   * entry cannot serve it (a windowed model's ring keeps only the window before its end).
   */
  lookup(
    owner: object,
    prompt: Int32Array,
    block = 1,
    usable?: (cache: C, length: number) => boolean,
  ): PrefixHit<C> | null {
    let best: Entry<C> | null = null, bestLength = 0;
    for (const e of this.#entries) {
      if (e.owner !== owner || e.tokens[0] !== prompt[0]) continue;
      const n = commonPrefix(e.tokens, prompt);
      if (n > bestLength) [best, bestLength] = [e, n];
    }
    const length = Math.floor(Math.min(bestLength, prompt.length - 1) / block) * block;
    if (!best || length < MIN_CACHED_PREFIX || (usable && !usable(best.cache, length))) {
      this.#misses++;
      return null;
    }
    this.#hits++;
    this.#savedTokens += length;
    this.#touch(best);
    return { length, cache: this.#rows.share(best.cache) };
  }

  /**
   * Stores the keys and values of `tokens` (one row, consumed). Entries of the owner whose
   * tokens are a prefix of `tokens` go: the new one serves every prompt they served.
   */
  insert(owner: object, tokens: Int32Array, cache: C): void {
    const bytes = this.#rows.bytes(cache);
    if (tokens.length < MIN_CACHED_PREFIX || bytes > this.budgetBytes) {
      this.#rows.dispose(cache);
      return;
    }
    this.#remove((e) =>
      e.owner === owner && e.tokens.length <= tokens.length &&
      commonPrefix(e.tokens, tokens) === e.tokens.length
    );
    this.#entries.push({ owner, tokens, cache, bytes });
    this.#bytes += bytes;
    while (this.#bytes > this.budgetBytes) this.#evict(this.#entries[0]);
  }

  /** Frees every entry of `owner` (its weights are gone). */
  drop(owner: object): void {
    this.#remove((e) => e.owner === owner);
  }

  /** Entries, bytes held, lookups that hit or missed, and prompt tokens not run again. */
  get stats(): {
    entries: number;
    bytes: number;
    hits: number;
    misses: number;
    savedTokens: number;
  } {
    return {
      entries: this.#entries.length,
      bytes: this.#bytes,
      hits: this.#hits,
      misses: this.#misses,
      savedTokens: this.#savedTokens,
    };
  }

  #touch(e: Entry<C>): void {
    this.#entries.splice(this.#entries.indexOf(e), 1);
    this.#entries.push(e);
  }

  #remove(match: (e: Entry<C>) => boolean): void {
    for (const e of this.#entries.filter(match)) this.#evict(e);
  }

  #evict(e: Entry<C>): void {
    this.#entries.splice(this.#entries.indexOf(e), 1);
    this.#bytes -= e.bytes;
    this.#rows.dispose(e.cache);
  }
}

/** Length of the common prefix of two token sequences. */
export function commonPrefix(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function cacheBytes(cache: KvCache): number {
  let n = 0;
  for (const a of [...cache.k, ...cache.v]) n += a.size * 4;
  return n;
}
