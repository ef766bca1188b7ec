/**
 * The RL trainer on environments: the environment (or an `environments:` mix) as the source of
 * groups of the one RL step loop (./loop.ts), for the methods `rl`, `opd` and `combine`, over
 * any Tinker-compatible service.
 *
 * Execution modes (`pipeline.mode`): `sync` samples a step's groups, then trains; `stream`
 * submits forward_backward for each minibatch of groups as soon as it is in (still on-policy);
 * `async` keeps rollout workers sampling with the newest sampler while the trainer trains, paced
 * so no group is more than `pipeline.max_steps_off_policy` steps stale (./async_rollouts.ts).
 * A rerun with the same log directory resumes from the last record exactly: environments' and
 * sampling seeds are functions of (seed, step, group), so the data cursor is the step; in
 * `async` mode the groups in flight at the checkpoint are played again (same seeds) with the
 * resumed weights, and no step is trained twice.
 *
 * @module
 */

import { advantageConfig, type TrainConfig } from "../config/mod.ts";
import { make, UnknownEnvError } from "../envs/registry.ts";
import { wrapAll } from "../envs/wrappers.ts";
import type { AnyEnv } from "../envs/types.ts";
import { EnvModuleError, importEnvModule } from "../envs/modules.ts";
import { getRenderer, type Renderer } from "../renderers/mod.ts";
import { evidencePlan, type MethodSettings, openEvidenceSources } from "../scoring/mod.ts";
import type { ServiceClient } from "../tinker/mod.ts";
import { ConfigError } from "../config/load.ts";
import { SyncRollouts } from "./sync_rollouts.ts";
import { AsyncRollouts } from "./async_rollouts.ts";
import { EnvironmentMix } from "./mix.ts";
import { evaluateMixRun, evaluateRun, heldOutEnvironment } from "./evaluate.ts";
import { runSteps, type Scoring } from "./loop.ts";
import { openRun, type RunOptions, type RunResult } from "./run.ts";
import type { GroupSource } from "./source.ts";

export { defaultLogDir, saveCheckpoint, type StepMetrics } from "./run.ts";

/** Options of {@link trainRL}. */
export type RLTrainOptions = RunOptions;

/** How a run ended. */
export type RLTrainResult = RunResult;

/**
 * Trains a policy on `config.rollout.env_id` (or the config's `environments:` mix) with
 * `config.scoring.method`: the environments as the RL step loop's source of groups.
 *
 * @example
 * const tinker = await connectTinker();
 * const config = await loadTrainConfig({ flags: { "max-steps": 5, "model-name": "local/tiny" } });
 * await trainRL({ config, service: tinker.service, logDir: ".tinkerbench/runs/demo" });
 */
export async function trainRL(o: RLTrainOptions): Promise<RLTrainResult> {
  if (o.config.eval.env_id !== null) {
    throw new ConfigError(
      "eval.env_id: for proxy runs (--source proxy) only; an environment run evaluates on its own environment",
    );
  }
  checkPipeline(o.config);
  if (o.config.rollout.env_module) await importEnvModuleOrConfigError(o.config.rollout.env_module);
  // With an environments: map, each step mixes them (./mix.ts); num_epochs sets the steps.
  const mix = await EnvironmentMix.open(o.config);
  const cfg = await fitToContext(mix ? { ...o.config, max_steps: mix.steps } : o.config, o.service);
  const makeEnv = mix
    ? () => make(cfg.rollout.env_id)
    : envFactory(cfg.rollout.env_id, cfg.rollout.env_wrappers);
  const renderer = rendererFor(cfg);
  const run = await openRun(cfg, o);
  if (run.startStep >= cfg.max_steps) return run.result;

  // Judges and teachers read chat, whatever prompt format the env rollouts use.
  const chat = cfg.rollout.template === "chat" ? renderer : rendererFor(cfg, false);
  const scoring = await openScoring(cfg, methodSettings(cfg), o.service, chat);
  const t0 = performance.now();
  // Sampler version v carries the weights after v training steps: the run's steps so far.
  const sampler = await run.training.saveWeightsAndGetSamplingClient();
  const ctx = { cfg, makeEnv, renderer, t0 };
  const mode = cfg.pipeline.mode;
  const source: GroupSource = mode === "async"
    ? new AsyncRollouts(ctx, sampler, run.startStep, run.startStep + 1, mix)
    : new SyncRollouts(ctx, sampler, run.startStep, mix);
  return await runSteps({
    ...o,
    config: cfg,
    run,
    source,
    sampler,
    scoring,
    minibatchGroups: mode === "stream"
      ? Math.ceil(cfg.rollout.groups_per_batch / cfg.pipeline.num_minibatches)
      : Infinity,
    t0,
    evaluate: (trained, step) => {
      const input = { config: cfg, service: o.service, trained, step, renderer, signal: o.signal };
      return mix
        ? evaluateMixRun({ ...input, mix, onProgress: o.onEvaluation })
        : heldOutEnvironment(makeEnv).then((held) =>
          evaluateRun({ ...input, ...held, onProgress: o.onEvaluation })
        );
    },
  });
}

/** Stream minibatches are composed apart: batch-normalised advantages would differ per minibatch. */
function checkPipeline(cfg: TrainConfig): void {
  const batchModes = ["batch_zscore", "discounted_rebn"];
  if (
    cfg.pipeline.mode === "stream" && cfg.pipeline.num_minibatches > 1 &&
    batchModes.includes(cfg.advantages.mode)
  ) {
    throw new ConfigError(
      `pipeline.mode stream: advantages.mode ${cfg.advantages.mode} normalises over the whole ` +
        "batch; use a group mode (group_centered, group_zscore, raw, discounted) or " +
        "pipeline.num_minibatches 1",
    );
  }
}

/**
 * The config checked against the model's context, `rollout.max_total_tokens` resolved: a turn's
 * token budget must leave room for a prompt, and an episode's conversation is bounded by the
 * context when the config leaves it unbounded, so an episode that fills the context ends
 * unsolved (stop `max_tokens`) in training and held-out play alike, rather than failing and
 * being left out of both.
 */
export async function fitToContext(cfg: TrainConfig, service: ServiceClient): Promise<TrainConfig> {
  const context = await service.contextLength(cfg.policy.model);
  const perTurn = cfg.rollout.max_tokens_per_turn;
  if (perTurn >= context) {
    throw new ConfigError(
      `rollout.max_tokens_per_turn: ${perTurn} tokens per turn leave no room for a prompt in ` +
        `${cfg.policy.model}'s ${context}-token context; lower --max-tokens below ${context}`,
    );
  }
  const total = Math.min(cfg.rollout.max_total_tokens ?? context, context);
  return { ...cfg, rollout: { ...cfg.rollout, max_total_tokens: total } };
}

/** Imports `rollout.env_module`; a module that fails to load is a config error. */
export async function importEnvModuleOrConfigError(path: string): Promise<void> {
  try {
    await importEnvModule(path);
  } catch (e) {
    if (e instanceof EnvModuleError) throw new ConfigError(`rollout.${e.message}`);
    throw e;
  }
}

/**
 * A maker of `envId` wrapped in `wrappers`, checked once now: an unknown id or wrapper is a
 * config error naming `setting` (the key that gave the id).
 */
export function envFactory(
  envId: string,
  wrappers: string,
  setting = "rollout.env_id",
): () => AnyEnv {
  try {
    make(envId);
  } catch (e) {
    if (e instanceof UnknownEnvError) throw new ConfigError(`${setting}: ${e.message}`);
    throw e;
  }
  try {
    wrapAll(make(envId), wrappers);
  } catch (e) {
    throw new ConfigError(`rollout.env_wrappers: ${(e as Error).message}`);
  }
  return () => wrapAll(make(envId), wrappers);
}

/**
 * The policy's renderer: the model table's, or `policy.renderer`'s, or (for env rollouts, not
 * the proxy's chat) GEM's `rollout.template`; an unknown one is a config error.
 */
export function rendererFor(cfg: TrainConfig, envTemplate = true): Renderer {
  try {
    return getRenderer(cfg.policy.tokenizer ?? cfg.policy.model, {
      enableThinking: cfg.policy.thinking,
      renderer: cfg.policy.renderer,
      template: envTemplate ? cfg.rollout.template : "chat",
    });
  } catch (e) {
    const key = cfg.policy.renderer ? "policy.renderer" : "policy.model";
    throw new ConfigError(`${key}: ${(e as Error).message}`);
  }
}

/** The method's settings from the config. */
export function methodSettings(cfg: TrainConfig): MethodSettings {
  return {
    method: cfg.scoring.method,
    rewardSource: cfg.scoring.rl_reward,
    hintSource: cfg.scoring.opd_hint === "judge" ? "judge" : "next_state",
    evalMode: cfg.scoring.eval_mode,
    advantages: advantageConfig(cfg.advantages),
    wOpd: cfg.scoring.w_opd,
    wRl: cfg.scoring.w_rl,
    klCoef: cfg.scoring.kl_loss_coef,
  };
}

/** A run's scoring: the method's evidence plan, and the judge and teacher it needs. */
export async function openScoring(
  cfg: TrainConfig,
  method: MethodSettings,
  service: ServiceClient,
  renderer: Renderer,
): Promise<Scoring> {
  const plan = evidencePlan(method);
  const sources = await openEvidenceSources(
    plan,
    {
      teacherModel: cfg.teacher.model ?? cfg.policy.model,
      judgeBaseUrl: cfg.judge.base_url,
      judgeModel: cfg.judge.model,
      judgeApiKey: Deno.env.get("JUDGE_API_KEY"),
      judgeSampling: {
        m: cfg.judge.votes,
        temperature: cfg.judge.temperature,
        maxTokens: cfg.judge.max_tokens,
        seed: cfg.seed,
      },
    },
    service,
    renderer,
  );
  return { method, plan, sources };
}
