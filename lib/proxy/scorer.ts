/**
 * Scoring of proxy turns as they complete: each completed main turn gets its evidence at once
 * (judge votes, hint, teacher log-probs: `gatherEvidence`, every call concurrent with the other
 * turns'), gets OpenClaw's at-least-one decision once, in its session's order, is composed
 * alone to learn whether it has anything to train on (its advantage is its own: no group
 * baseline), and then waits in a queue for the next training step with its evidence, or is
 * recorded as not trained with the reason.
 *
 * The teacher sees each turn's own request (its messages, tools declared), not a rebuilt
 * history: an agent such as OpenClaw does not replay every message it sent.
 *
 * @module
 */

import type { Episode, EpisodeGroup, ScoredTurn, TurnEvidence } from "../rl/types.ts";
import {
  atLeastOneInput,
  AtLeastOneRule,
  composeAdvantages,
  type EvidencePlan,
  type EvidenceSources,
  gatherEvidence,
  JudgeError,
  type MethodSettings,
} from "../scoring/mod.ts";
import { type ProxyRecords, scoreRecord, turnRecord } from "./records.ts";
import type { CompletedTurn } from "./session_types.ts";

/** A completed turn with its evidence, ready to train. */
export interface ScoredProxyTurn {
  completed: CompletedTurn;
  evidence: TurnEvidence;
}

/** A completed turn that trains nothing, and why. */
export interface UntrainedTurn {
  completed: CompletedTurn;
  reason: string;
}

/** Options of {@link TurnScorer}. */
export interface TurnScorerOptions {
  plan: EvidencePlan;
  sources: EvidenceSources;
  method: MethodSettings;
  records: ProxyRecords;
  /** Consecutive turns a judge or teacher may fail on before the run stops (default 16). */
  maxConsecutiveFailures?: number;
  /**
   * Untrained turns in a row (none trainable among them) after which the run says, in one
   * line, why it trains nothing and what to change (default 8).
   */
  quietAfter?: number;
  /** Where that line goes (default stderr). */
  warn?: (line: string) => void;
}

/**
 * Scores completed turns and queues the trainable ones.
 *
 * @example
 * const scorer = new TurnScorer({ plan, sources, method, records });
 * // proxy: onComplete: (t) => scorer.add(t)
 * await scorer.waitFor(4, signal);
 * const batch = scorer.take(4);
 */
export class TurnScorer {
  readonly #o: TurnScorerOptions;
  readonly #ready: ScoredProxyTurn[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #wake: PromiseWithResolvers<void> = Promise.withResolvers();
  #consecutiveFailures = 0;
  /** OpenClaw's at-least-one rule over each session's turns, in completion order, for the run. */
  readonly #atLeastOne = new AtLeastOneRule();
  /** Set when a judge or teacher kept failing: the trainer stops with it. */
  failure: JudgeError | null = null;
  /** Turns not trained, by reason (since the last {@link takeCounts}). */
  #untrained = new Map<string, number>();
  /** Turns not trained since the last trainable one, by reason; null once said. */
  #streak: Map<string, number> | null = new Map();
  /**
   * Untrained turns since the last trainable one and the last idle step: a batch of them makes
   * a step that trains nothing, so that `pipeline.max_steps_without_datums` stops a proxy run
   * as it stops an environment run.
   */
  readonly #idle: UntrainedTurn[] = [];

  constructor(o: TurnScorerOptions) {
    this.#o = o;
  }

  /** Turns waiting for a training step. */
  get ready(): number {
    return this.#ready.length;
  }

  /** Turns being scored. */
  get scoring(): number {
    return this.#inFlight.size;
  }

  /** Starts scoring a completed turn. */
  add(completed: CompletedTurn): void {
    const job = this.#score(completed).finally(() => {
      this.#inFlight.delete(job);
      this.#notify();
    });
    this.#inFlight.add(job);
  }

  /** Untrained turns since the last trainable one (see {@link takeIdle}). */
  get idle(): number {
    return this.#idle.length;
  }

  /**
   * Whether the next step trains nothing: `n` turns in a row trained nothing and no trainable
   * turn is waiting. A waiting turn waits for its batch instead: a step of none would age it
   * (its sampler version falls behind the step) until the staleness rule drops it.
   */
  idleStep(n: number): boolean {
    return this.#ready.length === 0 && this.#idle.length >= n;
  }

  /**
   * Resolves once `n` turns are ready or the next step trains nothing ({@link idleStep}), or
   * the signal aborts, or scoring failed for good.
   */
  async waitFor(n: number, signal?: AbortSignal): Promise<void> {
    // One abort listener per wait, removed after it (one per wake-up stayed on the run's
    // signal for the whole run).
    const { promise: aborted, resolve } = Promise.withResolvers<void>();
    const onAbort = () => resolve();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      while (
        this.#ready.length < n && !this.idleStep(n) && !signal?.aborted && !this.failure
      ) {
        await Promise.race([this.#wake.promise, aborted]);
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The `n` oldest ready turns (fewer if fewer are ready), out of the queue. */
  take(n: number): ScoredProxyTurn[] {
    return this.#ready.splice(0, n);
  }

  /** The `n` oldest untrained turns since the last trainable one, for a step that trains nothing. */
  takeIdle(n: number): UntrainedTurn[] {
    return this.#idle.splice(0, n);
  }

  /**
   * Removes ready turns for which `drop` gives a reason (e.g. too stale), records them as not
   * trained, and returns how many went.
   */
  async dropWhere(drop: (t: ScoredProxyTurn) => string | null): Promise<number> {
    let dropped = 0;
    for (let i = this.#ready.length - 1; i >= 0; i--) {
      const reason = drop(this.#ready[i]);
      if (reason === null) continue;
      const [t] = this.#ready.splice(i, 1);
      dropped++;
      await this.#notTrained(t.completed, reason);
    }
    return dropped;
  }

  /** Untrained turns by reason since the last call. */
  takeCounts(): Record<string, number> {
    const out = Object.fromEntries(this.#untrained);
    this.#untrained.clear();
    return out;
  }

  /**
   * Waits for the turns being scored, then records every turn still waiting as not trained
   * with `reason` (the run ended).
   */
  async close(reason: string): Promise<void> {
    while (this.#inFlight.size) await Promise.all([...this.#inFlight]);
    for (const t of this.take(this.#ready.length)) await this.#notTrained(t.completed, reason);
  }

  async #score(completed: CompletedTurn): Promise<void> {
    const o = this.#o;
    const groups = [proxyGroup(completed.sessionId, [completed])];
    let evidence;
    try {
      evidence = await gatherEvidence(groups, o.plan, o.sources, {
        conversation: () => completed.messages,
      });
      this.#consecutiveFailures = 0;
    } catch (e) {
      if (!(e instanceof JudgeError)) throw e;
      if (++this.#consecutiveFailures >= (o.maxConsecutiveFailures ?? 16)) {
        this.failure = new JudgeError(
          `${e.message} (and on the ${this.#consecutiveFailures - 1} turns before)`,
        );
      }
      return await this.#notTrained(completed, `scoring failed: ${e.message}`);
    }
    const ev = evidence.get(completed.turn) ?? { errors: [] };
    if (o.method.rewardSource === "prm" && o.method.method === "rl") {
      // Decided once, here, in session order; the training step's composition reads it.
      ev.atLeastOne = this.#atLeastOne.decide(
        completed.sessionId,
        atLeastOneInput(completed.turn, ev),
      );
      evidence.set(completed.turn, ev);
    }
    if (completed.end !== "next_state") this.#atLeastOne.endSession(completed.sessionId);
    // A proxy turn's advantage is its own (no group baseline): composing it alone tells whether
    // it trains exactly as the step's composition will.
    const scored = composeAdvantages(groups, evidence, o.method).groups[0].episodes[0].turns[0];
    if (!scored.score.trained) {
      const reason = untrainedReason(completed, scored, o.method);
      await o.records.score(scoreRecord(completed, scored, { step: null, reason }));
      return await this.#notTrained(completed, reason);
    }
    this.#ready.push({ completed, evidence: ev });
    this.#streak = new Map();
    this.#idle.length = 0;
  }

  async #notTrained(completed: CompletedTurn, reason: string): Promise<void> {
    this.#idle.push({ completed, reason });
    const key = reason.replace(/:.*/, "");
    this.#untrained.set(key, (this.#untrained.get(key) ?? 0) + 1);
    if (this.#streak) {
      this.#streak.set(key, (this.#streak.get(key) ?? 0) + 1);
      const n = [...this.#streak.values()].reduce((a, b) => a + b, 0);
      if (n >= (this.#o.quietAfter ?? 8)) {
        (this.#o.warn ?? console.error)(nothingToTrain(this.#streak, this.#o.method));
        this.#streak = null;
      }
    }
    await this.#o.records.conversation(turnRecord(completed, { status: "not_trained", reason }));
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = Promise.withResolvers();
    wake.resolve();
  }
}

/** A session's completed turns as one episode of one group (OpenClaw trains each turn alone). */
export function proxyGroup(sessionId: string, turns: CompletedTurn[]): EpisodeGroup {
  const sorted = [...turns].sort((a, b) => a.index - b.index);
  const episode: Episode = {
    envId: "proxy",
    turns: sorted.map((t) => t.turn),
    totalReward: sorted.reduce((a, t) => a + t.turn.reward, 0),
    stopReason: "completed",
  };
  return { id: sessionId, envId: "proxy", envSeed: null, tags: ["proxy"], episodes: [episode] };
}

/**
 * The one line a run prints when its last turns all trained nothing: how many, why (by
 * reason), and what to change for the most common reason.
 */
export function nothingToTrain(byReason: Map<string, number>, m: MethodSettings): string {
  const sorted = [...byReason].sort((a, b) => b[1] - a[1]);
  const n = sorted.reduce((a, [, k]) => a + k, 0);
  const why = sorted.map(([r, k]) => `${r}: ${k}`).join(", ");
  const top = sorted[0][0];
  let fix = "see records/conversations.jsonl for each turn's reason";
  if (top.startsWith("reward 0")) {
    fix = `${m.method} trains each proxy turn on its own reward with no baseline, so a reward ` +
      "of 0 carries no signal: send rewards that are not 0 (e.g. -1 for a failure and +1 for a " +
      "success) or train with --method opd";
  } else if (top.startsWith("no reward")) {
    fix = "no turn carried a reward: send X-Turn-Reward (or the body's reward) with the next " +
      "request, or POST /v1/sessions/{id}/done with {reward}, or judge the turns " +
      "(--reward-source prm --judge-base-url URL)";
  } else if (top.startsWith("no next state")) {
    fix = "sessions ended before a next state arrived: keep each session's token (or, for " +
      "agents that cannot send it, set proxy.session_binding: history), or end sessions with " +
      "POST /v1/sessions/{id}/done {messages}";
  } else if (top.startsWith("PRM score 0") || top.startsWith("no hint accepted")) {
    fix = "the judge gave nothing to train on: check --judge-base-url and the teacher model";
  }
  return `proxy: the last ${n} turns trained nothing (${why}); ${fix}`;
}

/** Why a scored turn has nothing to train on, in a few words. */
export function untrainedReason(
  c: CompletedTurn,
  s: ScoredTurn,
  m: MethodSettings,
): string {
  if (s.evidence.errors.length) return `scoring failed: ${s.evidence.errors.join("; ")}`;
  const noNext = c.turn.nextState.length === 0;
  const ended = noNext ? ` (session ${c.end})` : "";
  const rlReason = () => {
    if (m.rewardSource === "prm") return noNext ? `no next state${ended}` : "PRM score 0";
    return c.rewarded ? "reward 0" : "no reward (send X-Turn-Reward, or use a judge)";
  };
  if (m.method === "rl") return rlReason();
  const hintReason = noNext ? `no next state${ended}` : "no hint accepted";
  if (m.method === "opd") return hintReason;
  return `${hintReason}; ${rlReason()}`;
}
