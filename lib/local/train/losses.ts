/**
 * Tinker's five built-in losses as pure, jittable jax-js functions of the learner's target
 * log-probs `lp` (spec: `tinker-protocol.md` §4).
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
 * Ownership: each loss consumes its array arguments (jax-js convention).
 *
 * @module
 */

import { lax, numpy as np } from "@jax-js/jax";

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

/**
 * Per-token tensors a loss reads, each with the shape of `lp` (`[B, T]`, or `[B, T, K]` for
 * 2-D cross-entropy).
 */
export type LossTokens = {
  /** Per-token multiplier, 0 at padding (see the module doc). */
  weights: np.Array;
  /** Sampler log-probs `q` (the `logprobs` input); RL losses only. */
  logprobs?: np.Array;
  /** Advantages `A`; RL losses only. */
  advantages?: np.Array;
};

/**
 * The loss's `loss_fn_config` values with defaults filled in. Plain numbers or scalar
 * arrays: under `jit` both are traced, so a new value does not recompile.
 */
export type LossConfig = Record<string, number | np.Array>;

/**
 * A loss's value and the scalar sums its metrics are made of. Sums (not ratios) so that
 * micro-batches can be added up before the host divides.
 */
export type LossTerms = {
  /** Scalar loss L (the sum over all tokens). */
  loss: np.Array;
  /** Scalar sums for {@link LossDefinition.metrics}, e.g. clipped and active token counts. */
  stats: Record<string, np.Array>;
};

/** A built-in loss: its wire contract and its jittable implementation. */
export interface LossDefinition {
  /** `loss_fn_inputs` keys that must be present (besides the shape rules in validate.ts). */
  requiredInputs: readonly string[];
  /** `loss_fn_inputs` keys that may be present. */
  optionalInputs: readonly string[];
  /** Allowed `loss_fn_config` keys with their defaults. */
  config: Readonly<Record<string, number>>;
  /** Whether `target_tokens`/`weights` may be `[N, K]` (top-K distillation). */
  allows2d: boolean;
  /** Names of the scalar sums `fn` returns in {@link LossTerms.stats}. */
  stats: readonly string[];
  /** The loss; consumes `lp` and `tokens`. */
  fn: (lp: np.Array, tokens: LossTokens, config: LossConfig) => LossTerms;
  /** Host-side metrics (besides `loss:sum`) from the summed {@link LossTerms.stats}. */
  metrics: (stats: Record<string, number>) => Record<string, number>;
}

const CLIP_STATS = ["clipped", "active"] as const;
const RL_INPUTS = ["target_tokens", "logprobs", "advantages"] as const;

/**
 * A config value that is used again later: numbers pass through, arrays get a new reference
 * (jax-js ops consume their array arguments).
 */
function keep(x: number | np.Array): number | np.Array {
  return typeof x === "number" ? x : x.ref;
}

/** The per-token values of a loss after {@link gate}. */
type Gated = { lp: np.Array; w: np.Array; q: np.Array; a: np.Array };

/**
 * Replaces `lp`, `q` and `A` by 0 wherever the weight is 0, before any arithmetic. Then a
 * masked position computes `r = 1` and finite terms whatever the client (or the padding)
 * put there, and its `w = 0` factor zeroes it in both the value and the gradient. (A mask
 * applied only at the end would still turn `0 · ∞` from e.g. `exp(lp − q)` with a huge
 * `−q` into a NaN gradient.) Absent RL inputs come back as zeros. Consumes its arguments.
 */
function gate(lp: np.Array, tokens: LossTokens): Gated {
  const on = np.notEqual(tokens.weights.ref, 0);
  const g = (x: np.Array | undefined) => x ? np.where(on.ref, x, 0) : np.zerosLike(lp.ref);
  const out = { q: g(tokens.logprobs), a: g(tokens.advantages), lp: g(lp), w: tokens.weights };
  on.dispose();
  return out;
}

/** `−Σ w·objective`, the summed loss. Consumes both. */
function weightedLoss(objective: np.Array, w: np.Array): np.Array {
  return w.mul(objective).sum().neg();
}

/** `r = exp(lp − q)`, the learner/sampler probability ratio. Consumes both. */
function ratio(lp: np.Array, q: np.Array): np.Array {
  return np.exp(lp.sub(q));
}

/** `clip_fraction:mean` = clipped / active, 0 when no token is active. */
function clipFraction(stats: Record<string, number>): Record<string, number> {
  return { "clip_fraction:mean": stats.active > 0 ? stats.clipped / stats.active : 0 };
}

/** `L = Σ −w·lp`. */
function crossEntropy(lp: np.Array, tokens: LossTokens): LossTerms {
  const t = gate(lp, tokens);
  t.q.dispose();
  t.a.dispose();
  return { loss: weightedLoss(t.lp, t.w), stats: {} };
}

/** `L = −Σ r·A`. */
function importanceSampling(lp: np.Array, tokens: LossTokens): LossTerms {
  const t = gate(lp, tokens);
  return { loss: weightedLoss(ratio(t.lp, t.q).mul(t.a), t.w), stats: {} };
}

/**
 * Sums for `clip_fraction:mean`: `active` counts tokens with weight ≠ 0 and A ≠ 0 (the
 * ones a policy-gradient loss acts on; prompt tokens have A = 0), `clipped` those of them
 * where `isClipped` holds. Consumes `isClipped`, borrows `a` (gated, so A ≠ 0 implies w ≠ 0).
 */
function clipStats(isClipped: np.Array, a: np.Array): Record<string, np.Array> {
  const active = np.notEqual(a.ref, 0);
  const clipped = np.logicalAnd(isClipped, active.ref).astype(np.float32).sum();
  return { clipped, active: active.astype(np.float32).sum() };
}

/**
 * `L = −Σ min(r·A, clip(r, lo, hi)·A)`. Where the clipped term is the smaller one the
 * gradient is 0 (jax's `clip` has zero derivative outside `[lo, hi]`); `clipped` counts
 * those tokens: `A > 0, r > hi` or `A < 0, r < lo`.
 */
function ppo(lp: np.Array, tokens: LossTokens, config: LossConfig): LossTerms {
  const { lp: l, w, q, a } = gate(lp, tokens);
  const lo = config.clip_low_threshold, hi = config.clip_high_threshold;
  const r = ratio(l, q);
  const isClipped = np.logicalOr(
    np.logicalAnd(np.greater(a.ref, 0), np.greater(r.ref, keep(hi))),
    np.logicalAnd(np.less(a.ref, 0), np.less(r.ref, keep(lo))),
  );
  const stats = clipStats(isClipped, a);
  const objective = np.minimum(r.ref.mul(a.ref), np.clip(r, lo, hi).mul(a));
  return { loss: weightedLoss(objective, w), stats };
}

/**
 * `L = −Σ sg(clip(r, lo, hi))·lp·A`: a policy gradient whose per-token coefficient is the
 * clipped ratio with its gradient stopped, so every token keeps a gradient (unlike PPO);
 * `clipped` counts tokens with `r` outside `[lo, hi]`.
 */
function cispo(lp: np.Array, tokens: LossTokens, config: LossConfig): LossTerms {
  const { lp: l, w, q, a } = gate(lp, tokens);
  const lo = config.clip_low_threshold, hi = config.clip_high_threshold;
  const r = ratio(l.ref, q);
  const isClipped = np.logicalOr(np.less(r.ref, keep(lo)), np.greater(r.ref, keep(hi)));
  const stats = clipStats(isClipped, a);
  const coef = lax.stopGradient(np.clip(r, lo, hi));
  return { loss: weightedLoss(coef.mul(l).mul(a), w), stats };
}

/** `L = −Σ [lp·A − ½·β·(lp − q)²]`: a policy gradient with a quadratic pull towards q. */
function dro(lp: np.Array, tokens: LossTokens, config: LossConfig): LossTerms {
  const { lp: l, w, q, a } = gate(lp, tokens);
  const drift = np.square(l.ref.sub(q)).mul(config.beta).mul(0.5);
  return { loss: weightedLoss(l.mul(a).sub(drift), w), stats: {} };
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
    fn: crossEntropy,
    metrics: noMetrics,
  },
  importance_sampling: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: {},
    allows2d: false,
    stats: [],
    fn: importanceSampling,
    metrics: noMetrics,
  },
  ppo: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
    allows2d: false,
    stats: CLIP_STATS,
    fn: ppo,
    metrics: clipFraction,
  },
  cispo: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: { clip_low_threshold: 0.0, clip_high_threshold: 4.0 },
    allows2d: false,
    stats: CLIP_STATS,
    fn: cispo,
    metrics: clipFraction,
  },
  dro: {
    requiredInputs: RL_INPUTS,
    optionalInputs: ["weights"],
    config: { beta: 0.05 },
    allows2d: false,
    stats: [],
    fn: dro,
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
