/**
 * The RL trainer on environments: rollout → evidence → advantages → datums → forward_backward →
 * optim_step → new sampler, for the methods `rl`, `opd` and `combine`, over any
 * Tinker-compatible service. Every stage is a library function the proxy and the notebooks call
 * too (`collectGroups`, `gatherEvidence`, `composeAdvantages`, `scoredGroupsToDatums`); this file
 * only sequences them, checkpoints and logs.
 *
 * Execution modes (`pipeline.mode`): `sync` samples a step's groups, then trains; `stream`
 * submits forward_backward for each minibatch of groups as soon as it is in (still on-policy);
 * `async` keeps rollout workers sampling with the newest sampler while the trainer trains, paced
 * so no group is more than `pipeline.max_steps_off_policy` steps stale (./rollouts.ts). Each
 * step's forward_backward, optim_step and the next sampler's weight save are submitted together
 * and awaited once (./update.ts). Every step writes a metrics row, its rollouts and its timing
 * spans; every `checkpoints.save_every` steps, and at the end, the state (weights and Adam) is
 * saved and recorded in `checkpoints.jsonl`. A rerun with the same log directory resumes from the
 * last record exactly: environments' and sampling seeds are functions of (seed, step, group), so
 * the data cursor is the step; in `async` mode the groups in flight at the checkpoint are played
 * again (same seeds) with the resumed weights, and no step is trained twice.
 *
 * @module
 */

import { advantageConfig, resolveLearningRate, type TrainConfig } from "../config/mod.ts";
import { make, UnknownEnvError } from "../envs/registry.ts";
import { wrapAll } from "../envs/wrappers.ts";
import type { AnyEnv } from "../envs/types.ts";
import { EnvModuleError, importEnvModule } from "../envs/modules.ts";
import { getRenderer, type Renderer } from "../renderers/mod.ts";
import { rolloutRecords } from "../rl/records.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import {
  evidencePlan,
  type EvidenceSources,
  type MethodSettings,
  openEvidenceSources,
} from "../scoring/mod.ts";
import type { ServiceClient, TrainingClient } from "../tinker/mod.ts";
import { ConfigError } from "../config/load.ts";
import { advantageMetrics, episodeSucceeded, rolloutMetrics } from "./metrics.ts";
import { AsyncRollouts, type RolloutSource, SyncRollouts } from "./rollouts.ts";
import { StepUpdate } from "./update.ts";
import { type CheckpointRecord, RunLog } from "./run_log.ts";
import { EnvironmentMix, MixRollouts, redactSecrets } from "./mix.ts";
import { evaluateRun, type HeldOutEvaluation, writeEvaluation } from "./evaluate.ts";

/** One step's metrics row (tinker-cookbook names, see ./metrics.ts). */
export type StepMetrics = { step: number } & Record<string, number>;

/** Options of {@link trainRL}. */
export interface RLTrainOptions {
  config: TrainConfig;
  service: ServiceClient;
  /** The run directory (metrics, checkpoints, rollouts). */
  logDir: string;
  /** Aborting saves the state after the current step and returns (SIGINT). */
  signal?: AbortSignal;
  /** Called after each step, e.g. for a progress bar. */
  onStep?: (m: StepMetrics) => void | Promise<void>;
  /** Called as the held-out evaluation's episodes finish (see ./evaluate.ts). */
  onEvaluation?: (p: { done: number; total: number }) => void;
  /** Called once the run knows where it starts (fresh or resumed). */
  onStart?: (
    info: { startStep: number; resumedFrom: CheckpointRecord | null; maxSteps: number },
  ) => void;
}

/** How a run ended. */
export interface RLTrainResult {
  /** Steps completed in total (including steps before a resume). */
  steps: number;
  resumedFrom: CheckpointRecord | null;
  interrupted: boolean;
  /** The last checkpoint written (final or interrupted). */
  checkpoint: CheckpointRecord | null;
  history: StepMetrics[];
  /** The held-out evaluation (also in the run's `eval.json`); absent when off or interrupted. */
  evaluation?: HeldOutEvaluation;
}

/**
 * Trains a policy on `config.rollout.env_id` with `config.scoring.method`.
 *
 * @example
 * const tinker = await connectTinker();
 * const config = await loadTrainConfig({ flags: { "max-steps": 5, "model-name": "local/tiny" } });
 * await trainRL({ config, service: tinker.service, logDir: ".tinkerbench/runs/demo" });
 */
export async function trainRL(o: RLTrainOptions): Promise<RLTrainResult> {
  checkPipeline(o.config);
  if (o.config.rollout.env_module) await importEnvModuleOrConfigError(o.config.rollout.env_module);
  // With an environments: map, each step mixes them (./mix.ts); num_epochs sets the steps.
  const mix = await EnvironmentMix.open(o.config);
  const cfg = mix ? { ...o.config, max_steps: mix.steps } : o.config;
  const makeEnv = mix
    ? () => make(cfg.rollout.env_id)
    : envFactory(cfg.rollout.env_id, cfg.rollout.env_wrappers);
  const renderer = rendererFor(cfg);
  const { log, training, startStep, result } = await openRun(cfg, o);
  if (startStep >= cfg.max_steps) return result;

  const method = methodSettings(cfg);
  const plan = evidencePlan(method);
  // Judges and teachers read chat, whatever prompt format the env rollouts use.
  const chat = cfg.rollout.template === "chat" ? renderer : rendererFor(cfg, false);
  const sources = await evidenceSources(cfg, plan, o.service, chat);
  const lr = resolveLearningRate(cfg);
  const mode = cfg.pipeline.mode;
  const t0 = performance.now();
  // Sampler version v carries the weights after v training steps: the run's steps so far.
  let sampler = await training.saveWeightsAndGetSamplingClient();
  const ctx = { cfg, makeEnv, renderer, t0 };
  const source: RolloutSource = mix
    ? new MixRollouts(mix, ctx, sampler, startStep)
    : mode === "async"
    ? new AsyncRollouts(ctx, sampler, startStep, startStep + 1)
    : new SyncRollouts(ctx, sampler, startStep);
  const minibatch = mode === "stream"
    ? Math.ceil(cfg.rollout.groups_per_batch / cfg.pipeline.num_minibatches)
    : Infinity;

  try {
    for (let step = startStep + 1; step <= cfg.max_steps; step++) {
      if (o.signal?.aborted) {
        result.interrupted = true;
        break;
      }
      const tStep = performance.now();
      const update = new StepUpdate({
        training,
        plan,
        sources,
        // A mix fixes episode rewards by its environments' rules as their groups come in.
        method: mix ? { ...method, episodeRewards: mix.episodeRewards } : method,
        lossFn: cfg.optimizer.loss_fn,
        lossFnConfig: cfg.optimizer.loss_fn_config,
        learningRate: lr,
        weightDecay: cfg.optimizer.weight_decay,
        epochs: cfg.optimizer.train_epochs,
        t0,
      });
      // Streamed minibatches start training on the first groups while the rest still play.
      let pending: EpisodeGroup[] = [];
      const rollouts = await source.take(step, (g) => {
        pending.push(g);
        if (pending.length >= minibatch) update.add(pending.splice(0));
      });
      if (minibatch === Infinity) pending = rollouts.groups;
      if (pending.length > 0 || rollouts.groups.length === 0) update.add(pending);
      const tSampled = performance.now();
      const out = await update.finish();
      const tTrained = performance.now();
      // A step with nothing to train leaves the weights as they were: same sampler, next version.
      sampler = out.sampler ?? sampler;
      source.setSampler(sampler, step);

      const row: StepMetrics = {
        step,
        "progress/batch": step,
        "progress/done_frac": step / cfg.max_steps,
        "optim/lr": lr,
        ...rolloutMetrics(rollouts.groups),
        ...rollouts.metrics,
        ...advantageMetrics(out.composed.advantageStats),
        ...out.composed.metrics,
        ...out.metrics,
        "train/datums": out.datums,
        "time/sample": (tSampled - tStep) / 1000,
        "time/train": (tTrained - tSampled) / 1000,
        "time/step": (tTrained - tStep) / 1000,
      };
      await log.writeRollouts(step, rolloutRecords(step, out.groups, episodeSucceeded));
      await log.appendSpans(step, [...rollouts.spans, ...out.spans, {
        name: "step",
        start: tStep - t0,
        end: tTrained - t0,
      }]);
      await log.appendMetrics(row);
      result.history.push(row);
      result.steps = step;
      await o.onStep?.(row);

      if (
        cfg.checkpoints.save_every > 0 && step % cfg.checkpoints.save_every === 0 &&
        step < cfg.max_steps
      ) {
        result.checkpoint = await saveCheckpoint(log, training, step, "periodic");
      }
    }
  } finally {
    await source.close();
  }

  if (result.steps > startStep || result.interrupted) {
    result.checkpoint = await saveCheckpoint(
      log,
      training,
      result.steps,
      result.interrupted ? "interrupted" : "final",
    );
  }
  // Held out on the one environment trained (a mix's environments are not evaluated yet).
  if (cfg.eval.episodes > 0 && !mix && !result.interrupted && result.steps > startStep) {
    result.evaluation = await evaluateRun({
      config: cfg,
      service: o.service,
      trained: sampler,
      step: result.steps,
      makeEnv,
      renderer,
      onProgress: o.onEvaluation,
    });
    await writeEvaluation(o.logDir, result.evaluation);
  }
  return result;
}

/**
 * The training client a run starts from: the run directory's own last checkpoint (exact, with
 * optimizer), else `checkpoints.resume_from` (weights only, the step count starts again, as
 * OpenClaw does), else a fresh LoRA. The directory is rewound to the starting step.
 */
export async function startTraining(
  cfg: TrainConfig,
  service: ServiceClient,
  log: RunLog,
): Promise<{ training: TrainingClient; startStep: number; resumedFrom: CheckpointRecord | null }> {
  const resumedFrom = log.lastCheckpoint();
  let training: TrainingClient;
  let startStep = 0;
  if (resumedFrom) {
    training = await service.createTrainingClientFromState(resumedFrom.state_path, {
      withOptimizer: true,
    });
    startStep = resumedFrom.step;
  } else if (cfg.checkpoints.resume_from) {
    training = await service.createTrainingClientFromState(cfg.checkpoints.resume_from);
  } else {
    training = await service.createLoraTrainingClient({
      baseModel: cfg.policy.model,
      rank: cfg.policy.lora_rank,
      seed: cfg.seed,
    });
  }
  await log.rewindTo(startStep);
  return { training, startStep, resumedFrom };
}

/**
 * Opens a run: its directory (with the resolved config written), its training client (see
 * {@link startTraining}), the `onStart` call and the result record the loop fills in. The env
 * trainer and the proxy trainer start every run this way.
 */
export async function openRun(
  cfg: TrainConfig,
  o: Pick<RLTrainOptions, "service" | "logDir" | "onStart">,
): Promise<{ log: RunLog; training: TrainingClient; startStep: number; result: RLTrainResult }> {
  const log = await RunLog.open(o.logDir);
  await log.writeConfig(redactSecrets(cfg));
  const { training, startStep, resumedFrom } = await startTraining(cfg, o.service, log);
  o.onStart?.({ startStep, resumedFrom, maxSteps: cfg.max_steps });
  const result: RLTrainResult = {
    steps: startStep,
    resumedFrom,
    interrupted: false,
    checkpoint: resumedFrom,
    history: [],
  };
  return { log, training, startStep, result };
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
  if (cfg.pipeline.mode === "async" && Object.keys(cfg.environments).length > 0) {
    throw new ConfigError(
      "pipeline.mode async: not offered with environments yet; use sync or stream",
    );
  }
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

async function importEnvModuleOrConfigError(path: string): Promise<void> {
  try {
    await importEnvModule(path);
  } catch (e) {
    if (e instanceof EnvModuleError) throw new ConfigError(`rollout.${e.message}`);
    throw e;
  }
}

function envFactory(envId: string, wrappers: string): () => AnyEnv {
  try {
    make(envId);
  } catch (e) {
    if (e instanceof UnknownEnvError) throw new ConfigError(`rollout.env_id: ${e.message}`);
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
    rewardSource: cfg.scoring.reward_source,
    hintSource: cfg.scoring.hint_source === "judge" ? "judge" : "next_state",
    evalMode: cfg.scoring.eval_mode,
    advantages: advantageConfig(cfg.advantages),
    wOpd: cfg.scoring.w_opd,
    wRl: cfg.scoring.w_rl,
    klCoef: cfg.scoring.kl_loss_coef,
  };
}

/** The judge and teacher the plan needs, from the config. */
export async function evidenceSources(
  cfg: TrainConfig,
  plan: ReturnType<typeof evidencePlan>,
  service: ServiceClient,
  renderer: Renderer,
): Promise<EvidenceSources> {
  return await openEvidenceSources(
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
}

/** Saves the state (and, for the final one, sampler weights) and records it. */
export async function saveCheckpoint(
  log: RunLog,
  training: TrainingClient,
  step: number,
  kind: CheckpointRecord["kind"],
): Promise<CheckpointRecord> {
  const name = kind === "final" ? "final" : `${kind}_step_${String(step).padStart(6, "0")}`;
  const state_path = await training.saveState(name);
  const sampler_path = kind === "final" ? await training.saveWeightsForSampler(name) : undefined;
  const rec: CheckpointRecord = {
    name,
    step,
    state_path,
    ...(sampler_path ? { sampler_path } : {}),
    kind,
    time: new Date().toISOString(),
  };
  await log.appendCheckpoint(rec);
  return rec;
}
