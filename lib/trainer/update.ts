/**
 * One step's update of the policy, from its groups: each minibatch of groups is scored
 * (evidence, then composition) and its forward_backward submitted as soon as it is ready; then
 * the optimizer step, further epochs over the whole batch, and the next sampler's save, all
 * pipelined (submitted together, awaited once). `sync` and `async` steps are one minibatch;
 * `stream` steps several, joined into as few forward_backward calls as their timing allows.
 *
 * @module
 */

import type { ForwardBackwardOutput } from "../protocol/mod.ts";
import type { Datum } from "../protocol/mod.ts";
import { scoredGroupsToDatums } from "../datums/mod.ts";
import type { EpisodeGroup, ScoredGroup } from "../rl/types.ts";
import {
  composeAdvantages,
  type ComposedBatch,
  type EvidenceByTurn,
  type EvidencePlan,
  type EvidenceSources,
  gatherEvidence,
  type MethodSettings,
} from "../scoring/mod.ts";
import type { SamplingClient, TrainingClient } from "../tinker/mod.ts";
import { klMetrics } from "./metrics.ts";
import type { LossFnType } from "../protocol/mod.ts";

/** The optimizer's settings of a run, resolved from its config by `prepareRun`. */
export interface OptimizerSettings {
  /** The loss (`importance_sampling`, `ppo`, `cispo`, `dro`). */
  lossFn: LossFnType;
  /** The loss's settings (e.g. PPO's clip thresholds). */
  lossFnConfig: Record<string, number>;
  /** Adam's parameters of every optim_step. */
  adam: { learning_rate: number; weight_decay: number };
  /** forward_backward + optim_step passes over each step's batch. */
  epochs: number;
}

/** What a run scores with: the method, the evidence it needs, and the judge and teacher. */
export interface Scoring {
  /** The method and its settings. */
  method: MethodSettings;
  /** The evidence the method needs. */
  plan: EvidencePlan;
  /** The judge and the teacher that give it. */
  sources: EvidenceSources;
}

/** What the update needs besides its groups. */
export interface UpdateContext {
  /** The policy's training client. */
  training: TrainingClient;
  /** The evidence the method needs. */
  plan: EvidencePlan;
  /** The judge and the teacher that give it. */
  sources: EvidenceSources;
  /** The method and its settings. */
  method: MethodSettings;
  /** The optimizer's settings. */
  optimizer: OptimizerSettings;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
}

/** One forward_backward of the step's first epoch: the datums it carried, paired with its output. */
interface Call {
  datums: Datum[];
  fb: Promise<ForwardBackwardOutput>;
}

/** What a finished update gives the trainer. */
export interface UpdateResult {
  /** Every group, scored (the rollout store's records). */
  groups: ScoredGroup[];
  /** Advantage stats and `score/*` metrics of the whole step. */
  composed: ComposedBatch;
  /** Datums trained (first epoch). */
  datums: number;
  /** `optim/*` drift metrics and `train/*` metrics of the first epoch. */
  metrics: Record<string, number>;
  /** The sampler of the updated weights; null when nothing was trained. */
  sampler: SamplingClient | null;
  /** The update's timed spans (ms since the run started). */
  spans: { name: string; start: number; end: number }[];
}

/** How long a step's first forward_backward waits for more minibatches to join it, in ms. */
export const JOIN_MS = 50;

/**
 * A step's update, fed minibatch by minibatch.
 *
 * At most one forward_backward of a step is in flight. Minibatches scored while one is queue,
 * and go out together as one call when it returns. The step's first call waits up to
 * {@link JOIN_MS} for more minibatches, or until the last one is in ({@link finish}). Why: on a
 * one-turn task a step's groups arrive within 2 to 22 ms of each other, and a call per
 * minibatch cost the local learner twice one call of the same datums, plus a round trip each
 * (docs/learner.md); the wait costs a step at most a fraction of one such round trip. Joining them changes no update: gradients add up across calls until the
 * step's one optim_step (the loss is a sum), so one call of the queued datums gives the same
 * gradient up to float rounding (tests/trainer/update_test.ts checks it on the local backend).
 * A call still starts on the first groups while the rest play, so streaming keeps its overlap.
 */
export class StepUpdate {
  readonly #ctx: UpdateContext;
  /** Every minibatch's composition, in the order they were added. */
  readonly #composed: Promise<ComposedBatch>[] = [];
  /** Scored minibatches' datums waiting for the call in flight to return. */
  readonly #queue: Datum[][] = [];
  readonly #calls: Call[] = [];
  /** The call in flight (or the first call's wait), settled once the next call (if any) went out. */
  #inFlight: Promise<void> | null = null;
  /** Ends the first call's wait early (all minibatches are in); null once it ended. */
  #endJoin: (() => void) | null = null;
  readonly #spans: UpdateResult["spans"] = [];
  #trainStart: number | null = null;
  #optimizing = false;

  /** An update of one step, in `ctx`'s run. */
  constructor(ctx: UpdateContext) {
    this.#ctx = ctx;
  }

  /**
   * Whether the step's optimizer step was submitted: until then the weights are those of the
   * step before (forward_backward only adds up gradients), so a failed step left them as saved.
   */
  get optimizing(): boolean {
    return this.#optimizing;
  }

  /**
   * Scores a minibatch of groups (gathering their evidence, unless the source gathered it
   * already) and submits its forward_backward, joined with any other minibatch still queued.
   */
  add(groups: EpisodeGroup[], gathered?: EvidenceByTurn): void {
    const c = this.#ctx;
    const start = performance.now() - c.t0;
    const composing = (async () => {
      const evidence = gathered ?? await gatherEvidence(groups, c.plan, c.sources);
      const composed = composeAdvantages(groups, evidence, c.method);
      this.#spans.push({ name: "score", start, end: performance.now() - c.t0 });
      const datums = scoredGroupsToDatums(composed.groups);
      if (datums.length > 0) {
        this.#queue.push(datums);
        this.#send();
      }
      return composed;
    })();
    // A failed scoring surfaces in finish(); this keeps it from being unhandled meanwhile.
    composing.catch(() => {});
    this.#composed.push(composing);
  }

  /** Sends every queued minibatch as one forward_backward, unless a call is in flight. */
  #send(): void {
    if (this.#inFlight !== null || this.#queue.length === 0) return;
    if (this.#calls.length === 0 && this.#endJoin === null) {
      const { promise, resolve } = Promise.withResolvers<void>();
      const timer = setTimeout(resolve, JOIN_MS);
      this.#endJoin = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#inFlight = promise.then(() => {
        this.#inFlight = null;
        this.#send();
      });
      return;
    }
    const c = this.#ctx;
    const datums = this.#queue.splice(0).flat();
    const sent = performance.now() - c.t0;
    this.#trainStart ??= sent;
    const { lossFn, lossFnConfig } = c.optimizer;
    const fb = c.training.forwardBackward(datums, lossFn, lossFnConfig).result();
    this.#calls.push({ datums, fb });
    this.#inFlight = fb.then(() => {}, () => {}).then(() => {
      this.#spans.push({ name: "forward_backward", start: sent, end: performance.now() - c.t0 });
      this.#inFlight = null;
      this.#send();
    });
  }

  /** Submits the optimizer step (and further epochs), then waits for the new sampler. */
  async finish(): Promise<UpdateResult> {
    const c = this.#ctx;
    const parts = await Promise.all(this.#composed);
    // Every minibatch is in: the first call waits no longer; the rest go out when the call in
    // flight returns.
    this.#endJoin?.();
    while (this.#queue.length > 0) await this.#inFlight;
    const calls = this.#calls;
    const datums = calls.flatMap((m) => m.datums);
    const groups = parts.flatMap((p) => p.groups);
    const composed = mergeComposed(parts, groups);
    const metrics: Record<string, number> = {};
    let sampler: SamplingClient | null = null;
    if (datums.length > 0) {
      this.#trainStart ??= performance.now() - c.t0;
      const { adam, lossFn, lossFnConfig, epochs } = c.optimizer;
      this.#optimizing = true;
      const later: Promise<unknown>[] = [
        c.training.optimStep(adam).result(),
      ];
      for (let epoch = 1; epoch < epochs; epoch++) {
        later.push(c.training.forwardBackward(datums, lossFn, lossFnConfig).result());
        later.push(c.training.optimStep(adam).result());
      }
      const next = c.training.saveWeightsAndGetSamplingClient().result();
      const fbs = await Promise.all(calls.map((m) => m.fb));
      await Promise.all(later);
      // The first epoch's passes saw the weights that sampled: their drift is the sampler's.
      Object.assign(
        metrics,
        klMetrics(datums, {
          ...fbs[0],
          loss_fn_outputs: fbs.flatMap((f) => f.loss_fn_outputs),
        }),
      );
      for (const [k, v] of Object.entries(sumMetrics(fbs))) metrics[`train/${k}`] = v;
      sampler = await next;
      this.#spans.push({ name: "train", start: this.#trainStart, end: performance.now() - c.t0 });
    }
    return { groups, composed, datums: datums.length, metrics, sampler, spans: this.#spans };
  }
}

/**
 * The step's composition from its minibatches': counts add up, rates and advantage stats are
 * averaged weighted by groups (composition is group-local in stream mode: the trainer refuses
 * batch-normalised advantage modes there); one minibatch is returned as it is.
 */
function mergeComposed(parts: ComposedBatch[], groups: ScoredGroup[]): ComposedBatch {
  if (parts.length === 1) return parts[0];
  const count = (k: string) => parts.reduce((a, p) => a + (p.metrics[k] ?? 0), 0);
  const weighted = (k: string) => {
    const ws = parts.filter((p) => p.metrics[k] !== undefined);
    const n = ws.reduce((a, p) => a + p.groups.length, 0);
    return n ? ws.reduce((a, p) => a + p.metrics[k] * p.groups.length, 0) / n : undefined;
  };
  const metrics: Record<string, number> = {};
  for (const k of new Set(parts.flatMap((p) => Object.keys(p.metrics)))) {
    const isCount = /(_turns|errors|_samples)$/.test(k);
    const v = isCount ? count(k) : weighted(k);
    if (v !== undefined) metrics[k] = v;
  }
  const stats = parts.map((p) => p.advantageStats).filter((s) => s !== null);
  const n = (i: number) => parts[i].groups.length;
  const total = parts.reduce((a, p) => a + p.groups.length, 0) || 1;
  const avg = (f: (s: NonNullable<ComposedBatch["advantageStats"]>) => number) =>
    parts.reduce((a, p, i) => a + (p.advantageStats ? f(p.advantageStats) * n(i) : 0), 0) / total;
  return {
    groups,
    metrics,
    advantageStats: stats.length
      ? {
        mean: avg((s) => s.mean),
        std: avg((s) => s.std),
        min: Math.min(...stats.map((s) => s.min)),
        max: Math.max(...stats.map((s) => s.max)),
        fracMixed: avg((s) => s.fracMixed),
        fracAllGood: avg((s) => s.fracAllGood),
        fracAllBad: avg((s) => s.fracAllBad),
        droppedGroups: stats.reduce((a, s) => a + s.droppedGroups, 0),
        downsampledEpisodes: stats.reduce((a, s) => a + s.downsampledEpisodes, 0),
      }
      : null,
  };
}

/** `…:sum` metrics add up over passes; others average. */
function sumMetrics(fbs: ForwardBackwardOutput[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set(fbs.flatMap((f) => Object.keys(f.metrics)))) {
    const vs = fbs.map((f) => f.metrics[k]).filter((v) => v !== undefined);
    const total = vs.reduce((a, b) => a + b, 0);
    out[k] = k.endsWith(":sum") ? total : total / vs.length;
  }
  return out;
}
