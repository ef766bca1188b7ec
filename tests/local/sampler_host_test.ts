import { assert } from "../assert.ts";
import { findLocalModel } from "../../lib/local/models.ts";
import { Rng } from "../../lib/util/random.ts";
import { MAX_DECODE_ROWS, planGroups, scoreChunks } from "../../lib/local/sampler/plan.ts";
import { StopMatcher } from "../../lib/local/sampler/stops.ts";
import { argmax, drawToken, topEntries } from "../../lib/local/sampler/token_sampling.ts";
import type { SampleJob } from "../../lib/local/sampler/types.ts";
import { validateSampleJob } from "../../lib/local/sampler/validate.ts";
import { sampleJob as job } from "./sample_job.ts";

const CFG = findLocalModel("local/tiny")!.config;

/** Log-probabilities of a known distribution. */
const logOf = (ps: number[]) => Float32Array.from(ps, Math.log);
const DIST = [0.05, 0.4, 0.1, 0.3, 0.15];

function frequencies(lp: Float32Array, params: Parameters<typeof drawToken>[1], n = 20000) {
  const rng = new Rng(1);
  const counts = new Array(lp.length).fill(0);
  for (let i = 0; i < n; i++) counts[drawToken(lp, params, rng)]++;
  return counts.map((c) => c / n);
}

Deno.test("drawToken: temperature 1 follows the distribution", () => {
  const f = frequencies(logOf(DIST), { temperature: 1, topK: -1, topP: 1 });
  f.forEach((x, i) => assert.ok(Math.abs(x - DIST[i]) < 0.015, `token ${i}: ${x} vs ${DIST[i]}`));
});

Deno.test("drawToken: temperature sharpens as p^(1/T)", () => {
  const f = frequencies(logOf(DIST), { temperature: 0.5, topK: -1, topP: 1 });
  const sq = DIST.map((p) => p * p), z = sq.reduce((a, b) => a + b);
  f.forEach((x, i) => assert.ok(Math.abs(x - sq[i] / z) < 0.015, `token ${i}`));
});

Deno.test("drawToken: top-k and top-p restrict the support and renormalise", () => {
  const lp = logOf(DIST);
  const k2 = frequencies(lp, { temperature: 1, topK: 2, topP: 1 });
  assert.deepEqual(k2.map((x) => x > 0), [false, true, false, true, false]);
  assert.ok(Math.abs(k2[1] - 0.4 / 0.7) < 0.015);
  // Best-first cumulative mass: 0.4, 0.7, 0.85 → top_p 0.75 keeps three tokens.
  const p75 = frequencies(lp, { temperature: 1, topK: -1, topP: 0.75 });
  assert.deepEqual(p75.map((x) => x > 0), [false, true, false, true, true]);
  const greedyish = frequencies(lp, { temperature: 1, topK: 1, topP: 1 }, 100);
  assert.equal(greedyish[1], 1);
});

Deno.test("drawToken: temperature 0 is argmax and uses no randomness", () => {
  const rng = new Rng(5);
  const before = rng.state();
  assert.equal(drawToken(logOf(DIST), { temperature: 0, topK: -1, topP: 1 }, rng), 1);
  assert.deepEqual(rng.state(), before);
  assert.equal(argmax(Float32Array.from([1, 3, 3, 2])), 1, "ties: lowest id");
});

Deno.test("topEntries: best first, ties by id", () => {
  assert.deepEqual(topEntries(Float32Array.from([-1, -0.5, -2, -0.5]), 3), [[1, -0.5], [3, -0.5], [
    0,
    -1,
  ]]);
});

Deno.test("StopMatcher: stop tokens and complete stop sequences, generated tokens only", () => {
  const m = new StopMatcher([7], [[1, 2, 3], [9]]);
  assert.equal(m.endsWithStop([]), false);
  assert.equal(m.endsWithStop([4, 7]), true);
  assert.equal(m.endsWithStop([1, 2]), false);
  assert.equal(m.endsWithStop([5, 1, 2, 3]), true);
  assert.equal(m.endsWithStop([2, 3]), false);
  assert.equal(m.endsWithStop([9]), true);
});

Deno.test("planGroups: splits rows into capped groups and buckets the cache", () => {
  const groups = planGroups(CFG, [
    job({ numSamples: MAX_DECODE_ROWS + 10 }),
    job({ prompt: Int32Array.from([1]), numSamples: 3, maxTokens: 40 }),
  ]);
  assert.equal(groups.length, 2);
  assert.equal(groups[0].rows.length, MAX_DECODE_ROWS);
  assert.deepEqual(groups[0].jobs, [0]);
  assert.equal(groups[0].prefillSlots, 16);
  assert.deepEqual(groups[1].rows.map((r) => r.job), [...new Array(10).fill(0), 1, 1, 1]);
  assert.deepEqual(groups[1].jobs, [0, 1]);
  assert.equal(groups[1].prefillSlots, 16);
});

Deno.test("scoreChunks: chunks of a power-of-two size whose B·H·T·S fits 2^23", () => {
  const ids = Array.from({ length: 40 }, (_, i) => i);
  // local/tiny has 4 heads: 2^23 / (4 · 512 · 512) = 8 rows per chunk.
  assert.deepEqual(scoreChunks(CFG, ids, 512, 512).map((c) => c.length), [8, 8, 8, 8, 8]);
  // A 16-token extension over 512 slots fits 256 rows: one chunk.
  assert.deepEqual(scoreChunks(CFG, ids, 16, 512), [ids]);
});

Deno.test("validateSampleJob: precise messages for bad input", () => {
  const bad: [Partial<SampleJob>, RegExp][] = [
    [{ prompt: new Int32Array() }, /prompt is empty/],
    [
      { prompt: Int32Array.from([1, -1]) },
      /prompt token 1 is -1, outside the vocabulary \[0, 264\)/,
    ],
    [{ numSamples: 0 }, /num_samples must be an integer ≥ 1, got 0/],
    [{ numSamples: 1000 }, /num_samples is 1000, the local backend allows at most 128/],
    [{ maxTokens: 0 }, /max_tokens must be an integer ≥ 1/],
    [
      { maxTokens: 254 },
      /prompt length 3 \+ max_tokens 254 = 257 exceeds the model's context of 256 tokens/,
    ],
    [{ temperature: -1 }, /temperature must be a finite number ≥ 0, got -1/],
    [{ topP: 0 }, /top_p must be in \(0, 1\], got 0/],
    [{ topK: 0 }, /top_k must be -1 \(off\) or an integer ≥ 1, got 0/],
    [{ stopTokens: [999] }, /stop token 0 is 999, outside the vocabulary/],
    [{ stopSequences: [[]] }, /stop sequence 0 is empty/],
    [{ stopSequences: [[1], [2, 264]] }, /stop sequence 1 token 1 is 264/],
    [{ topkPromptLogprobs: -2 }, /topk_prompt_logprobs must be an integer ≥ 0/],
  ];
  for (const [over, message] of bad) {
    assert.throws(() => validateSampleJob(CFG, job(over)), { name: "UserInputError", message });
  }
  validateSampleJob(CFG, job({ maxTokens: 253, topK: 5, topP: 0.5, temperature: 0 }));
});
