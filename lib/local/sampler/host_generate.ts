/**
 * Runs one decode group on ONNX Runtime (`../onnx/session.ts`): prefill its distinct prompts,
 * copy each prompt's keys and values to its sample rows, then decode step by step with the
 * cache on the host (`host_cache.ts`), drawing each row's next token on the host as the
 * jax-js sampler does (`rows.ts`). Only the slot count is bucketed, so the cache grows by
 * doubling, and rows that finish are compacted away once they are half the batch.
 *
 * Prompts run in blocks of {@link prefillBlock} positions, block `b` over the keys and values
 * of blocks `< b`, always so, whether those came from the prefix cache or were just run. That
 * makes a sequence's numbers a function of its own tokens: ONNX Runtime gives bitwise the same
 * outputs for a row whatever other rows share the run, however many masked slots pad its keys and
 * whichever positions return log-distributions, but not for a prompt run whole and the same
 * prompt run in two parts. A prefix cache whose hits depend on which request came first (timing,
 * in a rollout with many episodes in flight) would otherwise change log-probs in their last
 * digits, and a run with the same seeds would not replay. So the prefix cache holds only whole
 * blocks of prompts, stored as they are run; a prompt reuses the whole blocks it shares.
 * A windowed model's prompts run in long chunks of the same blocks instead (`long_prefill.ts`).
 *
 * @module
 */

import { MASKED } from "../onnx/mask.ts";
import type { GptSession } from "../onnx/session.ts";
import { HostKvCache } from "./host_cache.ts";
import type { PrefixCache, PrefixHit } from "./prefix_cache.ts";
import { type DecodeGroup, prefillBlock, scoreChunks, slotBucket } from "./plan.ts";
import {
  advance,
  distinctPrompts,
  fillPromptLogprobs,
  type JobState,
  position,
  type Row,
  wantsPromptLogprobs,
} from "./rows.ts";
import type { SampledSequence } from "./types.ts";
import { prefillWindowed, type WindowRun } from "./long_prefill.ts";

/** A prompt's keys and values (row `row` of `cache`, its first `length` slots) and first draw. */
interface PromptRun {
  cache: HostKvCache;
  row: number;
  length: number;
  firstDraw: Float32Array;
}

/** The prefix cache a group reads and fills, with the owner its entries are filed under. */
export interface HostPrefixStore {
  cache: PrefixCache<HostKvCache>;
  owner: object;
}

/**
 * Generates every row of `group`, writing sequences and prompt logprobs into the jobs. Once
 * `signal` aborts, it throws its reason before the next decode step.
 */
export async function runHostGroup(
  gpt: GptSession,
  jobs: JobState[],
  group: DecodeGroup,
  prefix?: HostPrefixStore,
  signal?: AbortSignal,
): Promise<void> {
  const cfg = gpt.config;
  const prompts = await prefillPrompts(gpt, jobs, group, prefix);
  const promptOf = new Map<Row, PromptRun>();
  const rows: Row[] = group.rows.map(({ job, sample }) => {
    const seq: SampledSequence = { tokens: [], logprobs: [], stopReason: "length" };
    jobs[job].result.sequences[sample] = seq;
    const row: Row = { state: jobs[job], seq, rng: jobs[job].rngs[sample], slot: -1, done: false };
    promptOf.set(row, prompts.get(job)!);
    advance(row, prompts.get(job)!.firstDraw);
    return row;
  });
  let active = rows.filter((r) => !r.done);
  if (active.length === 0) return;
  let cache = new HostKvCache(
    cfg,
    active.length,
    slotBucket(cfg, Math.max(...active.map(position)) + 1),
  );
  active.forEach((r, i) => {
    const p = promptOf.get(r)!;
    cache.copyPrefix(p.cache, p.row, i, p.length);
    r.slot = i;
  });
  while (active.length > 0) {
    signal?.throwIfAborted();
    const need = slotBucket(cfg, Math.max(...active.map(position)) + 1);
    if (active.length <= cache.rows / 2 || need > cache.slots) {
      cache = cache.remap(cfg, active.map((r) => r.slot), Math.max(need, cache.slots));
      active.forEach((r, i) => r.slot = i);
    }
    const { logprobs, step } = await decodeStep(gpt, cache, active);
    const v = cfg.vocabSize;
    for (const r of active) {
      cache.write(step, r.slot, r.slot, position(r), 1);
      advance(r, logprobs.subarray(r.slot * v, (r.slot + 1) * v));
    }
    active = active.filter((r) => !r.done);
  }
}

/**
 * One decode step feeding each active row its last token at its position. Rows of the cache
 * that are no longer active get token 0 at position 0; nobody reads their outputs.
 */
async function decodeStep(gpt: GptSession, cache: HostKvCache, active: Row[]) {
  const n = cache.rows;
  const ids = new BigInt64Array(n), positions = new BigInt64Array(n);
  for (const r of active) {
    ids[r.slot] = BigInt(r.seq.tokens[r.seq.tokens.length - 1]);
    positions[r.slot] = BigInt(position(r));
  }
  const out = await gpt.run({
    rows: n,
    tokens: 1,
    slots: cache.slots,
    ids,
    positions,
    keyBias: cache.keyBias,
    headIndex: new BigInt64Array(n),
    heads: 1,
    pastKeys: cache.keys,
    pastValues: cache.values,
    keyPositions: cache.keyPositions,
  });
  return { logprobs: out.logprobs, step: new HostKvCache(gpt.config, n, 1, out) };
}

/**
 * Runs the group's distinct prompts (a GRPO group sends one prompt several times) block by
 * block, past the whole blocks each finds in the prefix cache, stores their new whole blocks
 * there, and fills prompt logprobs. Prompts that start at the same block run together, longest
 * first, in chunks whose attention fits the prefill budget. Returns each job's prompt run.
 */
async function prefillPrompts(
  gpt: GptSession,
  jobs: JobState[],
  group: DecodeGroup,
  prefix: HostPrefixStore | undefined,
): Promise<Map<number, PromptRun>> {
  const cfg = gpt.config, block = prefillBlock(cfg);
  const { repOf, hits, full } = distinctPrompts<PrefixHit<HostKvCache>>(
    jobs,
    group.jobs,
    prefix &&
      ((p) => prefix.cache.lookup(prefix.owner, p, block, (c, n) => c.holds(0, n))),
  );
  const length = (r: number) => jobs[r].job.prompt.length;
  const reused = (r: number) => hits.get(r)?.length ?? 0;
  const reps = [...full, ...hits.keys()].sort((a, b) =>
    reused(a) - reused(b) || length(b) - length(a)
  );
  const runs = new Map<number, PromptRun>();
  for (let next = 0; next < reps.length;) {
    const from = reused(reps[next]);
    const sameStart = reps.slice(next).filter((r) => reused(r) === from);
    const slots = cfg.attentionWindow
      ? slotBucket(cfg, length(sameStart[0]))
      : blocksOf(length(sameStart[0]), block) * block;
    const [chunk] = scoreChunks(cfg, sameStart, block, slots + block);
    next += chunk.length;
    const logprobJobs = [...repOf].filter(([j, r]) =>
      chunk.includes(r) && wantsPromptLogprobs(jobs[j])
    );
    const toRun = chunk.map((r) => ({
      prompt: jobs[r].job.prompt,
      hit: hits.get(r),
      allPositions: logprobJobs.some(([, rep]) => rep === r),
    }));
    const done = cfg.attentionWindow
      ? await prefillWindowed(gpt, toRun)
      : await runBlocks(gpt, toRun, slots);
    chunk.forEach((r, i) => runs.set(r, done[i]));
    for (const [j, r] of logprobJobs) {
      const dists = done[chunk.indexOf(r)].positions!;
      fillPromptLogprobs(jobs[j], (pos) => dists[pos]);
    }
    if (!prefix) continue;
    if (cfg.attentionWindow) {
      chunk.forEach((r, i) => {
        const { entry } = done[i] as WindowRun, prompt = jobs[r].job.prompt;
        const whole = Math.floor(prompt.length / block) * block;
        if (entry) prefix.cache.insert(prefix.owner, prompt.slice(0, whole), entry);
      });
    } else storeBlocks(cfg, prefix, chunk.map((r) => jobs[r].job.prompt), done, from);
  }
  const out = new Map<number, PromptRun>();
  for (const [j, r] of repOf) out.set(j, runs.get(r)!);
  return out;
}

/** Whole and partial blocks of a prompt of `n` tokens. */
function blocksOf(n: number, block: number): number {
  return Math.ceil(n / block);
}

/**
 * A prompt to prefill: its cached whole blocks, if any, and whether every position's
 * log-distribution is wanted (prompt logprobs).
 */
interface BlockPrompt {
  prompt: Int32Array;
  hit?: PrefixHit<HostKvCache>;
  allPositions: boolean;
}

/**
 * Prefills prompts of a model without a window that start at the same block (`hit` lengths
 * equal) into one cache of
 * `slots` slots, one run per block: the rows whose prompt has that block, each over the slots it
 * has written (the rest masked). Returns each prompt's run, with every position's
 * log-distribution for those that want them.
 */
async function runBlocks(
  gpt: GptSession,
  prompts: BlockPrompt[],
  slots: number,
): Promise<(PromptRun & { positions?: Float32Array[] })[]> {
  const cfg = gpt.config, v = cfg.vocabSize, t = prefillBlock(cfg);
  const cache = new HostKvCache(cfg, prompts.length, slots);
  const runs = prompts.map((p, i) => {
    if (p.hit) cache.copyPrefix(p.hit.cache, 0, i, p.hit.length);
    return {
      cache,
      row: i,
      length: p.prompt.length,
      firstDraw: new Float32Array(0),
      positions: p.allPositions ? new Array<Float32Array>(p.prompt.length) : undefined,
    };
  });
  const first = (prompts[0].hit?.length ?? 0) / t;
  const last = Math.max(...prompts.map((p) => blocksOf(p.prompt.length, t))) - 1;
  const heads = prompts.some((p) => p.allPositions) ? t : 1;
  for (let b = first; b <= last; b++) {
    const rows = prompts.flatMap((p, i) => blocksOf(p.prompt.length, t) > b ? [i] : []);
    const out = await runBlock(
      gpt,
      cache,
      rows.map((i) => ({ i, prompt: prompts[i].prompt })),
      b,
      heads,
    );
    const step = new HostKvCache(cfg, rows.length, t, out);
    rows.forEach((i, k) => {
      const n = Math.min(t, prompts[i].prompt.length - b * t);
      cache.write(step, k, i, b * t, n);
      const dist = (p: number) => {
        const at = heads === 1 ? k : k * heads + p;
        return out.logprobs.slice(at * v, (at + 1) * v);
      };
      if (b * t + n === prompts[i].prompt.length) runs[i].firstDraw = dist(n - 1);
      const positions = runs[i].positions;
      if (positions) { for (let p = 0; p < n; p++) positions[b * t + p] = dist(p); }
    });
  }
  return runs;
}

/**
 * One prefill run: block `b` of each row's prompt (right-padded to {@link prefillBlock}) over
 * the first `b` blocks of its row of `cache`. The LM head runs at every position with
 * `heads` = the block size, else at the prompt's last position in the block.
 */
function runBlock(
  gpt: GptSession,
  cache: HostKvCache,
  rows: { i: number; prompt: Int32Array }[],
  b: number,
  heads: number,
) {
  const cfg = gpt.config, t = prefillBlock(cfg), slots = cache.slots, n = rows.length;
  const past = cache.rows === n ? cache : cache.remap(cfg, rows.map((r) => r.i), slots);
  const ids = new BigInt64Array(n * t), positions = new BigInt64Array(n * t);
  const keyBias = new Float32Array(n * (slots + t)).fill(MASKED);
  const headIndex = new BigInt64Array(n * heads);
  rows.forEach(({ prompt }, k) => {
    keyBias.fill(0, k * (slots + t), k * (slots + t) + b * t);
    const rest = Math.min(t, prompt.length - b * t);
    for (let p = 0; p < t; p++) {
      ids[k * t + p] = BigInt(p < rest ? prompt[b * t + p] : 0);
      positions[k * t + p] = BigInt(Math.min(b * t + p, cfg.maxSeqLen - 1));
      if (p < rest) keyBias[k * (slots + t) + slots + p] = 0;
    }
    if (heads === 1) headIndex[k] = BigInt(rest - 1);
    else for (let p = 0; p < heads; p++) headIndex[k * heads + p] = BigInt(p);
  });
  return gpt.run({
    rows: n,
    tokens: t,
    slots,
    ids,
    positions,
    keyBias,
    headIndex,
    heads,
    pastKeys: past.keys,
    pastValues: past.values,
  });
}

/**
 * Files the whole blocks of each prompt that it did not read from the prefix cache (those past
 * `from`): one row of keys and values per prompt, superseding the entries it extends.
 */
function storeBlocks(
  cfg: GptSession["config"],
  prefix: HostPrefixStore,
  prompts: Int32Array[],
  runs: PromptRun[],
  from: number,
): void {
  prompts.forEach((prompt, i) => {
    const block = prefillBlock(cfg);
    const n = Math.floor(prompt.length / block) * block;
    if (n <= from) return;
    const row = new HostKvCache(cfg, 1, n);
    row.copyPrefix(runs[i].cache, runs[i].row, 0, n);
    prefix.cache.insert(prefix.owner, prompt.slice(0, n), row);
  });
}
