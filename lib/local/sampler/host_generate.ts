/**
 * Runs one decode group on ONNX Runtime (`../onnx/session.ts`): prefill its distinct prompts,
 * copy each prompt's keys and values to its sample rows, then decode step by step with the
 * cache on the host (`host_cache.ts`), drawing each row's next token on the host as the
 * jax-js sampler does (`rows.ts`). Nothing is padded to a bucket here: ONNX Runtime does not
 * compile per shape. Only the slot count is bucketed, so the cache grows by doubling, and
 * rows that finish are compacted away once they are half the batch. With a prefix cache,
 * prompts run only past their longest cached prefix and finished rows are stored in it, as the
 * jax-js sampler does (`generate.ts`).
 *
 * @module
 */

import { MASKED } from "../onnx/gpt_graph.ts";
import type { GptSession } from "../onnx/session.ts";
import { HostKvCache } from "./host_cache.ts";
import type { PrefixCache, PrefixHit } from "./prefix_cache.ts";
import { type DecodeGroup, scoreChunks, slotBucket } from "./plan.ts";
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

/** `n` slots of row `row` of `cache`, which go to slots `at..at+n-1` of a prompt's rows. */
interface Segment {
  cache: HostKvCache;
  row: number;
  at: number;
  n: number;
}

/** A prompt's keys and values (a cached prefix and/or a run) and its first log-distribution. */
interface PromptRun {
  segments: Segment[];
  firstDraw: Float32Array;
}

/** The prefix cache a group reads and fills, with the owner its entries are filed under. */
export interface HostPrefixStore {
  cache: PrefixCache<HostKvCache>;
  owner: object;
}

/** Generates every row of `group`, writing sequences and prompt logprobs into the jobs. */
export async function runHostGroup(
  gpt: GptSession,
  jobs: JobState[],
  group: DecodeGroup,
  prefix?: HostPrefixStore,
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
  // With a prefix cache, rows done at their first draw are stored too: they start in the cache.
  const start = prefix ? rows : active;
  if (start.length === 0) return;
  let cache = new HostKvCache(
    cfg,
    start.length,
    slotBucket(cfg, Math.max(...start.map(position)) + 1),
  );
  start.forEach((r, i) => {
    for (const s of promptOf.get(r)!.segments) cache.copySlots(s.cache, s.row, 0, i, s.at, s.n);
    r.slot = i;
  });
  if (prefix) storeRows(cfg, prefix, cache, rows.filter((r) => r.done));
  while (active.length > 0) {
    const need = slotBucket(cfg, Math.max(...active.map(position)) + 1);
    if (active.length <= cache.rows / 2 || need > cache.slots) {
      cache = cache.remap(cfg, active.map((r) => r.slot), Math.max(need, cache.slots));
      active.forEach((r, i) => r.slot = i);
    }
    const { logprobs, step } = await decodeStep(gpt, cache, active);
    const v = cfg.vocabSize;
    for (const r of active) {
      cache.copySlots(step, r.slot, 0, r.slot, position(r), 1);
      advance(r, logprobs.subarray(r.slot * v, (r.slot + 1) * v));
    }
    if (prefix) storeRows(cfg, prefix, cache, active.filter((r) => r.done));
    active = active.filter((r) => !r.done);
  }
}

/**
 * Files finished rows in the prefix store: a copy of each row's keys and values for its prompt
 * and all but its last token (the one never fed back).
 */
function storeRows(
  cfg: GptSession["config"],
  prefix: HostPrefixStore,
  cache: HostKvCache,
  finished: Row[],
): void {
  for (const r of finished) {
    const prompt = r.state.job.prompt;
    const n = prompt.length + r.seq.tokens.length - 1;
    const tokens = new Int32Array(n);
    tokens.set(prompt);
    tokens.set(r.seq.tokens.slice(0, -1), prompt.length);
    const row = new HostKvCache(cfg, 1, n);
    row.copySlots(cache, r.slot, 0, 0, 0, n);
    prefix.cache.insert(prefix.owner, tokens, row);
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
  });
  return { logprobs: out.logprobs, step: new HostKvCache(gpt.config, n, 1, out) };
}

/**
 * Runs the group's distinct prompts (a GRPO group sends one prompt several times), longest
 * first in chunks whose attention fits the prefill budget, and fills prompt logprobs. Returns
 * each job's prompt run.
 */
async function prefillPrompts(
  gpt: GptSession,
  jobs: JobState[],
  group: DecodeGroup,
  prefix: HostPrefixStore | undefined,
): Promise<Map<number, PromptRun>> {
  const cfg = gpt.config;
  const { repOf, hits, full } = distinctPrompts<PrefixHit<HostKvCache>>(
    jobs,
    group.jobs,
    prefix && ((p) => prefix.cache.lookup(prefix.owner, p)),
  );
  const length = (r: number) => jobs[r].job.prompt.length;
  const sorted = full.sort((a, b) => length(b) - length(a));
  const runs = new Map<number, PromptRun>();
  for (let next = 0; next < sorted.length;) {
    const t = length(sorted[next]);
    const [chunk] = scoreChunks(cfg, sorted.slice(next), t, t);
    next += chunk.length;
    const wanted = [...repOf].filter(([j, r]) => chunk.includes(r) && wantsPromptLogprobs(jobs[j]));
    const all = wanted.length > 0;
    const out = await runPrompts(gpt, chunk.map((r) => jobs[r].job.prompt), t, all);
    const cache = new HostKvCache(cfg, chunk.length, t, out);
    const v = cfg.vocabSize;
    const dist = (i: number, pos: number) => {
      const at = all ? i * t + pos : i;
      return out.logprobs.subarray(at * v, (at + 1) * v);
    };
    chunk.forEach((r, i) =>
      runs.set(r, {
        segments: [{ cache, row: i, at: 0, n: length(r) }],
        firstDraw: dist(i, length(r) - 1),
      })
    );
    for (const [j, r] of wanted) fillPromptLogprobs(jobs[j], (pos) => dist(chunk.indexOf(r), pos));
  }
  const ids = [...hits.keys()];
  const suffix = (r: number) => length(r) - hits.get(r)!.length;
  ids.sort((a, b) => suffix(b) - suffix(a));
  for (let next = 0; next < ids.length;) {
    const t = suffix(ids[next]);
    const slots = Math.max(...ids.slice(next).map((r) => hits.get(r)!.length));
    const [chunk] = scoreChunks(cfg, ids.slice(next), t, slots + t);
    next += chunk.length;
    const out = await extendPrompts(
      gpt,
      chunk.map((r) => ({ hit: hits.get(r)!, prompt: jobs[r].job.prompt })),
      t,
      slots,
    );
    const cache = new HostKvCache(cfg, chunk.length, t, out);
    const v = cfg.vocabSize;
    chunk.forEach((r, i) => {
      const hit = hits.get(r)!;
      runs.set(r, {
        segments: [
          { cache: hit.cache, row: 0, at: 0, n: hit.length },
          { cache, row: i, at: hit.length, n: suffix(r) },
        ],
        firstDraw: out.logprobs.subarray(i * v, (i + 1) * v),
      });
    });
  }
  const out = new Map<number, PromptRun>();
  for (const [j, r] of repOf) out.set(j, runs.get(r)!);
  return out;
}

/**
 * Runs the uncached ends of prompts (`t` tokens per row, right-padded) over their cached
 * prefixes, stacked into `slots` past slots; the LM head runs at each prompt's last token.
 */
function extendPrompts(
  gpt: GptSession,
  rows: { hit: PrefixHit<HostKvCache>; prompt: Int32Array }[],
  t: number,
  slots: number,
) {
  const cfg = gpt.config, b = rows.length;
  const past = new HostKvCache(cfg, b, slots);
  const ids = new BigInt64Array(b * t), positions = new BigInt64Array(b * t);
  const keyBias = new Float32Array(b * (slots + t)).fill(MASKED);
  const headIndex = new BigInt64Array(b);
  rows.forEach(({ hit, prompt }, i) => {
    past.copySlots(hit.cache, 0, 0, i, 0, hit.length);
    keyBias.fill(0, i * (slots + t), i * (slots + t) + hit.length);
    const rest = prompt.length - hit.length;
    for (let p = 0; p < t; p++) {
      ids[i * t + p] = BigInt(p < rest ? prompt[hit.length + p] : 0);
      positions[i * t + p] = BigInt(Math.min(hit.length + p, cfg.maxSeqLen - 1));
      if (p < rest) keyBias[i * (slots + t) + slots + p] = 0;
    }
    headIndex[i] = BigInt(rest - 1);
  });
  return gpt.run({
    rows: b,
    tokens: t,
    slots,
    ids,
    positions,
    keyBias,
    headIndex,
    heads: 1,
    pastKeys: past.keys,
    pastValues: past.values,
  });
}

/**
 * Prefills right-padded `prompts` (`t` tokens per row): the LM head runs at every position
 * with `all`, else at each prompt's last token only.
 */
function runPrompts(gpt: GptSession, prompts: Int32Array[], t: number, all: boolean) {
  const b = prompts.length;
  const ids = new BigInt64Array(b * t), positions = new BigInt64Array(b * t);
  const keyBias = new Float32Array(b * t);
  const heads = all ? t : 1;
  const headIndex = new BigInt64Array(b * heads);
  prompts.forEach((prompt, i) => {
    for (let p = 0; p < t; p++) {
      ids[i * t + p] = BigInt(p < prompt.length ? prompt[p] : 0);
      positions[i * t + p] = BigInt(p);
      if (p >= prompt.length) keyBias[i * t + p] = MASKED;
      if (all) headIndex[i * t + p] = BigInt(p);
    }
    if (!all) headIndex[i] = BigInt(prompt.length - 1);
  });
  const empty = Array.from({ length: gpt.config.nLayers }, () => new Float32Array(0));
  return gpt.run({
    rows: b,
    tokens: t,
    slots: 0,
    ids,
    positions,
    keyBias,
    headIndex,
    heads,
    pastKeys: empty,
    pastValues: empty,
  });
}
