/**
 * Tinker's five built-in losses as ONNX subgraphs of the learner's training graph
 * (`../onnx/train_graph.ts`) over its target log-probs `lp` (spec: `tinker-protocol.md` §4).
 * Each returns its value, its gradient with respect to `lp` (every loss is elementwise per
 * token, so the graph backpropagates from there by hand) and its statistics.
 *
 * Every loss is a **sum** over tokens (and, since the learner adds micro-batches, over datums):
 * per-sequence or per-batch normalisation is the client's job, folded into its weights or
 * advantages. Every per-token term is multiplied by a per-token weight `w` that is 0 at
 * padding, and the inputs of positions with `w = 0` are zeroed before any arithmetic (see
 * `gate`), so such a position contributes exactly 0 to the value and the gradient whatever
 * its values (the intent of SkyRL's "strong mask").
 * For `cross_entropy`, `w` is the datum's `weights` input (real-valued and possibly
 * negative: `forward_backward_custom` sends `weights = −∂loss/∂lp`). For the RL losses it is
 * the optional `weights` input (default 1), as SkyRL applies it.
 *
 * @module
 */

import type { GraphBuilder } from "../onnx/graph.ts";

/** The loss names of Tinker's `LossFnType`. */
export const LOSS_FN_NAMES = [
  "cross_entropy",
  "importance_sampling",
  "ppo",
  "cispo",
  "dro",
] as const;

/** One of Tinker's built-in losses. */
export type LossFnName = typeof LOSS_FN_NAMES[number];

/** Value names of the per-token tensors a loss reads, each `[N, K]` (K = 1 unless top-K). */
export type LossTokens = {
  /** The learner's target log-probs. */
  lp: string;
  /** Per-token multiplier, 0 at padding (see the module doc). */
  weights: string;
  /** Sampler log-probs `q` (the `logprobs` input); RL losses only. */
  logprobs?: string;
  /** Advantages `A`; RL losses only. */
  advantages?: string;
};

/** Value names of the loss's `loss_fn_config` scalars (float graph inputs), by key. */
export type LossConfig = Record<string, string>;

/** A loss's subgraph: scalars whose sums make the metrics, and the gradient. */
export type LossTerms = {
  /** Scalar loss L (the sum over all tokens). */
  loss: string;
  /** `∂L/∂lp`, `[N, K]`. */
  dlp: string;
  /** Scalar sums for {@link LossDefinition.metrics}, e.g. clipped and active token counts. */
  stats: Record<string, string>;
};

/** A built-in loss: its wire contract and its subgraph. */
export interface LossDefinition {
  /** `loss_fn_inputs` keys that must be present (besides the shape rules in validate.ts). */
  requiredInputs: readonly string[];
  /** `loss_fn_inputs` keys that may be present. */
  optionalInputs: readonly string[];
  /** Allowed `loss_fn_config` keys with their defaults. */
  config: Readonly<Record<string, number>>;
  /** Whether `target_tokens`/`weights` may be `[N, K]` (top-K distillation). */
  allows2d: boolean;
  /** Names of the scalar sums `graph` returns in {@link LossTerms.stats}. */
  stats: readonly string[];
  /** Adds the loss to `g`. */
  graph: (g: GraphBuilder, tokens: LossTokens, config: LossConfig) => LossTerms;
  /** Host-side metrics (besides `loss:sum`) from the summed {@link LossTerms.stats}. */
  metrics: (stats: Record<string, number>) => Record<string, number>;
}

const CLIP_STATS = ["clipped", "active"] as const;
const RL_INPUTS = ["target_tokens", "logprobs", "advantages"] as const;

/** The per-token values of a loss after {@link gate}. */
type Gated = { lp: string; w: string; q: string; a: string };

/**
 * Replaces `lp`, `q` and `A` by 0 wherever the weight is 0, before any arithmetic. Then a
 * masked position computes `r = 1` and finite terms whatever the client (or the padding)
 * put there, and its `w = 0` factor zeroes it in both the value and the gradient. (A mask
 * applied only at the end would still turn `0 · ∞` from e.g. `exp(lp − q)` with a huge
 * `−q` into a NaN gradient.) Absent RL inputs come back as zeros.
 */
function gate(g: GraphBuilder, t: LossTokens): Gated {
  const on = g.op("Not", [g.op("Equal", [t.weights, g.scalar(0)])]);
  const zero = g.scalar(0);
  const z = (x: string | undefined) => x ? g.op("Where", [on, x, zero]) : zero;
  return { lp: z(t.lp), w: t.weights, q: z(t.logprobs), a: z(t.advantages) };
}

/** `−Σ w·objective` and its gradient `−w·∂objective/∂lp`. */
function weighted(g: GraphBuilder, w: string, objective: string, dObjective: string) {
  const sum = g.op("ReduceSum", [g.op("Mul", [w, objective])], { keepdims: { i: 0 } });
  // 0 − x rather than −x: a masked position's gradient is +0, as autodiff gives.
  const dlp = g.op("Sub", [g.scalar(0), g.op("Mul", [w, dObjective])]);
  return { loss: g.op("Neg", [sum]), dlp };
}

/** `r = exp(lp − q)`, the learner/sampler probability ratio. */
function ratio(g: GraphBuilder, lp: string, q: string): string {
  return g.op("Exp", [g.op("Sub", [lp, q])]);
}

/** `clip_fraction:mean` = clipped / active, 0 when no token is active. */
function clipFraction(stats: Record<string, number>): Record<string, number> {
  return { "clip_fraction:mean": stats.active > 0 ? stats.clipped / stats.active : 0 };
}

/** `L = Σ −w·lp`. */
function crossEntropy(g: GraphBuilder, tokens: LossTokens): LossTerms {
  const t = gate(g, tokens);
  return { ...weighted(g, t.w, t.lp, g.scalar(1)), stats: {} };
}

/** `L = −Σ r·A`; `∂(r·A)/∂lp = r·A`. */
function importanceSampling(g: GraphBuilder, tokens: LossTokens): LossTerms {
  const t = gate(g, tokens);
  const ra = g.op("Mul", [ratio(g, t.lp, t.q), t.a]);
  return { ...weighted(g, t.w, ra, ra), stats: {} };
}

/**
 * Sums for `clip_fraction:mean`: `active` counts tokens with weight ≠ 0 and A ≠ 0 (the
 * ones a policy-gradient loss acts on; prompt tokens have A = 0), `clipped` those of them
 * where `isClipped` holds (`a` is gated, so A ≠ 0 implies w ≠ 0).
 */
function clipStats(g: GraphBuilder, isClipped: string, a: string): Record<string, string> {
  const active = g.op("Not", [g.op("Equal", [a, g.scalar(0)])]);
  const count = (x: string) =>
    g.op("ReduceSum", [g.op("Cast", [x], { to: { i: 1 } })], { keepdims: { i: 0 } });
  return { clipped: count(g.op("And", [isClipped, active])), active: count(active) };
}

/** `clip(r, lo, hi)`. */
function clip(g: GraphBuilder, r: string, lo: string, hi: string): string {
  return g.op("Min", [g.op("Max", [r, lo]), hi]);
}

/**
 * `L = −Σ min(r·A, clip(r, lo, hi)·A)`. Where the clipped term is the smaller one the
 * gradient is 0 (`clip` has zero derivative outside `[lo, hi]`, and inside it both terms are
 * the same); `clipped` counts those tokens: `A > 0, r > hi` or `A < 0, r < lo`.
 */
function ppo(g: GraphBuilder, tokens: LossTokens, config: LossConfig): LossTerms {
  const { lp, w, q, a } = gate(g, tokens);
  const lo = config.clip_low_threshold, hi = config.clip_high_threshold;
  const r = ratio(g, lp, q);
  const zero = g.scalar(0);
  const isClipped = g.op("Or", [
    g.op("And", [g.op("Greater", [a, zero]), g.op("Greater", [r, hi])]),
    g.op("And", [g.op("Less", [a, zero]), g.op("Less", [r, lo])]),
  ]);
  const ra = g.op("Mul", [r, a]), ca = g.op("Mul", [clip(g, r, lo, hi), a]);
  const objective = g.op("Min", [ra, ca]);
  const dObjective = g.op("Where", [g.op("Greater", [ra, ca]), zero, ra]);
  return { ...weighted(g, w, objective, dObjective), stats: clipStats(g, isClipped, a) };
}

/**
 * `L = −Σ sg(clip(r, lo, hi))·lp·A`: a policy gradient whose per-token coefficient is the
 * clipped ratio with its gradient stopped, so every token keeps a gradient (unlike PPO);
 * `clipped` counts tokens with `r` outside `[lo, hi]`.
 */
function cispo(g: GraphBuilder, tokens: LossTokens, config: LossConfig): LossTerms {
  const { lp, w, q, a } = gate(g, tokens);
  const lo = config.clip_low_threshold, hi = config.clip_high_threshold;
  const r = ratio(g, lp, q);
  const isClipped = g.op("Or", [g.op("Less", [r, lo]), g.op("Greater", [r, hi])]);
  const coefA = g.op("Mul", [clip(g, r, lo, hi), a]);
  const objective = g.op("Mul", [coefA, lp]);
  return { ...weighted(g, w, objective, coefA), stats: clipStats(g, isClipped, a) };
}

/** `L = −Σ [lp·A − ½·β·(lp − q)²]`: a policy gradient with a quadratic pull towards q. */
function dro(g: GraphBuilder, tokens: LossTokens, config: LossConfig): LossTerms {
  const { lp, w, q, a } = gate(g, tokens);
  const drift = g.op("Mul", [g.op("Sub", [lp, q]), config.beta]); // β·(lp − q)
  const objective = g.op("Sub", [
    g.op("Mul", [lp, a]),
    g.op("Mul", [g.op("Mul", [drift, g.op("Sub", [lp, q])]), g.scalar(0.5)]),
  ]);
  return { ...weighted(g, w, objective, g.op("Sub", [a, drift])), stats: {} };
}

const noMetrics = () => ({});

/**
 * The built-in losses by name.
 *
 * Defaults: ppo's clip thresholds are ratio bounds 0.8/1.2 (the docs); cispo's are 0.0/4.0
 * (the current Tinker tutorial; one-sided). dro's `beta` default of 0.05 is the docs'
 * example value: the hosted default is **unconfirmed** (`tinker-protocol.md` §10).
 */
export const LOSSES: Readonly<Record<LossFnName, LossDefinition>> = {
  cross_entropy: {
    requiredInputs: ["target_tokens", "weights"],
    optionalInputs: [],
    config: {},
    allows2d: true,
    stats: [],
    graph: crossEntropy,
    metrics: noMetrics,
  },
  importance_sampling: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: {},
    allows2d: false,
    stats: [],
    graph: importanceSampling,
    metrics: noMetrics,
  },
  ppo: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
    allows2d: false,
    stats: CLIP_STATS,
    graph: ppo,
    metrics: clipFraction,
  },
  cispo: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: { clip_low_threshold: 0.0, clip_high_threshold: 4.0 },
    allows2d: false,
    stats: CLIP_STATS,
    graph: cispo,
    metrics: clipFraction,
  },
  dro: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: { beta: 0.05 },
    allows2d: false,
    stats: [],
    graph: dro,
    metrics: noMetrics,
  },
};

/** Whether `name` is one of the built-in losses. */
export function isLossFnName(name: string): name is LossFnName {
  return (LOSS_FN_NAMES as readonly string[]).includes(name);
}

/** The loss's config with its defaults filled in for absent keys. */
export function resolveLossConfig(
  name: LossFnName,
  given: Readonly<Record<string, number>>,
): Record<string, number> {
  return { ...LOSSES[name].config, ...given };
}
