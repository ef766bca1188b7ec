/**
 * The proxy's sessions as a source of groups of the trainer's RL step loop (OpenClaw's design):
 * the proxy serves the policy, every main turn is scored as soon as its next state arrives
 * (./scorer.ts), and every `rollout.groups_per_batch` trainable turns make a step: the turns,
 * one group per session, are composed by the loop (raw per-turn rewards, as OpenClaw:
 * `discounted` advantages with γ = 0, no group baseline), turned into datums, trained, and the
 * new sampler is swapped into the proxy. This file depends on the trainer's contract
 * (`GroupSource`); the trainer never imports the proxy.
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
import { isStale, offPolicySteps } from "../rl/staleness.ts";
import type { MethodSettings } from "../scoring/mod.ts";
import type { Renderer } from "../renderers/mod.ts";
import type { SamplingClient, ServiceClient } from "../tinker/mod.ts";
import type {
  GroupSource,
  PreparedRun,
  Scoring,
  StepGroups,
  UpdateResult,
} from "../trainer/mod.ts";
import { Policy } from "./policy.ts";
import { ProxyRecords, scoreRecord, servedRecord, turnRecord } from "./records.ts";
import { proxyGroup, type ScoredProxyTurn, TurnScorer } from "./scorer.ts";
import { type RunningProxy, startProxy } from "./server.ts";
import type { CompletedTurn } from "./session_types.ts";

/** What {@link ProxySessions.open} needs besides the prepared run. */
export interface ProxySessionsOptions {
  service: ServiceClient;
  /** The run's scoring (the scorer gathers each turn's evidence with it). */
  scoring: Scoring;
  /** The sampler of the starting weights, and their version (steps trained so far). */
  sampler: SamplingClient;
  version: number;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
  /** Bearer key clients must send (`--api-key`, `SGLANG_API_KEY`); never stored in the config. */
  apiKey?: string | null;
  /** Called once the proxy listens, with its OpenAI base URL (`…/v1`). */
  onListen?: (url: string) => void;
  /** Called with a line the user should see (turns that will not be trained). */
  onNotice?: (line: string) => void;
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
  /** The proxy's shutdown once the run is interrupted: whether it closed within the grace. */
  #closing: Promise<boolean> | null = null;
  readonly #watched = new WeakSet<AbortSignal>();

  private constructor(
    readonly cfg: TrainConfig,
    readonly proxy: RunningProxy,
    readonly parts: ProxyParts,
  ) {}

  /**
   * Starts the proxy in front of the prepared run's policy; turns go to the scorer as they
   * complete, records to `records/` in the run directory.
   *
   * @example
   * const source = await ProxySessions.open(prepared, { service, scoring, sampler, version: 0,
   *   t0: performance.now(), onListen: (url) => console.log(`point your agent at ${url}`) });
   */
  static async open(p: PreparedRun, o: ProxySessionsOptions): Promise<ProxySessions> {
    const cfg = p.config;
    const px = cfg.proxy!;
    const records = await ProxyRecords.open(join(p.logDir, "records"), p.method.method);
    const scorer = new TurnScorer({ ...o.scoring, records });
    const policy = new Policy(o.sampler, o.version);
    const proxy = await startProxy({
      policy,
      renderer: p.renderer,
      modelName: cfg.policy.model,
      servedModelName: px.served_model_name,
      apiKey: o.apiKey,
      contextLength: await o.service.contextLength(cfg.policy.model),
      defaultTurnType: px.default_turn_type,
      truncateKeepHead: px.truncate_keep_head,
      sessionIdleS: px.session_idle_s,
      sessionBinding: px.session_binding,
      maxSessions: px.max_sessions,
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
    if (px.truncate_keep_head !== null) {
      (o.onNotice ?? console.error)(
        `proxy: prompts over the context are cut (proxy.truncate_keep_head ${px.truncate_keep_head}: ` +
          "the head and the newest tokens are kept); each cut is recorded (truncated_tokens)",
      );
    }
    const without = withoutRewardsLine(p.method, cfg);
    if (without) (o.onNotice ?? console.error)(without);
    return new ProxySessions(cfg, proxy, {
      policy,
      scorer,
      records,
      renderer: p.renderer,
      t0: o.t0,
    });
  }

  async take(
    step: number,
    _onGroup?: unknown,
    signal?: AbortSignal,
  ): Promise<StepGroups | null> {
    const { scorer, policy, t0 } = this.parts;
    const batch = this.cfg.rollout.groups_per_batch;
    const maxOff = this.cfg.pipeline.max_steps_off_policy;
    // Ctrl-C or SIGTERM stops serving at once, even mid-step: the step being trained then has
    // the backend to itself, and the checkpoint comes within seconds.
    if (signal && !this.#watched.has(signal)) {
      this.#watched.add(signal);
      signal.addEventListener("abort", () => this.#stopServing(), { once: true });
    }
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
      if (scorer.ready >= batch || scorer.idleStep(batch)) break;
      await scorer.waitFor(batch, signal);
    }
    if (scorer.failure) throw scorer.failure;
    if (signal?.aborted) return null;
    if (this.cfg.proxy!.pause_during_step) policy.pause();
    // A batch of turns in a row that train nothing, with no trainable turn waiting, is a step
    // that trains nothing: the trainer's pipeline.max_steps_without_datums rule then stops the
    // run as it stops an environment run.
    const idle = scorer.idleStep(batch) ? scorer.takeIdle(batch) : [];
    const turns = idle.length ? [] : scorer.take(batch);
    this.#taken = turns;
    const completed = idle.length ? idle.map((t) => t.completed) : turns.map((t) => t.completed);
    const bySession = new Map<string, CompletedTurn[]>();
    for (const c of completed) {
      bySession.set(c.sessionId, [...(bySession.get(c.sessionId) ?? []), c]);
    }
    const rewards = completed.map((c) => c.turn.reward);
    const stats = this.proxy.stats;
    const metrics = {
      "proxy/turns": turns.length,
      "proxy/idle_turns": idle.length,
      "proxy/sessions_in_batch": bySession.size,
      "proxy/reward/mean": rewards.reduce((a, b) => a + b, 0) / rewards.length,
      "proxy/rewarded_frac": completed.filter((c) => c.rewarded).length / completed.length,
      "proxy/off_policy_steps/mean": completed.reduce(
        (a, c) => a + offPolicySteps(c.turn.samplerVersion, step),
        0,
      ) / completed.length,
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
      "proxy/rewards_without_turn": stats.rewardsWithoutTurn,
      "proxy/truncated_turns": completed.filter((c) => c.truncated > 0).length,
      "proxy/truncated_tokens": completed.reduce((a, c) => a + c.truncated, 0),
    };
    this.#stale = 0;
    return {
      groups: idle.length ? [] : [...bySession].map(([id, ts]) => proxyGroup(id, ts)),
      excluded: idle.map((t) => ({
        group: proxyGroup(t.completed.sessionId, [t.completed]),
        reason: `not trained: ${t.reason}`,
      })),
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
    if (!interrupted) {
      await this.proxy.close();
      await scorer.close("run ended");
      await records.flush();
      return;
    }
    // Ctrl-C or SIGTERM: the run saves its checkpoint within seconds, whatever requests in
    // flight (an agent's long answer, a stream) and scoring still do; they are given one grace
    // period together, then cut off (their turns are lost, as at a crash).
    this.#stopServing();
    const scored = settlesWithin(scorer.close("run interrupted"), CLOSE_GRACE_MS);
    await this.#closing;
    await scored;
    await settlesWithin(records.flush(), CLOSE_GRACE_MS);
  }

  /** Stops taking requests; those in flight get a grace period, then their sessions close. */
  #stopServing(): void {
    this.parts.policy.stop();
    this.#closing ??= settlesWithin(this.proxy.close(), CLOSE_GRACE_MS).then((closed) => {
      if (!closed) this.proxy.sessions.close();
      return closed;
    });
  }
}

/** How long an interrupted run waits for requests, scoring and records in flight. */
const CLOSE_GRACE_MS = 1000;

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
  renderer: Renderer;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
}

/** The line an `rl` run on client rewards starts with: turns without a reward are not trained. */
function withoutRewardsLine(m: MethodSettings, cfg: TrainConfig): string | null {
  if (m.method !== "rl" || m.rewardSource !== "env") return null;
  return `proxy: rl trains on client rewards (X-Turn-Reward or body "reward"); turns without one ` +
    `are not trained${
      cfg.judge.base_url ? "" : " (or pass --reward-source prm --judge-base-url URL)"
    }`;
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_|_$/g, "");
}
