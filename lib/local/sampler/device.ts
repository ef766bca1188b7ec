/**
 * The device side of sampling: a jitted prefill that fills a fixed-size KV cache, and a
 * jitted fixed-shape decode step that appends one token per row to it.
 *
 * Cache layout: per layer one key and one value array `[R, S, H, hd]` (rows, cache slots,
 * heads, head dim), the layout `dotProductAttention` takes. Slot `s` of row `r` holds the
 * key/value of position `s`. A step writes position `p` with a one-hot blend
 * (`where(slot == p, new, old)`: jax-js has no dynamic_update_slice) and attends under
 * the key mask `slot <= p`, so slots past a row's position (prompt padding, stale data of
 * a finished row) never contribute.
 *
 * Every jitted function lives in a module-level cache keyed by the graph-shaping options
 * only, so new weights never recompile; jax-js compiles once per input shape, which the
 * caller bounds by padding to power-of-two buckets.
 *
 * @module
 */

import { blockUntilReady, jit, nn, numpy as np } from "@jax-js/jax";
import { cachedJit, disposeTree, type ParamTree } from "../engine.ts";
import {
  type AttentionFn,
  blockForward,
  causalAttention,
  embedTokens,
  type ForwardSpec,
  gptForward,
  headLogits,
  splitStages,
} from "../model/gpt.ts";

/** Key and value caches, one `[R, S, H, hd]` array per layer. */
export type KvCache = {
  k: np.Array[];
  v: np.Array[];
};

/** Outputs of {@link prefill}. */
export type PrefillOutput = {
  /** Log-softmax of the logits at every prompt position, `[B, T, V]`, if asked for. */
  all?: np.Array;
  /** The log-distribution after each prompt's last position, `[B, V]`: the first draw. */
  last: np.Array;
  /** The prompt's keys/values, zero-padded to `slots` cache slots. */
  cache: KvCache;
};

/**
 * Runs right-padded prompts `tokens [B, T]` (int32) through the model. `lastIndex [B]` is
 * each prompt's last real position; `all` asks for every position's log-distribution (prompt
 * logprobs); `slots` 0 keeps no cache (nothing will be decoded). Consumes every argument.
 *
 * The model runs as one program per stage (embedding, each block, head), each awaited before
 * the next is issued: jax-js allocates all of a program's buffers before running it, so one
 * whole-model program would hold every layer's intermediates at once.
 */
export async function prefill(
  spec: ForwardSpec,
  slots: number,
  base: ParamTree,
  lora: ParamTree,
  tokens: np.Array,
  lastIndex: np.Array,
  all = false,
): Promise<PrefillOutput> {
  const stages = splitStages(base, lora);
  let x = await blockUntilReady(prefillEmbed(stages.embed.base, tokens));
  disposeTree(stages.embed.lora);
  const cache: KvCache = { k: [], v: [] };
  for (const b of stages.blocks) {
    const out = await blockUntilReady(prefillBlock(b.base, b.lora, x, { ...spec, slots }));
    x = out.y;
    if (out.k && out.v) {
      cache.k.push(out.k);
      cache.v.push(out.v);
    }
  }
  const head = await blockUntilReady(
    prefillHead(stages.head.base, stages.head.lora, x, lastIndex, { ...spec, all }),
  );
  return { ...head, cache };
}

const prefillEmbed = jit((p: ParamTree, tokens: np.Array) => embedTokens(p, tokens));

/** One block over the prompts; its keys and values come out padded to `slots` cache slots. */
const prefillBlock = jit(
  (
    base: ParamTree,
    lora: ParamTree,
    x: np.Array,
    s: ForwardSpec & { slots: number },
  ): Record<string, np.Array> => {
    const t = x.shape[1];
    let k: np.Array | undefined, v: np.Array | undefined;
    // Padded positions are causally after the real ones, so they never affect them.
    const attend: AttentionFn = (layer, q, kk, vv) => {
      if (s.slots > 0) {
        k = np.pad(kk.ref, { 1: [0, s.slots - t] });
        v = np.pad(vv.ref, { 1: [0, s.slots - t] });
      }
      return causalAttention(layer, q, kk, vv);
    };
    const y = blockForward(base, lora, x, s, 0, attend);
    return k && v ? { y, k, v } : { y };
  },
  { staticArgnums: [3] },
);

/**
 * The head over the prompts: the log-distribution after each prompt's last position and, with
 * `all`, after every position. Without `all` only the last positions go through the head.
 */
const prefillHead = jit(
  (
    base: ParamTree,
    lora: ParamTree,
    x: np.Array,
    lastIndex: np.Array,
    s: ForwardSpec & { all: boolean },
  ): { all?: np.Array; last: np.Array } => {
    const [b, t] = x.shape;
    const isLast = np.equal(iota(t).reshape([1, t, 1]), lastIndex.reshape([b, 1, 1]));
    if (!s.all) {
      const xLast = np.where(isLast, x, 0).sum(1, { keepdims: true }); // [B, 1, D]
      const logits = headLogits(base, lora, xLast, s).reshape([b, -1]);
      return { last: nn.logSoftmax(logits, -1) };
    }
    const all = nn.logSoftmax(headLogits(base, lora, x, s), -1);
    return { all: all.ref, last: np.where(isLast, all, 0).sum(1) };
  },
  { staticArgnums: [4] },
);

/**
 * One decode step: feeds `tokens [R]` at `positions [R]` (int32), writes their keys/values
 * into the cache and returns the log-softmax of the next-token logits `[R, V]` with the
 * updated cache. Consumes every argument (including `cache`).
 */
export function decodeStep(
  spec: ForwardSpec,
  base: ParamTree,
  lora: ParamTree,
  cache: KvCache,
  tokens: np.Array,
  positions: np.Array,
): { logprobs: np.Array; cache: KvCache } {
  const f = cachedJit(
    `sampler.decode:${JSON.stringify(spec)}`,
    () =>
      jit(
        (
          base: ParamTree,
          lora: ParamTree,
          cache: KvCache,
          tokens: np.Array,
          positions: np.Array,
        ) => {
          const [r, s] = cache.k[0].shape;
          const pos = positions.reshape([r, 1]);
          const slots = iota(s).reshape([1, s]);
          const write = np.equal(slots.ref, pos.ref).reshape([r, s, 1, 1]);
          const visible = np.lessEqual(slots, pos.ref).reshape([r, 1, 1, s]);
          const next: KvCache = { k: [], v: [] };
          const attend: AttentionFn = (layer, q, k, v) => {
            const keys = np.where(write.ref, k, cache.k[layer]);
            const values = np.where(write.ref, v, cache.v[layer]);
            next.k.push(keys.ref);
            next.v.push(values.ref);
            return nn.dotProductAttention(q, keys, values, { mask: visible.ref });
          };
          const logits = gptForward(base, lora, tokens.reshape([r, 1]), spec, {
            positions: pos,
            attend,
          });
          write.dispose();
          visible.dispose();
          return { logprobs: nn.logSoftmax(logits.reshape([r, -1]), -1), cache: next };
        },
      ),
  );
  return f(base, lora, cache, tokens, positions);
}

/**
 * Continues cached prefixes: feeds each row's new tokens `tokens [B, T]` (int32,
 * right-padded) at positions `start[b] + 0..T-1`, writes their keys/values into `cache`
 * (`[B, S, H, hd]` per layer, holding each row's first `start[b]` positions) and attends
 * causally over the cache. Returns, like {@link prefill}, the log-distribution after each
 * row's last real token (`lastIndex [B]`, an index into `tokens`) and the updated cache.
 * Consumes every argument. Runs one program per stage, as {@link prefill} does.
 */
export async function extend(
  spec: ForwardSpec,
  base: ParamTree,
  lora: ParamTree,
  cache: KvCache,
  tokens: np.Array,
  start: np.Array,
  lastIndex: np.Array,
): Promise<{ last: np.Array; cache: KvCache }> {
  const stages = splitStages(base, lora);
  let x = await blockUntilReady(extendEmbed(stages.embed.base, tokens, start.ref));
  disposeTree(stages.embed.lora);
  const next: KvCache = { k: [], v: [] };
  for (const [i, b] of stages.blocks.entries()) {
    const out = await blockUntilReady(
      extendBlock(b.base, b.lora, x, cache.k[i], cache.v[i], start.ref, spec),
    );
    x = out.y;
    next.k.push(out.k);
    next.v.push(out.v);
  }
  start.dispose();
  const head = await blockUntilReady(
    prefillHead(stages.head.base, stages.head.lora, x, lastIndex, { ...spec, all: false }),
  );
  return { last: head.last, cache: next };
}

/** Positions `start[b] + 0..T-1` of the new tokens, `[B, T]`. */
function newPositions(start: np.Array, b: number, t: number): np.Array {
  return start.reshape([b, 1]).add(iota(t).reshape([1, t]));
}

const extendEmbed = jit((p: ParamTree, tokens: np.Array, start: np.Array) => {
  const [b, t] = tokens.shape;
  return embedTokens(p, tokens, newPositions(start, b, t));
});

/**
 * One block over the new tokens. The write is a one-hot matmul `[B, S, T] @ [B, T, H·hd]`
 * (jax-js has no scatter that jits): exact, since each slot sums one value with zeros.
 * Padding tokens write slots past the prompt, which decoding overwrites before it attends to
 * them.
 */
const extendBlock = jit(
  (
    base: ParamTree,
    lora: ParamTree,
    x: np.Array,
    oldK: np.Array,
    oldV: np.Array,
    start: np.Array,
    spec: ForwardSpec,
  ) => {
    const [b, t] = x.shape;
    const [, s, h, hd] = oldK.shape;
    const pos = newPositions(start, b, t);
    const slots = iota(s).reshape([1, s, 1]);
    const place = np.equal(slots.ref, pos.ref.reshape([b, 1, t])).astype(np.float32);
    const written = place.ref.sum(-1).reshape([b, s, 1, 1]).greater(0);
    const visible = np.lessEqual(slots.reshape([1, 1, s]), pos.reshape([b, t, 1]))
      .reshape([b, 1, t, s]);
    const scatter = (y: np.Array, old: np.Array) =>
      np.where(
        written.ref,
        np.matmul(place.ref, y.reshape([b, t, h * hd])).reshape([b, s, h, hd]),
        old,
      );
    let k!: np.Array, v!: np.Array;
    const attend: AttentionFn = (_layer, q, kk, vv) => {
      k = scatter(kk, oldK);
      v = scatter(vv, oldV);
      return nn.dotProductAttention(q, k.ref, v.ref, { mask: visible.ref });
    };
    const y = blockForward(base, lora, x, spec, 0, attend);
    place.dispose();
    written.dispose();
    visible.dispose();
    return { y, k, v };
  },
  { staticArgnums: [6] },
);

/**
 * A cache with `slots` slots: zero-padded when it has fewer, cut when it has more (the
 * caller only cuts slots no row uses). Consumes it.
 */
export function resizeSlots(cache: KvCache, slots: number): KvCache {
  const have = cache.k[0].shape[1];
  if (have === slots) return cache;
  if (have < slots) return growSlots(cache, slots);
  const f = cachedJit(`sampler.cutSlots:${slots}`, () =>
    jit((cache: KvCache) => {
      const cut = (c: np.Array) => c.slice([], [0, slots]);
      return { k: cache.k.map(cut), v: cache.v.map(cut) };
    }));
  return f(cache);
}

/** Rows `index [R']` (int32) of a cache, e.g. prompt caches → sample rows. Consumes both. */
export function gatherRows(cache: KvCache, index: np.Array): KvCache {
  const f = cachedJit("sampler.gatherRows", () =>
    jit((cache: KvCache, index: np.Array) => {
      const pick = (c: np.Array) => np.take(c, index.ref, 0);
      const out = { k: cache.k.map(pick), v: cache.v.map(pick) };
      index.dispose();
      return out;
    }));
  return f(cache, index);
}

/** Zero-pads a cache to `slots` slots (more room for longer rows). Consumes it. */
export function growSlots(cache: KvCache, slots: number): KvCache {
  const f = cachedJit(`sampler.growSlots:${slots}`, () =>
    jit((cache: KvCache) => {
      const grow = (c: np.Array) => np.pad(c, { 1: [0, slots - c.shape[1]] });
      return { k: cache.k.map(grow), v: cache.v.map(grow) };
    }));
  return f(cache);
}

/** Stacks caches along the row axis. Consumes them. */
export function concatRows(caches: KvCache[]): KvCache {
  if (caches.length === 1) return caches[0];
  const layers = caches[0].k.length;
  const join = (part: "k" | "v", l: number) => np.concatenate(caches.map((c) => c[part][l]), 0);
  return {
    k: Array.from({ length: layers }, (_, l) => join("k", l)),
    v: Array.from({ length: layers }, (_, l) => join("v", l)),
  };
}

/** Frees a cache. */
export function disposeCache(cache: KvCache): void {
  for (const a of [...cache.k, ...cache.v]) a.dispose();
}

/** `[0, 1, …, n-1]` as int32. */
function iota(n: number): np.Array {
  return np.arange(n, undefined, undefined, { dtype: np.int32 });
}
