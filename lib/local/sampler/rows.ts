/**
 * The host side of generation, shared by both sampler engines: per-job state, the rows being
 * generated, the draw that advances a row, and prompt logprobs filled from log-distributions.
 *
 * @module
 */

import type { Rng } from "../../util/random.ts";
import type { StopMatcher } from "./stops.ts";
import { type DrawParams, drawToken, topEntries } from "./token_sampling.ts";
import type { SampledSequence, SampleJob, SampleResult } from "./types.ts";

/** A job with its per-request state; `result` is filled in place. */
export interface JobState {
  job: SampleJob;
  draw: DrawParams;
  stops: StopMatcher;
  /** One generator per sample, so a row's draws don't depend on how rows are batched. */
  rngs: Rng[];
  result: SampleResult;
}

/** One continuation being generated; `slot` is its row in the device batch. */
export interface Row {
  state: JobState;
  seq: SampledSequence;
  rng: Rng;
  slot: number;
  done: boolean;
}

/** Whether a job asked for prompt logprobs that no earlier group has filled in yet. */
export function wantsPromptLogprobs(s: JobState): boolean {
  const asked = s.job.promptLogprobs || s.job.topkPromptLogprobs > 0;
  return asked && s.result.promptLogprobs === undefined &&
    s.result.topkPromptLogprobs === undefined;
}

/** Fills prompt logprobs from `dist(pos)`, the log-distribution of the token after `pos`. */
export function fillPromptLogprobs(s: JobState, dist: (pos: number) => Float32Array): void {
  const prompt = s.job.prompt;
  if (s.job.promptLogprobs) {
    s.result.promptLogprobs = [null];
    for (let t = 1; t < prompt.length; t++) s.result.promptLogprobs.push(dist(t - 1)[prompt[t]]);
  }
  const k = s.job.topkPromptLogprobs;
  if (k > 0) {
    s.result.topkPromptLogprobs = [null];
    for (let t = 1; t < prompt.length; t++) {
      s.result.topkPromptLogprobs.push(topEntries(dist(t - 1), k));
    }
  }
}

/** Position of a row's last token, the one the next decode step feeds. */
export function position(row: Row): number {
  return row.state.job.prompt.length + row.seq.tokens.length - 1;
}

/** Draws a row's next token from `logprobs`, records it and decides whether it stopped. */
export function advance(row: Row, logprobs: Float32Array): void {
  const { job, draw, stops } = row.state;
  const token = drawToken(logprobs, draw, row.rng);
  row.seq.tokens.push(token);
  row.seq.logprobs.push(logprobs[token]);
  if (stops.endsWithStop(row.seq.tokens)) {
    row.seq.stopReason = "stop";
    row.done = true;
  } else if (row.seq.tokens.length >= job.maxTokens) {
    row.done = true;
  }
}

/** A decode group's distinct prompts: each job's representative, and how each prompt runs. */
export interface DistinctPrompts<H> {
  /** Job index → the index of the first job with the same prompt (its representative). */
  repOf: Map<number, number>;
  /** Representatives whose prompt continues a prefix-cache entry, with the hit. */
  hits: Map<number, H>;
  /**
   * Representatives that run their whole prompt: no cache hit, or a job that wants prompt
   * logprobs (a hit would skip their positions).
   */
  full: number[];
}

/**
 * The distinct prompts of a decode group's jobs, each run once whatever the engine (the jobs
 * that share it take its caches), split into prefix-cache hits and prompts that run in full.
 *
 * @example
 * const { repOf, hits, full } = distinctPrompts(states, group.jobs, (p) => cache.lookup(owner, p));
 */
export function distinctPrompts<H>(
  jobs: JobState[],
  group: readonly number[],
  lookup?: (prompt: Int32Array) => H | null | undefined,
): DistinctPrompts<H> {
  const repOf = new Map<number, number>();
  const byPrompt = new Map<string, number>();
  for (const j of group) {
    const key = jobs[j].job.prompt.join(",");
    if (!byPrompt.has(key)) byPrompt.set(key, j);
    repOf.set(j, byPrompt.get(key)!);
  }
  const needsLogprobs = new Set(
    [...repOf].filter(([j]) => wantsPromptLogprobs(jobs[j])).map(([, r]) => r),
  );
  const hits = new Map<number, H>();
  const full: number[] = [];
  for (const r of byPrompt.values()) {
    const hit = needsLogprobs.has(r) ? null : lookup?.(jobs[r].job.prompt);
    if (hit) hits.set(r, hit);
    else full.push(r);
  }
  return { repOf, hits, full };
}
