/**
 * The RL trainer on environments: rollout → evidence → advantages → datums → forward_backward →
 * optim_step → new sampler, for the methods `rl`, `opd` and `combine`, over any
 * Tinker-compatible service. Every stage is a library function the proxy and the notebooks call
 * too (`collectGroups`, `gatherEvidence`, `composeAdvantages`, `scoredGroupsToDatums`); this file
 * only sequences them, checkpoints and logs.
 *
 * Each step's forward_backward, optim_step and the next sampler's weight save are submitted
 * together and awaited once (the server runs them in order). Every step writes a metrics row
 * and its rollouts; every `checkpoints.save_every` steps, and at the end, the state (weights and Adam)
 * is saved and recorded in `checkpoints.jsonl`. A rerun with the same log directory resumes
 * from the last record exactly: the environments' seeds and the sampling seeds are functions
 * of (seed, step, group), so the data cursor and the RNG state are the step itself.
 *
 * @module
 */

import { advantageConfig, resolveLearningRate, type TrainConfig } from "../config/mod.ts";
import { scoredGroupsToDatums } from "../datums/mod.ts";
import { make, UnknownEnvError } from "../envs/registry.ts";
import type { AnyEnv } from "../envs/types.ts";
import { EnvModuleError, importEnvModule } from "../envs/modules.ts";
import { getRenderer, type Renderer } from "../renderers/mod.ts";
import { rolloutRecords } from "../rl/records.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import { collectGroups } from "../rollout/mod.ts";
import {
  composeAdvantages,
  evidencePlan,
  type EvidenceSources,
  gatherEvidence,
  type MethodSettings,
  openEvidenceSources,
} from "../scoring/mod.ts";
import type { SamplingClient, ServiceClient, TrainingClient } from "../tinker/mod.ts";
import type { ForwardBackwardOutput } from "../protocol/mod.ts";
import { ConfigError } from "../config/load.ts";
import { deriveSeed } from "../util/random.ts";
import { advantageMetrics, episodeSucceeded, klMetrics, rolloutMetrics } from "./metrics.ts";
import { type CheckpointRecord, RunLog } from "./run_log.ts";

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
  /** Called once the run knows where it starts (fresh or resumed). */
  onStart?: (info: { startStep: number; resumedFrom: CheckpointRecord | null }) => void;
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
  const cfg = o.config;
  if (cfg.rollout.env_module) await importEnvModuleOrConfigError(cfg.rollout.env_module);
  const makeEnv = envFactory(cfg.rollout.env_id);
  const renderer = rendererFor(cfg.policy.model);
  const log = await RunLog.open(o.logDir);
  await log.writeConfig(cfg);

  // Resume: the run directory's own last checkpoint (exact, with optimizer), else
  // --resume-from-ckpt (weights only, the step count starts again, as OpenClaw does).
  const resumedFrom = log.lastCheckpoint();
  let training: TrainingClient;
  let startStep = 0;
  if (resumedFrom) {
    training = await o.service.createTrainingClientFromState(resumedFrom.state_path, {
      withOptimizer: true,
    });
    startStep = resumedFrom.step;
    await log.rewindTo(startStep);
  } else if (cfg.checkpoints.resume_from) {
    training = await o.service.createTrainingClientFromState(cfg.checkpoints.resume_from);
    await log.rewindTo(0);
  } else {
    training = await o.service.createLoraTrainingClient({
      baseModel: cfg.policy.model,
      rank: cfg.policy.lora_rank,
      seed: cfg.seed,
    });
    await log.rewindTo(0);
  }
  o.onStart?.({ startStep, resumedFrom });
  const result: RLTrainResult = {
    steps: startStep,
    resumedFrom,
    interrupted: false,
    checkpoint: resumedFrom,
    history: [],
  };
  if (startStep >= cfg.max_steps) return result;

  const method = methodSettings(cfg);
  const plan = evidencePlan(method);
  const sources = await evidenceSources(cfg, plan, o.service, renderer);
  const lr = resolveLearningRate(cfg);
  let sampler = await training.saveWeightsAndGetSamplingClient();

  for (let step = startStep + 1; step <= cfg.max_steps; step++) {
    if (o.signal?.aborted) {
      result.interrupted = true;
      break;
    }
    const t0 = performance.now();
    // The sampler of step s carries the weights after s − 1 optimizer steps.
    const { groups, metrics: rolloutErrors } = await collect(
      cfg,
      step,
      makeEnv,
      sampler,
      renderer,
      step - 1,
    );
    const tSample = performance.now();
    const evidence = await gatherEvidence(groups, plan, sources);
    const composed = composeAdvantages(groups, evidence, method);
    const datums = scoredGroupsToDatums(composed.groups);
    const tScore = performance.now();

    const m: Record<string, number> = {};
    if (datums.length > 0) {
      const fbs: Promise<ForwardBackwardOutput>[] = [];
      const optims: Promise<unknown>[] = [];
      for (let epoch = 0; epoch < cfg.optimizer.train_epochs; epoch++) {
        fbs.push(
          training.forwardBackward(datums, cfg.optimizer.loss_fn, cfg.optimizer.loss_fn_config)
            .result(),
        );
        optims.push(training.optimStep({ learning_rate: lr }).result());
      }
      const nextSampler = training.saveWeightsAndGetSamplingClient().result();
      const [fb] = await Promise.all(fbs);
      await Promise.all(optims);
      // The first epoch's pass saw the weights that sampled: its drift is the sampler's.
      Object.assign(m, klMetrics(datums, fb));
      for (const [k, v] of Object.entries(fb.metrics)) m[`train/${k}`] = v;
      sampler = await nextSampler;
    }
    const tTrain = performance.now();

    const row: StepMetrics = {
      step,
      "progress/batch": step,
      "progress/done_frac": step / cfg.max_steps,
      "optim/lr": lr,
      ...rolloutMetrics(groups),
      ...rolloutErrors,
      ...advantageMetrics(composed.advantageStats),
      ...composed.metrics,
      ...m,
      "train/datums": datums.length,
      "time/sample": (tSample - t0) / 1000,
      "time/score": (tScore - tSample) / 1000,
      "time/train": (tTrain - tScore) / 1000,
      "time/step": (tTrain - t0) / 1000,
    };
    await log.writeRollouts(step, rolloutRecords(step, composed.groups, episodeSucceeded));
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

  if (result.steps > startStep || result.interrupted) {
    result.checkpoint = await saveCheckpoint(
      log,
      training,
      result.steps,
      result.interrupted ? "interrupted" : "final",
    );
  }
  return result;
}

/** The default run directory of a configuration, so that rerunning a command resumes it. */
export function defaultLogDir(cfg: TrainConfig): string {
  const slug = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_");
  return `.tinkerbench/runs/${cfg.scoring.method}-${slug(cfg.rollout.env_id)}-${
    slug(cfg.policy.model)
  }-seed${cfg.seed}`;
}

async function importEnvModuleOrConfigError(path: string): Promise<void> {
  try {
    await importEnvModule(path);
  } catch (e) {
    if (e instanceof EnvModuleError) throw new ConfigError(`rollout.${e.message}`);
    throw e;
  }
}

function envFactory(envId: string): () => AnyEnv {
  try {
    make(envId);
  } catch (e) {
    if (e instanceof UnknownEnvError) throw new ConfigError(`rollout.env_id: ${e.message}`);
    throw e;
  }
  return () => make(envId);
}

function rendererFor(model: string): Renderer {
  try {
    return getRenderer(model);
  } catch (e) {
    throw new ConfigError(`policy.model: ${(e as Error).message}`);
  }
}

async function collect(
  cfg: TrainConfig,
  step: number,
  makeEnv: () => AnyEnv,
  sampler: SamplingClient,
  renderer: Renderer,
  samplerVersion: number,
): Promise<{ groups: EpisodeGroup[]; metrics: Record<string, number> }> {
  // Env seeds and sampling seeds are functions of (seed, step, group): resume needs nothing else.
  const specs = Array.from({ length: cfg.rollout.groups_per_batch }, (_, g) => ({
    makeEnv,
    envSeed: deriveSeed(cfg.seed, step, g),
    id: `s${String(step).padStart(6, "0")}-g${String(g).padStart(3, "0")}`,
  }));
  const res = await collectGroups(specs, sampler, {
    groupSize: cfg.rollout.group_size,
    maxConcurrency: cfg.rollout.max_concurrency,
    maxTokensPerTurn: cfg.rollout.max_tokens_per_turn,
    maxTokensPerEpisode: cfg.rollout.max_tokens_per_episode ?? undefined,
    timeoutMs: cfg.rollout.timeout_s === null ? undefined : cfg.rollout.timeout_s * 1000,
    temperature: cfg.rollout.temperature,
    seed: deriveSeed(cfg.seed, step, -1),
    failures: { onError: cfg.rollout.on_error },
    renderer,
    samplerVersion,
  });
  const d = res.dropped;
  return {
    groups: res.groups,
    metrics: {
      "rollout_errors/error": d.episodeError,
      "rollout_errors/timeout": d.episodeTimeout,
      "rollout_errors/total": res.errors.length,
      "rollout_errors/retries": res.retries,
      "rollout_errors/groups_skipped": d.groupResetError + d.groupEpisodeFailed +
        d.groupTooFewEpisodes,
      "time/episodes_per_s": res.timing.episodesPerSecond,
    },
  };
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

async function evidenceSources(
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

async function saveCheckpoint(
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
