/**
 * Training from live agent sessions (OpenClaw's design): the proxy serves the policy, every
 * main turn is scored as soon as its next state arrives (lib/proxy/scorer.ts), and every
 * `rollout.groups_per_batch` trainable turns make a step of the one RL step loop (./loop.ts):
 * the turns, one group per session, are composed there (raw per-turn rewards, as OpenClaw:
 * `discounted` advantages with γ = 0, no group baseline), turned into datums, trained, and the
 * new sampler is swapped into the proxy.
 *
 * Requests keep being served while a step runs; each turn records the sampler version that
 * produced it, and a turn more than `pipeline.max_steps_off_policy` steps stale when its step
 * comes is dropped (counted, recorded). `proxy.pause_during_step` is the seed's alternative:
 * requests wait while a step runs. Checkpoints, resume and Ctrl-C are those of env training
 * (a resumed run serves the resumed weights; sessions in flight at a crash are lost).
 *
 * @module
 */

import { join } from "node:path";
import type { TrainConfig } from "../config/mod.ts";
import { ConfigError } from "../config/load.ts";
import { isStale, offPolicySteps } from "../rl/staleness.ts";
import type { MethodSettings } from "../scoring/mod.ts";
import { Policy } from "../proxy/policy.ts";
import { ProxyRecords, scoreRecord, servedRecord, turnRecord } from "../proxy/records.ts";
import { proxyGroup, type ScoredProxyTurn, TurnScorer } from "../proxy/scorer.ts";
import { type RunningProxy, startProxy } from "../proxy/server.ts";
import type { CompletedTurn } from "../proxy/sessions.ts";
import type { SamplingClient } from "../tinker/mod.ts";
import { runSteps } from "./loop.ts";
import {
  envFactory,
  fitToContext,
  importEnvModuleOrConfigError,
  methodSettings,
  openScoring,
  rendererFor,
} from "./rl.ts";
import { evaluateRun, heldOutEnvironment } from "./evaluate.ts";
import { openRun, type RunOptions, type RunResult } from "./run.ts";
import type { GroupSource, StepGroups } from "./source.ts";
import type { UpdateResult } from "./update.ts";

/** Options of {@link trainFromProxy}. */
export interface ProxyTrainOptions extends RunOptions {
  /** Bearer key clients must send (`--api-key`, `SGLANG_API_KEY`); never stored in the config. */
  apiKey?: string | null;
  /** Called once the proxy listens, with its OpenAI base URL (`…/v1`). */
  onListen?: (url: string) => void;
}

/**
 * Serves the policy through the proxy and trains on completed main turns until `max_steps`: the
 * proxy's sessions as the source of groups of the one RL step loop (./loop.ts).
 *
 * @example
 * const config = await loadTrainConfig({ flags: { method: "opd", "proxy-port": 30000 } });
 * await trainFromProxy({ config, service: tinker.service, logDir: "runs/live",
 *   onListen: (url) => console.log(`point your agent at ${url}`) });
 */
export async function trainFromProxy(o: ProxyTrainOptions): Promise<RunResult> {
  if (!o.config.proxy) {
    throw new ConfigError("proxy: the proxy section is off (set --source proxy)");
  }
  const cfg = await fitToContext(o.config, o.service);
  const renderer = rendererFor(cfg, false);
  const method = proxyMethodSettings(cfg);
  checkNoDownsampling(cfg);
  checkJudge(cfg, method);
  // The held-out environment is checked before anything starts, as an env run's is.
  if (cfg.eval.env_id !== null && cfg.rollout.env_module) {
    await importEnvModuleOrConfigError(cfg.rollout.env_module);
  }
  const makeEvalEnv = cfg.eval.env_id === null
    ? null
    : envFactory(cfg.eval.env_id, cfg.rollout.env_wrappers, "eval.env_id");
  const run = await openRun(cfg, o);
  if (run.startStep >= cfg.max_steps) return run.result;

  const scoring = await openScoring(cfg, method, o.service, renderer);
  const t0 = performance.now();
  const records = await ProxyRecords.open(join(o.logDir, "records"), method.method);
  const scorer = new TurnScorer({ ...scoring, records });
  // Sampler version v carries the weights after v training steps.
  const sampler = await run.training.saveWeightsAndGetSamplingClient();
  const source = await ProxySessions.start(cfg, o, {
    policy: new Policy(sampler, run.startStep),
    scorer,
    records,
    renderer,
    t0,
  });
  warnWithoutRewards(method, cfg);
  return await runSteps({
    ...o,
    run,
    source,
    sampler,
    scoring,
    t0,
    evaluate: makeEvalEnv
      ? async (trained, step) =>
        evaluateRun({
          config: cfg,
          service: o.service,
          trained,
          step,
          renderer,
          ...await heldOutEnvironment(makeEvalEnv),
          signal: o.signal,
          onProgress: o.onEvaluation,
        })
      : "a proxy run has no environment of its own: set eval.env_id to the one its agents play",
  });
}

/**
 * The proxy's completed main turns as a source of groups: every `rollout.groups_per_batch`
 * trainable turns make a step, one group per session, with the evidence the scorer gathered as
 * each turn completed. Requests keep being served while a step trains (or wait, with
 * `proxy.pause_during_step`); turns more than `pipeline.max_steps_off_policy` steps stale are
 * dropped and recorded.
 */
export class ProxySessions implements GroupSource {
  #stale = 0;
  /** The turns of the step being trained, for {@link afterStep}'s records. */
  #taken: ScoredProxyTurn[] = [];

  private constructor(
    readonly cfg: TrainConfig,
    readonly proxy: RunningProxy,
    readonly parts: ProxyParts,
  ) {}

  /** Starts the proxy in front of the policy; turns go to the scorer as they complete. */
  static async start(
    cfg: TrainConfig,
    o: Pick<ProxyTrainOptions, "apiKey" | "onListen" | "service">,
    parts: ProxyParts,
  ): Promise<ProxySessions> {
    const px = cfg.proxy!;
    const { policy, scorer, records, renderer } = parts;
    const proxy = await startProxy({
      policy,
      renderer,
      modelName: cfg.policy.model,
      servedModelName: px.served_model_name,
      apiKey: o.apiKey,
      contextLength: await o.service.contextLength(cfg.policy.model),
      defaultTurnType: px.default_turn_type,
      sessionIdleS: px.session_idle_s,
      sessionBinding: px.session_binding,
      rewardBound: px.reward_bound,
      lateRewardS: px.late_reward_s,
      onSessionEnd: (e) => void records.session(e),
      pauseTimeoutS: px.pause_timeout_s,
      defaultMaxTokens: cfg.rollout.max_tokens_per_turn,
      hostname: px.host,
      port: px.port,
      onComplete: (t) => scorer.add(t),
      onServed: (s) => {
        if (s.turnType === "side") void records.conversation(servedRecord(s));
      },
    });
    o.onListen?.(proxy.url);
    return new ProxySessions(cfg, proxy, parts);
  }

  async take(
    step: number,
    _onGroup?: unknown,
    signal?: AbortSignal,
  ): Promise<StepGroups | null> {
    const { scorer, policy, t0 } = this.parts;
    const batch = this.cfg.rollout.groups_per_batch;
    const maxOff = this.cfg.pipeline.max_steps_off_policy;
    const tWait = performance.now();
    // Stale turns leave the queue as they are found; the step waits for fresh ones.
    while (!signal?.aborted && !scorer.failure) {
      this.#stale += await scorer.dropWhere(({ completed: { turn } }) =>
        isStale(turn.samplerVersion, step, maxOff)
          ? `stale: sampled by version ${turn.samplerVersion}, ${
            offPolicySteps(turn.samplerVersion, step)
          } steps off policy at step ${step}`
          : null
      );
      if (scorer.ready >= batch) break;
      await scorer.waitFor(batch, signal);
    }
    if (scorer.failure) throw scorer.failure;
    if (signal?.aborted) return null;
    if (this.cfg.proxy!.pause_during_step) policy.pause();
    const turns = scorer.take(batch);
    this.#taken = turns;
    const bySession = new Map<string, CompletedTurn[]>();
    for (const t of turns) {
      const id = t.completed.sessionId;
      bySession.set(id, [...(bySession.get(id) ?? []), t.completed]);
    }
    const rewards = turns.map((t) => t.completed.turn.reward);
    const stats = this.proxy.stats;
    const metrics = {
      "proxy/turns": turns.length,
      "proxy/sessions_in_batch": bySession.size,
      "proxy/reward/mean": rewards.reduce((a, b) => a + b, 0) / rewards.length,
      "proxy/rewarded_frac": turns.filter((t) => t.completed.rewarded).length / turns.length,
      "proxy/off_policy_steps/mean": turns.reduce(
        (a, t) => a + offPolicySteps(t.completed.turn.samplerVersion, step),
        0,
      ) / turns.length,
      "proxy/stale_dropped": this.#stale,
      ...Object.fromEntries(
        Object.entries(scorer.takeCounts()).map(([k, v]) => [`proxy/untrained/${slug(k)}`, v]),
      ),
      "proxy/requests": stats.requests,
      "proxy/main_turns": stats.mainTurns,
      "proxy/side_turns": stats.sideTurns,
      "proxy/disconnected": stats.disconnected,
      "proxy/sessions_open": this.proxy.sessions.size,
      "proxy/history_breaks": stats.historyBreaks,
    };
    this.#stale = 0;
    return {
      groups: [...bySession].map(([id, ts]) => proxyGroup(id, ts)),
      evidence: new Map(turns.map((t) => [t.completed.turn, t.evidence])),
      metrics,
      spans: [{ name: "wait", start: tWait - t0, end: performance.now() - t0 }],
    };
  }

  setSampler(sampler: SamplingClient, version: number): void {
    this.parts.policy.swap(sampler, version);
    this.parts.policy.resume();
  }

  /** Each turn of the step's sessions is recorded as trained or not, with the reason. */
  async afterStep(step: number, out: UpdateResult): Promise<void> {
    const byTurn = new Map(this.#taken.map((t) => [t.completed.turn, t.completed]));
    for (const s of out.groups.flatMap((g) => g.episodes.flatMap((e) => e.turns))) {
      const c = byTurn.get(s.turn)!;
      const fate = s.score.trained
        ? { status: "trained" as const, step }
        : { status: "not_trained" as const, reason: "nothing to train in the batch", step };
      await this.parts.records.score(scoreRecord(c, s, { step, reason: fate.reason }));
      await this.parts.records.conversation(turnRecord(c, fate));
    }
    this.#taken = [];
  }

  async close({ interrupted }: { interrupted: boolean }): Promise<void> {
    const { policy, scorer, records } = this.parts;
    policy.resume();
    // A graceful shutdown waits for requests in flight (an agent's long answer, a stream): on
    // Ctrl-C the run saves its checkpoint after a few seconds whatever they do.
    const closed = await settlesWithin(this.proxy.close(), interrupted ? CLOSE_GRACE_MS : Infinity);
    if (!closed) this.proxy.sessions.close();
    await settlesWithin(
      scorer.close(interrupted ? "run interrupted" : "run ended"),
      interrupted ? CLOSE_GRACE_MS : Infinity,
    );
    await records.flush();
  }
}

/** How long an interrupted run waits for requests and scoring in flight. */
const CLOSE_GRACE_MS = 3000;

/** Whether `p` settled within `ms` (it keeps running either way). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  if (ms === Infinity) {
    await p;
    return true;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What a {@link ProxySessions} source is made of. */
export interface ProxyParts {
  policy: Policy;
  scorer: TurnScorer;
  records: ProxyRecords;
  renderer: ReturnType<typeof rendererFor>;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
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
      nonTerminalReward: null,
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
      `scoring.reward_source prm: ${judgeModel} cannot judge; pass --judge-base-url URL (an ` +
        "OpenAI-compatible judge), or train on client rewards (--reward-source env and " +
        "X-Turn-Reward from the agent)",
    );
  }
}

function warnWithoutRewards(m: MethodSettings, cfg: TrainConfig): void {
  if (m.method === "rl" && m.rewardSource === "env") {
    console.error(
      `proxy: rl trains on client rewards (X-Turn-Reward or body "reward"); turns without one ` +
        `are not trained${
          cfg.judge.base_url ? "" : " (or pass --reward-source prm --judge-base-url URL)"
        }`,
    );
  }
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_|_$/g, "");
}
