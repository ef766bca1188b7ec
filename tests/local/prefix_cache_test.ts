import { numpy as np } from "@jax-js/jax";
import { assert, assertClose } from "../assert.ts";
import { initEngine } from "../../lib/local/engine.ts";
import { initBaseParameters } from "../../lib/local/model/params.ts";
import { findLocalModel } from "../../lib/local/models.ts";
import { Rng } from "../../lib/util/random.ts";
import {
  type AnyPrefixCache,
  LocalSampler,
  PrefixCache,
  prefixCacheFor,
  type SampleJob,
  type SamplerEngine,
} from "../../lib/local/sampler/mod.ts";
import type { KvCache } from "../../lib/local/sampler/device.ts";
import { commonPrefix, MIN_CACHED_PREFIX } from "../../lib/local/sampler/prefix_cache.ts";
import { PREFILL_BLOCK } from "../../lib/local/sampler/plan.ts";

const CFG = findLocalModel("local/tiny")!.config;
const BASE = initBaseParameters(CFG, 1);

function job(prompt: Int32Array, over: Partial<SampleJob> = {}): SampleJob {
  return {
    prompt,
    numSamples: 2,
    maxTokens: 10,
    temperature: 1,
    topK: -1,
    topP: 1,
    seed: 7,
    stopTokens: [],
    stopSequences: [],
    promptLogprobs: false,
    topkPromptLogprobs: 0,
    ...over,
  };
}

/** A sampler of the bare `local/tiny` model on `engine`, with or without a prefix cache. */
function bareSampler(engine: SamplerEngine, prefixCache?: AnyPrefixCache): Promise<LocalSampler> {
  return LocalSampler.create({
    config: CFG,
    base: BASE,
    adapter: null,
    lora: null,
    prefixCache,
    engine,
  });
}

function tokens(n: number, seed: number): Int32Array {
  const rng = new Rng(seed);
  return Int32Array.from({ length: n }, () => 1 + rng.int(CFG.vocabSize - 1));
}

function concat(...parts: ArrayLike<number>[]): Int32Array {
  return Int32Array.from(parts.flatMap((p) => [...Array.from(p)]));
}

/**
 * Plays three "turns" the way a multi-turn rollout does (each prompt = the previous prompt,
 * the sampled continuation and new tokens), for two episodes sharing their first prompt.
 */
async function playTurns(sampler: LocalSampler) {
  const opening = tokens(40, 1);
  let prompts = [opening, opening];
  const out: { tokens: number[]; logprobs: number[] }[] = [];
  for (let turn = 0; turn < 3; turn++) {
    const results = await sampler.sample(prompts.map((p, e) => job(p, { seed: 100 * turn + e })));
    const seqs = results.map((r) => r.sequences[0]);
    for (const r of results) for (const s of r.sequences) out.push(s);
    prompts = prompts.map((p, e) => concat(p, seqs[e].tokens, tokens(9, 10 * turn + e)));
  }
  return out;
}

for (const engine of ["onnx", "jax"] as const) {
  Deno.test(`prefix cache (${engine}): multi-turn sampling draws the same tokens and logprobs as running every prompt in full`, async () => {
    await initEngine();
    const cache = prefixCacheFor(engine, 64 * 2 ** 20);
    const cached = await bareSampler(engine, cache);
    const plain = await bareSampler(engine);
    try {
      const a = await playTurns(cached);
      const b = await playTurns(plain);
      assert.equal(a.length, b.length);
      a.forEach((s, i) => {
        assert.deepEqual(s.tokens, b[i].tokens, `sequence ${i}`);
        // ONNX Runtime prompts run in whole blocks, cached or not: bitwise the same numbers.
        if (engine === "onnx") assert.deepEqual(s.logprobs, b[i].logprobs, `sequence ${i}`);
        else assertClose(s.logprobs, b[i].logprobs, 1e-4);
      });
      // Turns 2 and 3 of both episodes continued a stored row: the whole turn on jax-js, the
      // opening's whole block (32 of its 40 tokens) on ONNX Runtime.
      const { hits, savedTokens, entries } = cache.stats;
      assert.equal(hits, 4);
      const saved = engine === "onnx" ? 4 * PREFILL_BLOCK : 4 * 49;
      assert.ok(savedTokens >= saved, `saved ${savedTokens} tokens`);
      assert.ok(entries > 0);
    } finally {
      cached.dispose();
      plain.dispose();
    }
    // Disposal frees the sampler's entries (after its queued work).
    await cached.sample([]).catch(() => {});
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(cache.stats.entries, 0);
    assert.equal(cache.stats.bytes, 0);
  });
}

Deno.test("prefix cache (onnx): a prompt's log-probs do not depend on what the cache holds or what shares its batch", async () => {
  // In a rollout, whether a prompt finds an earlier turn in the cache, and which prompts share
  // its run, depend on timing: neither may change a number, or a seeded run would not replay.
  const prompt = tokens(90, 11);
  const cold = await bareSampler("onnx");
  const warm = await bareSampler("onnx", prefixCacheFor("onnx", 64 * 2 ** 20));
  try {
    const [alone] = await cold.sample([job(prompt, { promptLogprobs: true })]);
    // Warm the cache with a prompt sharing 70 tokens (two whole blocks), then sample `prompt`
    // beside a longer and a shorter prompt.
    await warm.sample([job(concat(prompt.slice(0, 70), tokens(30, 12)))]);
    const [, mixed] = await warm.sample([
      job(tokens(150, 13)),
      job(prompt),
      job(tokens(20, 14), { numSamples: 3 }),
    ]);
    assert.deepEqual(mixed.sequences, alone.sequences);
    // Prompt logprobs (every position, no cache) agree with the sampled run's first draws too.
    const [again] = await warm.sample([job(prompt, { promptLogprobs: true })]);
    assert.deepEqual(again.promptLogprobs, alone.promptLogprobs);
    assert.deepEqual(again.sequences, alone.sequences);
  } finally {
    cold.dispose();
    warm.dispose();
  }
});

for (const engine of ["onnx", "jax"] as const) {
  Deno.test(`prefix cache (${engine}): prompts that want prompt logprobs run in full and still get them`, async () => {
    await initEngine();
    const cache = prefixCacheFor(engine, 64 * 2 ** 20);
    const sampler = await bareSampler(engine, cache);
    try {
      const prompt = tokens(50, 3);
      const [first] = await sampler.sample([job(prompt)]);
      const next = concat(prompt, first.sequences[0].tokens, tokens(5, 4));
      const [withLp] = await sampler.sample([job(next, { promptLogprobs: true })]);
      assert.equal(withLp.promptLogprobs!.length, next.length);
      assert.equal(cache.stats.hits, 0);
      // The same prompt without logprobs hits the stored row.
      await sampler.sample([job(next)]);
      assert.equal(cache.stats.hits, 1);
    } finally {
      sampler.dispose();
    }
  });
}

function fakeRow(slots: number): KvCache {
  const a = () => np.zeros([1, slots, 2, 4]);
  return { k: [a(), a()], v: [a(), a()] };
}

Deno.test("PrefixCache: longest common prefix per owner, superseded prefixes dropped, LRU within the byte budget", async () => {
  await initEngine();
  const rowBytes = 4 * 64 * 8 * 4; // 4 arrays of [1, 64, 2, 4] float32
  const cache = new PrefixCache(3 * rowBytes);
  const owner = {}, other = {};
  const p = tokens(60, 5);
  cache.insert(owner, p.slice(0, 40), fakeRow(64));
  cache.insert(owner, p.slice(0, 50), fakeRow(64)); // supersedes the 40-token entry
  assert.equal(cache.stats.entries, 1);
  cache.insert(other, p.slice(0, 55), fakeRow(64));
  // A prompt diverging after 45 tokens reuses 45 of the 50 stored.
  const diverging = concat(p.slice(0, 45), tokens(10, 6));
  const hit = cache.lookup(owner, diverging)!;
  assert.equal(hit.length, 45);
  for (const a of [...hit.cache.k, ...hit.cache.v]) a.dispose();
  // Never the whole prompt: its last token must run to give the first draw.
  const exact = cache.lookup(owner, p.slice(0, 50))!;
  assert.equal(exact.length, 49);
  for (const a of [...exact.cache.k, ...exact.cache.v]) a.dispose();
  // Too short a common prefix is a miss.
  assert.equal(cache.lookup(owner, concat(p.slice(0, MIN_CACHED_PREFIX - 1), [0, 0])), null);
  // Budget: a fourth row evicts the least recently used (the other owner's).
  cache.insert(owner, tokens(40, 7), fakeRow(64));
  cache.insert(owner, tokens(40, 8), fakeRow(64));
  assert.equal(cache.stats.entries, 3);
  assert.equal(cache.lookup(other, p), null);
  assert.equal(cache.stats.bytes, 3 * rowBytes);
  cache.drop(owner);
  assert.equal(cache.stats.entries, 0);
  assert.equal(commonPrefix(Int32Array.from([1, 2, 3]), Int32Array.from([1, 2, 4])), 2);
});
