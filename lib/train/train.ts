/**
 * `train(config, hooks)`: one RL run from its config, whatever it trains on. It is the one place
 * that puts the integrations together: the trainer's core (lib/trainer/: `prepareRun`, the run,
 * the loop), the environments' plans and schedulers (lib/sources/), the proxy's sessions
 * (lib/proxy/source.ts), the backend (lib/local/connect.ts, and its check of the model) and the
 * proxy's address check (lib/http/), which `prepareRun` gets as functions, and tracking.
 * `deno task train`, the benches and the tests all start runs here.
 *
 * @module
 */

import type { CheckpointRecord } from "../rundir/mod.ts";
import { redactSecrets, type TrainConfig } from "../config/mod.ts";
import { ensurePortFree, openDoorWarning } from "../http/mod.ts";
import { toModelSpec } from "../local/backend/wire.ts";
import { connectTinker } from "../local/connect.ts";
import { ProxySessions } from "../proxy/source.ts";
import { EnvironmentMix, EnvironmentPlan, type Plan, scheduleRollouts } from "../sources/mod.ts";
import type { SamplingClient, ServiceClient } from "../tinker/mod.ts";
import { runNames, RunTracking } from "../tracking/mod.ts";
import {
  type GroupSource,
  openRun,
  openScoring,
  type PreparedRun,
  prepareRun,
  restartRun,
  type RunOptions,
  type RunResult,
  runSteps,
} from "../trainer/mod.ts";

/** What a run reports as it goes, and how it is started; every field is optional. */
export interface TrainHooks extends Pick<RunOptions, "onStep" | "onEvaluation" | "onStart"> {
  /** The Tinker service; without one, `train` connects (cloud with TINKER_API_KEY, else local). */
  service?: ServiceClient;
  /** The run directory (default: `logging.log_path`, else one named by the config). */
  logDir?: string;
  /** Aborting (Ctrl-C, SIGTERM) stops the run within seconds, with a checkpoint. */
  signal?: AbortSignal;
  /** Start the run directory over (`--restart`). */
  restart?: boolean;
  /** Start from another run's last checkpoint (`--branch-from DIR`). */
  branchFrom?: string;
  /** The proxy's key (`--api-key`); a proxy run only. */
  apiKey?: string | null;
  /** Called once the settings are checked, before the run directory is touched. */
  onReady?: (info: TrainStart) => void | Promise<void>;
  /** Called once the proxy listens, with its OpenAI base URL (`…/v1`). */
  onListen?: (url: string) => void;
  /** A one-line notice (a warning before the start, why a step trained nothing). */
  onNotice?: (line: string) => void;
  /**
   * A source of groups of your own, in place of the config's environments or proxy: made once
   * the run knows its starting weights (docs/sources.md). Its run has no held-out evaluation.
   */
  source?: (start: SourceStart) => GroupSource | Promise<GroupSource>;
}

/** What a custom source starts from. */
export interface SourceStart {
  /** The prepared run. */
  prepared: PreparedRun;
  /** The Tinker session. */
  service: ServiceClient;
  /** The sampler of the starting weights, and their version (steps trained so far). */
  sampler: SamplingClient;
  /** Steps trained so far. */
  version: number;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
}

/** Where a run trains, known once its settings are checked. */
export interface TrainStart {
  /** The run directory. */
  logDir: string;
  /** What it trains on: the environment's id, the mix's names, or "proxy sessions". */
  plays: string;
  /** The checkpoint a `--branch-from` run starts from. */
  branchedFrom: CheckpointRecord | null;
  /** The backend, when `train` connected to it. */
  backend?: { kind: "local" | "cloud"; url: string };
}

/** How a run ended, and where it is. */
export interface TrainResult extends RunResult {
  /** The run directory. */
  logDir: string;
}

/**
 * Trains a policy with the config's method on its environment, its `environments:` mix or (with
 * a `proxy:` section) the proxy's agent sessions; rerunning resumes the run directory.
 *
 * @example
 * const config = await loadTrainConfig({ flags: { "max-steps": 5, "model-name": "local/tiny" } });
 * const result = await train(config, { onStep: (m) => console.log(m.step) });
 */
export async function train(config: TrainConfig, hooks: TrainHooks = {}): Promise<TrainResult> {
  const own = hooks.service ? null : await connectTinker();
  const service = hooks.service ?? own!.service;
  // Stopping: samples queued on our own backend will not be read; the step in training and
  // the checkpoint run next instead of behind them.
  const stopSampling = () => own?.stopSampling("the run is stopping (Ctrl-C or SIGTERM)");
  if (hooks.signal?.aborted) stopSampling();
  hooks.signal?.addEventListener("abort", stopSampling, { once: true });
  let tracking: RunTracking | null = null;
  try {
    const notice = hooks.onNotice ?? ((line: string) => console.error(line));
    const prepared = await prepareRun(config, {
      service,
      logDir: hooks.logDir,
      restart: hooks.restart,
      branchFrom: hooks.branchFrom,
      apiKey: hooks.apiKey,
      onNotice: notice,
      // The local backend serves a few models: one line listing them.
      checkModel: (model) => {
        if (!Deno.env.get("TINKER_API_KEY")) toModelSpec(model);
      },
      checkProxyAddress: (host, port, hasKey) => {
        const warning = openDoorWarning(
          host,
          port,
          hasKey,
          "--api-key KEY, or --proxy-host 127.0.0.1",
        );
        // Said at once: a taken port ends the run on the next line.
        if (warning) notice(warning);
        ensurePortFree(host, port, "--proxy-port");
      },
    });
    const { logDir } = prepared;
    // What an environment run plays: its `environments:` mix (each entry resolved; a mistake is
    // a ConfigError naming it), else its one environment.
    const plan: Plan | null = prepared.config.proxy || hooks.source
      ? null
      : prepared.makeEnv
      ? new EnvironmentPlan(prepared.rollouts, prepared.steps, prepared.makeEnv)
      : await EnvironmentMix.open(prepared.config);
    // A mix's num_epochs sets the steps.
    const steps = plan?.steps ?? prepared.steps;
    const cfg = { ...prepared.config, max_steps: steps };
    // Started over before tracking reads the directory (a W&B run to resume).
    if (hooks.restart) await restartRun(logDir);
    tracking = await RunTracking.open({
      runDir: logDir,
      config: redactSecrets(cfg),
      names: runNames(cfg),
      trainConfig: cfg,
    });
    await hooks.onReady?.({
      logDir,
      plays: plan?.name ?? (hooks.source ? "a custom source" : "proxy sessions"),
      branchedFrom: prepared.branchedFrom,
      ...(own ? { backend: { kind: own.backend, url: own.url } } : {}),
    });
    const tracked = tracking;
    const run = await openRun(cfg, {
      service,
      logDir,
      onStart: (info) => {
        // The directory is rewound to the checkpoint now: W&B's history follows it.
        tracked.started();
        hooks.onStart?.(info);
      },
    });
    let result = run.result;
    if (run.startStep < steps) {
      const scoring = await openScoring(prepared, service);
      const t0 = performance.now();
      // Sampler version v carries the weights after v training steps: the run's steps so far.
      const sampler = await run.training.saveWeightsAndGetSamplingClient();
      const ctx = { rollouts: prepared.rollouts, renderer: prepared.renderer, t0 };
      const version = run.startStep;
      const source: GroupSource = hooks.source
        ? await hooks.source({ prepared, service, sampler, version, t0 })
        : plan
        ? scheduleRollouts(plan, ctx, sampler, version)
        : await ProxySessions.open(prepared, {
          service,
          scoring,
          sampler,
          version,
          t0,
          apiKey: hooks.apiKey,
          onListen: hooks.onListen,
          onNotice: notice,
        });
      // A proxy run is held out on `eval.env_id`'s environment when it names one.
      const heldOut = hooks.source ? null : plan ??
        (prepared.makeEnv ? new EnvironmentPlan(prepared.rollouts, steps, prepared.makeEnv) : null);
      result = await runSteps({
        steps,
        settings: prepared.loop,
        heldOutEpisodes: prepared.heldOut.episodes,
        service,
        logDir,
        signal: hooks.signal,
        onStep: async (m) => {
          await tracked.step(m);
          await hooks.onStep?.(m);
        },
        onNotice: notice,
        onEvaluation: hooks.onEvaluation,
        run,
        source,
        sampler,
        scoring,
        t0,
        evaluate: heldOut
          ? (trained, step) =>
            heldOut.evaluate({
              heldOut: prepared.heldOut,
              service,
              trained,
              step,
              renderer: prepared.renderer,
              signal: hooks.signal,
              onProgress: hooks.onEvaluation,
            })
          : hooks.source
          ? "a custom source has no held-out environment"
          : "a proxy run has no environment of its own: set eval.env_id to the one its agents play",
      });
    }
    await tracking.finish({ exitCode: 0, evaluation: result.evaluation });
    return { ...result, logDir };
  } catch (e) {
    await tracking?.finish({ exitCode: 1, timeoutMs: 10_000 });
    throw e;
  } finally {
    hooks.signal?.removeEventListener("abort", stopSampling);
    await own?.close();
  }
}
