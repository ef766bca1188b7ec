/**
 * Training from live agent sessions (OpenClaw's design): the proxy serves the policy, every
 * main turn is scored as soon as its next state arrives (./proxy scorer), and every
 * `rollout.groups_per_batch` trainable turns make a step: the turns, one group per session,
 * are composed (raw per-turn rewards, as OpenClaw: `discounted` advantages with γ = 0, no group
 * baseline), turned into datums, trained (forward_backward + optim_step, the next sampler's save
 * pipelined), and the new sampler is swapped into the proxy.
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
import { resolveLearningRate, type TrainConfig } from "../config/mod.ts";
import { ConfigError } from "../config/load.ts";
import { rolloutRecords } from "../rl/records.ts";
import { isStale, offPolicySteps } from "../rl/staleness.ts";
import { composeAdvantages, evidencePlan, type MethodSettings } from "../scoring/mod.ts";
import { Policy } from "../proxy/policy.ts";
import { ProxyRecords, scoreRecord, servedRecord, turnRecord } from "../proxy/records.ts";
import { proxyGroup, type ScoredProxyTurn, TurnScorer } from "../proxy/scorer.ts";
import { type RunningProxy, startProxy } from "../proxy/server.ts";
import { contextLength } from "../proxy/serve.ts";
import type { CompletedTurn } from "../proxy/sessions.ts";
import { advantageMetrics, episodeSucceeded } from "./metrics.ts";
import {
  evidenceSources,
  methodSettings,
  openRun,
  rendererFor,
  type RLTrainOptions,
  type RLTrainResult,
  saveCheckpoint,
  type StepMetrics,
} from "./rl.ts";
import { StepUpdate } from "./update.ts";

/** Options of {@link trainFromProxy}. */
export interface ProxyTrainOptions extends RLTrainOptions {
  /** Bearer key clients must send (`--api-key`, `SGLANG_API_KEY`); never stored in the config. */
  apiKey?: string | null;
  /** Called once the proxy listens, with its OpenAI base URL (`…/v1`). */
  onListen?: (url: string) => void;
}

/**
 * Serves the policy through the proxy and trains on completed main turns until `max_steps`.
 *
 * @example
 * const config = await loadTrainConfig({ flags: { method: "opd", "proxy-port": 30000 } });
 * await trainFromProxy({ config, service: tinker.service, logDir: "runs/live",
 *   onListen: (url) => console.log(`point your agent at ${url}`) });
 */
export async function trainFromProxy(o: ProxyTrainOptions): Promise<RLTrainResult> {
  const cfg = o.config;
  const px = cfg.proxy;
  if (!px) throw new ConfigError("proxy: the proxy section is off (set --source proxy)");
  const renderer = rendererFor(cfg, false);
  const method = proxyMethodSettings(cfg);
  const plan = evidencePlan(method);
  checkJudge(cfg, method);
  const { log, training, startStep, result } = await openRun(cfg, o);
  if (startStep >= cfg.max_steps) return result;

  const sources = await evidenceSources(cfg, plan, o.service, renderer);
  const lr = resolveLearningRate(cfg);
  const t0 = performance.now();
  const records = await ProxyRecords.open(join(o.logDir, "records"), method.method);
  const scorer = new TurnScorer({ plan, sources, method, records });
  // Sampler version v carries the weights after v training steps.
  const policy = new Policy(await training.saveWeightsAndGetSamplingClient(), startStep);
  let proxy: RunningProxy | undefined;
  try {
    proxy = await startProxy({
      policy,
      renderer,
      modelName: cfg.policy.model,
      servedModelName: px.served_model_name,
      apiKey: o.apiKey,
      contextLength: await contextLength(o.service, cfg.policy.model),
      defaultTurnType: px.default_turn_type,
      sessionIdleS: px.session_idle_s,
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
    warnWithoutRewards(method, cfg);

    const batch = cfg.rollout.groups_per_batch;
    const maxOff = cfg.pipeline.max_steps_off_policy;
    let stale = 0;
    for (let step = startStep + 1; step <= cfg.max_steps; step++) {
      const tWait = performance.now();
      // Stale turns leave the queue as they are found; the step waits for fresh ones.
      while (!o.signal?.aborted && !scorer.failure) {
        stale += await scorer.dropWhere(({ completed: { turn } }) =>
          isStale(turn.samplerVersion, step, maxOff)
            ? `stale: sampled by version ${turn.samplerVersion}, ${
              offPolicySteps(turn.samplerVersion, step)
            } steps off policy at step ${step}`
            : null
        );
        if (scorer.ready >= batch) break;
        await scorer.waitFor(batch, o.signal);
      }
      if (scorer.failure) throw scorer.failure;
      if (o.signal?.aborted) {
        result.interrupted = true;
        break;
      }
      const tStep = performance.now();
      if (px.pause_during_step) policy.pause();
      const turns = scorer.take(batch);
      const out = await trainStep(turns, step);
      // A step with nothing to train leaves the weights as they were: same sampler, next version.
      policy.swap(out.sampler ?? policy.current().sampler, step);
      policy.resume();
      const tTrained = performance.now();
      await recordStep(turns, out.composed.groups, step);

      const rewards = turns.map((t) => t.completed.turn.reward);
      const row: StepMetrics = {
        step,
        "progress/batch": step,
        "progress/done_frac": step / cfg.max_steps,
        "optim/lr": lr,
        "proxy/turns": turns.length,
        "proxy/sessions_in_batch": new Set(turns.map((t) => t.completed.sessionId)).size,
        "proxy/reward/mean": rewards.reduce((a, b) => a + b, 0) / rewards.length,
        "proxy/rewarded_frac": turns.filter((t) => t.completed.rewarded).length / turns.length,
        "proxy/off_policy_steps/mean": turns.reduce(
          (a, t) => a + offPolicySteps(t.completed.turn.samplerVersion, step),
          0,
        ) / turns.length,
        "proxy/stale_dropped": stale,
        ...Object.fromEntries(
          Object.entries(scorer.takeCounts()).map(([k, v]) => [`proxy/untrained/${slug(k)}`, v]),
        ),
        "proxy/requests": proxy.stats.requests,
        "proxy/main_turns": proxy.stats.mainTurns,
        "proxy/side_turns": proxy.stats.sideTurns,
        "proxy/disconnected": proxy.stats.disconnected,
        "proxy/sessions_open": proxy.sessions.size,
        ...advantageMetrics(out.composed.advantageStats),
        ...out.composed.metrics,
        ...out.metrics,
        "train/datums": out.datums,
        "time/wait": (tStep - tWait) / 1000,
        "time/train": (tTrained - tStep) / 1000,
        "time/step": (tTrained - tWait) / 1000,
      };
      stale = 0;
      await log.writeRollouts(step, rolloutRecords(step, out.groups, episodeSucceeded));
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
    policy.resume();
    await proxy?.close();
    await scorer.close(result.interrupted ? "run interrupted" : "run ended");
    await records.flush();
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

  async function trainStep(turns: ScoredProxyTurn[], step: number) {
    const bySession = new Map<string, CompletedTurn[]>();
    for (const t of turns) {
      bySession.set(t.completed.sessionId, [
        ...(bySession.get(t.completed.sessionId) ?? []),
        t.completed,
      ]);
    }
    const groups = [...bySession].map(([id, ts]) => proxyGroup(id, ts));
    const evidence = new Map(turns.map((t) => [t.completed.turn, t.evidence]));
    const update = new StepUpdate({
      training,
      plan,
      sources,
      method,
      lossFn: cfg.optimizer.loss_fn,
      lossFnConfig: cfg.optimizer.loss_fn_config,
      learningRate: lr,
      epochs: cfg.optimizer.train_epochs,
      t0,
    });
    update.addComposed(composeAdvantages(groups, evidence, method));
    const out = await update.finish();
    await log.appendSpans(step, out.spans);
    return out;
  }

  async function recordStep(
    turns: ScoredProxyTurn[],
    groups: Awaited<ReturnType<typeof trainStep>>["groups"],
    step: number,
  ) {
    const byTurn = new Map(turns.map((t) => [t.completed.turn, t.completed]));
    for (const s of groups.flatMap((g) => g.episodes.flatMap((e) => e.turns))) {
      const c = byTurn.get(s.turn)!;
      const fate = s.score.trained
        ? { status: "trained" as const, step }
        : { status: "not_trained" as const, reason: "nothing to train in the batch", step };
      await records.score(scoreRecord(c, s, { step, reason: fate.reason }));
      await records.conversation(turnRecord(c, fate));
    }
  }
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
    },
  };
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
