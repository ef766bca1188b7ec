/**
 * Everything a run checks and resolves before it starts, in one place ({@link prepareRun}): the
 * model the backend serves and its tokenizer, the proxy-or-environments choice, the pipeline,
 * the environment (its module, id and wrappers: checked once), the held-out environment, the
 * method's settings and judge, the proxy's port, the renderer, the model's context, and the
 * branch point. A mistake is one {@link ConfigError} naming the setting, raised before a run
 * directory is made. What it resolves (a {@link PreparedRun}) is what the sources, the loop, the
 * update, the failure rules and the evaluator are built from: plain values, each read from the
 * config here and nowhere else (the config itself goes on only to the run's record, tracking, an
 * `environments:` mix and the proxy). Checks of an integration (the backend's models, the
 * proxy's address) are functions passed in, so the core imports none.
 *
 * @module
 */

import type { CheckpointRecord } from "../rundir/mod.ts";
import { resolve } from "node:path";
import { advantageConfig, resolveLearningRate, type TrainConfig } from "../config/mod.ts";
import { ConfigError } from "../config/load.ts";
import type { AnyEnv } from "../envs/types.ts";
import { envFactory, importEnvModuleChecked } from "./environment.ts";
import { localModelMismatch } from "../envs/local_models.ts";
import { make } from "../envs/registry.ts";
import { modelInfo } from "../models/mod.ts";
import { getRenderer, type Renderer } from "../renderers/mod.ts";
import {
  evidencePlan,
  type MethodSettings,
  methodSettingsOf,
  openEvidenceSources,
  type SourceSettings,
} from "../scoring/mod.ts";
import type { ServiceClient } from "../tinker/mod.ts";
import { prepareTokenizer } from "../tokenizers/mod.ts";
import type { CollectOptions } from "../rollout/mod.ts";
import { templateDeclaration } from "../rollout/tool_prompt.ts";
import type { HeldOutSettings } from "./evaluate.ts";
import type { FailureSettings } from "./failures.ts";
import type { LoopSettings } from "./loop.ts";
import type { RolloutSettings } from "./rollout_options.ts";
import { branchPoint } from "./run.ts";
import type { OptimizerSettings, Scoring } from "./update.ts";

/** What {@link prepareRun} needs besides the config. */
export interface PrepareOptions {
  /** The Tinker session. */
  service: ServiceClient;
  /** The run directory (default: {@link defaultLogDir} of the config). */
  logDir?: string;
  /** `--restart`: the run directory is started over (by the caller, after the checks). */
  restart?: boolean;
  /** `--branch-from DIR`: the run starts from DIR's last checkpoint, in its own directory. */
  branchFrom?: string;
  /** The proxy's key (`--api-key`); without one, a proxy open beyond loopback is warned of. */
  apiKey?: string | null;
  /** Lines the user should see as the checks run (a proxy open to the network); stderr. */
  onNotice?: (line: string) => void;
  /** The backend's check of the policy model (after the tokenizer's): throws naming its models. */
  checkModel?: (model: string) => void;
  /** The check of the proxy's address: warns of an open door, throws when the port is taken. */
  checkProxyAddress?: (host: string, port: number, hasKey: boolean) => void;
}

/** A run's settings, checked and resolved. */
export interface PreparedRun {
  /**
   * The config, fitted to the model's context (and, for a branch, its `resume_from`): the run's
   * record (config.json, tracking) and what an `environments:` mix and the proxy read of their
   * own sections. Nothing in the core reads it: it reads the resolved values below.
   */
  config: TrainConfig;
  /** Steps the run trains (`max_steps`; a mix's `num_epochs` may set them otherwise). */
  steps: number;
  /** What the run's rollouts play with (training and held-out alike). */
  rollouts: RolloutSettings;
  /** The loop's settings: optimizer, failure rules, checkpoints, minibatches. */
  loop: LoopSettings;
  /** The held-out evaluation's settings (on the rollouts' options). */
  heldOut: HeldOutSettings;
  /** Where the method's judge and teacher come from ({@link openScoring}). */
  evidence: SourceSettings;
  /** The run directory. */
  logDir: string;
  /** The policy's renderer for the run's episodes (the proxy's: chat). */
  renderer: Renderer;
  /** The renderer judges and teachers read (chat, whatever the episodes' prompt format). */
  chat: Renderer;
  /** The method's settings (a proxy run's: each turn on its own reward). */
  method: MethodSettings;
  /**
   * A maker of the run's one environment (`rollout.env_id`; a proxy run's `eval.env_id`),
   * checked; null for an `environments:` mix (its plan resolves each) or a proxy run with no
   * held-out environment.
   */
  makeEnv: (() => AnyEnv) | null;
  /** The checkpoint a `--branch-from` run starts from. */
  branchedFrom: CheckpointRecord | null;
}

/**
 * Checks every setting a run needs before it starts and resolves them (see the module doc).
 *
 * @example
 * const prepared = await prepareRun(config, { service: tinker.service });
 * prepared.config.rollout.max_total_tokens; // bounded by the model's context
 */
export async function prepareRun(config: TrainConfig, o: PrepareOptions): Promise<PreparedRun> {
  const cfg = structuredClone(config);
  const logDir = o.logDir ?? cfg.logging.log_path ?? defaultLogDir(cfg);
  const mix = Object.keys(cfg.environments).length > 0;
  if (o.restart && o.branchFrom !== undefined) {
    throw new ConfigError("give --restart or --branch-from, not both");
  }
  if (cfg.proxy && mix) {
    throw new ConfigError(
      "environments: a run trains on the proxy's sessions or on environments, not both",
    );
  }
  // A lineup model's tokenizer files are fetched from the hub at first use (no-op when here).
  const tokenizerModel = cfg.policy.tokenizer ?? cfg.policy.model;
  if (modelInfo(tokenizerModel)) {
    await prepareTokenizer(tokenizerModel).catch((e) => {
      throw new ConfigError(`policy.model: ${(e as Error).message}`);
    });
  }
  o.checkModel?.(cfg.policy.model);
  checkPipeline(cfg);
  if (!cfg.proxy && cfg.eval.env_id !== null) {
    throw new ConfigError(
      "eval.env_id: for proxy runs (--source proxy) only; an environment run evaluates on its own environment",
    );
  }
  const method = cfg.proxy ? proxyMethodSettings(cfg) : methodSettings(cfg);
  if (cfg.proxy) {
    checkNoDownsampling(cfg);
    checkJudge(cfg, method);
    // Before a run directory is made (or restarted).
    o.checkProxyAddress?.(cfg.proxy.host, cfg.proxy.port, (o.apiKey ?? null) !== null);
  }
  // The one environment, checked once: an env run's own, or the one a proxy run is held out on.
  const envId = cfg.proxy ? cfg.eval.env_id : mix ? null : cfg.rollout.env_id;
  if (envId !== null && cfg.rollout.env_module) {
    await importEnvModuleChecked(cfg.rollout.env_module);
  }
  const makeEnv = envId === null
    ? null
    : envFactory(envId, cfg.rollout.env_wrappers, cfg.proxy ? "eval.env_id" : "rollout.env_id");
  if (envId !== null && !cfg.proxy && !Deno.env.get("TINKER_API_KEY")) {
    const mismatch = localModelMismatch(make(envId).localModels, {
      envId,
      model: cfg.policy.model,
      teacher: cfg.teacher.model ?? cfg.policy.model,
      method: cfg.scoring.method,
      hint: cfg.scoring.opd_hint,
      anyTeacher: cfg.scoring.worse_teacher_steps === 0,
    });
    if (mismatch) throw new ConfigError(mismatch);
  }
  // The proxy serves chat; env rollouts use GEM's `rollout.template`.
  const renderer = rendererFor(cfg, !cfg.proxy);
  const chat = cfg.rollout.template === "chat" || cfg.proxy ? renderer : rendererFor(cfg, false);
  const fitted = await fitToContext(cfg, o.service);
  let branchedFrom: CheckpointRecord | null = null;
  if (o.branchFrom !== undefined) {
    if (resolve(o.branchFrom) === resolve(logDir)) {
      throw new ConfigError("--branch-from: give the branch its own --log-path");
    }
    branchedFrom = await branchPoint(o.branchFrom);
    fitted.checkpoints.resume_from = branchedFrom.state_path;
  }
  const rollouts = rolloutSettings(fitted);
  return {
    config: fitted,
    steps: fitted.max_steps,
    rollouts,
    loop: loopSettings(fitted),
    heldOut: {
      episodes: fitted.eval.episodes,
      envId: fitted.eval.env_id ?? fitted.rollout.env_id,
      model: fitted.policy.model,
      collect: rollouts.collect,
    },
    evidence: {
      teacherModel: fitted.teacher.model ?? fitted.policy.model,
      judgeBaseUrl: fitted.judge.base_url,
      judgeModel: fitted.judge.model,
      judgeSampling: {
        m: fitted.judge.votes,
        temperature: fitted.judge.temperature,
        maxTokens: fitted.judge.max_tokens,
        seed: fitted.seed,
      },
    },
    logDir,
    renderer,
    chat,
    method,
    makeEnv,
    branchedFrom,
  };
}

/** What every collection of a run shares, from its config (see {@link RolloutSettings}). */
export function rolloutSettings(cfg: TrainConfig): RolloutSettings {
  const r = cfg.rollout;
  return {
    envId: r.env_id,
    seed: cfg.seed,
    groupsPerBatch: r.groups_per_batch,
    mode: cfg.pipeline.mode,
    maxStepsOffPolicy: cfg.pipeline.max_steps_off_policy,
    collect: {
      groupSize: r.group_size,
      maxConcurrency: r.max_concurrency,
      maxTokensPerTurn: r.max_tokens_per_turn,
      maxTokensPerEpisode: r.max_tokens_per_episode ?? undefined,
      maxTotalTokens: r.max_total_tokens ?? undefined,
      timeoutMs: r.timeout_s === null ? undefined : r.timeout_s * 1000,
      temperature: r.temperature,
      failures: { onError: r.on_error, maxRetries: r.max_retries },
      toolUse: toolUseOptions(cfg),
    },
  };
}

/** How a run's episodes declare tools and score invalid calls (rollouts and held-out alike). */
export function toolUseOptions(cfg: TrainConfig): NonNullable<CollectOptions["toolUse"]> {
  const r = cfg.rollout;
  return {
    invalidCallReward: r.invalid_tool_call_reward,
    endOnInvalidCall: r.on_invalid_tool_call === "end",
    ...(r.system_prompt_template
      ? { declareTools: templateDeclaration(r.system_prompt_template) }
      : {}),
  };
}

/** The loop's settings from the config (see {@link LoopSettings}). */
export function loopSettings(cfg: TrainConfig): LoopSettings {
  return {
    optimizer: optimizerSettings(cfg),
    failures: failureSettings(cfg),
    saveEvery: cfg.checkpoints.save_every,
    minibatchGroups: cfg.pipeline.mode === "stream"
      ? Math.ceil(cfg.rollout.groups_per_batch / cfg.pipeline.num_minibatches)
      : Infinity,
  };
}

/**
 * Every optimizer setting of a run, from its config: the RL step loop builds each step's update
 * from this alone, so no source of groups can leave a setting out.
 *
 * @example
 * optimizerSettings(cfg).adam; // { learning_rate: 1e-3, weight_decay: 0 }
 */
export function optimizerSettings(cfg: TrainConfig): OptimizerSettings {
  return {
    lossFn: cfg.optimizer.loss_fn,
    lossFnConfig: cfg.optimizer.loss_fn_config,
    adam: { learning_rate: resolveLearningRate(cfg), weight_decay: cfg.optimizer.weight_decay },
    epochs: cfg.optimizer.train_epochs,
  };
}

/** The failure rules' settings from the config (see {@link FailureSettings}). */
export function failureSettings(cfg: TrainConfig): FailureSettings {
  return {
    maxStepsWithoutDatums: cfg.pipeline.max_steps_without_datums,
    worseTeacher: {
      negativeFrac: cfg.scoring.worse_teacher_frac,
      steps: cfg.scoring.worse_teacher_steps,
    },
    groupSize: cfg.rollout.group_size,
  };
}

/** The default run directory of a configuration, so that rerunning a command resumes it. */
export function defaultLogDir(cfg: TrainConfig): string {
  const slug = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_");
  const names = Object.keys(cfg.environments);
  const env = cfg.proxy ? "proxy" : names.length ? `mix_${names.join("+")}` : cfg.rollout.env_id;
  return `.tinkerbench/runs/${cfg.scoring.method}-${slug(env)}-${
    slug(cfg.policy.model)
  }-seed${cfg.seed}`;
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
  return methodSettingsOf(cfg.scoring, advantageConfig(cfg.advantages));
}

/**
 * The method's settings for proxy turns: OpenClaw trains each turn on its own reward, with no
 * group baseline (`discounted` with γ = 0 is the turn's own reward, un-normalised).
 */
export function proxyMethodSettings(cfg: TrainConfig): MethodSettings {
  const m = methodSettings(cfg);
  return {
    ...m,
    advantages: {
      ...m.advantages,
      mode: "discounted",
      gamma: 0,
      constantGroups: "keep",
      nonFinalTurnReward: null,
      downsampleTo: null,
    },
  };
}

/** Down-sampling needs groups; a proxy turn is its own. */
function checkNoDownsampling(cfg: TrainConfig): void {
  if (cfg.advantages.downsample_to !== null) {
    throw new ConfigError(
      `advantages.downsample_to ${cfg.advantages.downsample_to}: proxy turns are trained on ` +
        "their own rewards, with no groups to down-sample; unset it with --source proxy",
    );
  }
}

/** `rl` with PRM rewards needs a judge: the local models cannot judge. */
function checkJudge(cfg: TrainConfig, m: MethodSettings): void {
  const judgeModel = cfg.teacher.model ?? cfg.policy.model;
  if (
    m.method !== "opd" && m.rewardSource === "prm" && !cfg.judge.base_url &&
    judgeModel.startsWith("local/")
  ) {
    throw new ConfigError(
      `scoring.rl_reward prm: ${judgeModel} cannot judge; pass --judge-base-url URL (an ` +
        "OpenAI-compatible judge), or train on client rewards (--reward-source env and " +
        "X-Turn-Reward from the agent)",
    );
  }
}

/** A prepared run's scoring: the method's evidence plan, and the judge and teacher it needs. */
export async function openScoring(p: PreparedRun, service: ServiceClient): Promise<Scoring> {
  const plan = evidencePlan(p.method);
  const sources = await openEvidenceSources(
    plan,
    { ...p.evidence, judgeApiKey: Deno.env.get("JUDGE_API_KEY") },
    service,
    p.chat,
  );
  return { method: p.method, plan, sources };
}
