/**
 * A training run's episodes on hosted OpenReward environments, uploaded as OpenReward rollouts
 * (./rollout_upload.ts) when `OPENREWARD_API_KEY` is set: after each step, the step's rollout
 * store file is read and every episode of an `Org/Env` environment (an `environments:` entry
 * with no `base_url`) becomes one rollout with its messages, tool calls and tool results.
 *
 * @module
 */

import { basename, resolve } from "node:path";
import type { TrainConfig } from "../config/schema.ts";
import { resolveLearningRate } from "../config/schema.ts";
import { parseRolloutRecord, type RolloutRecord } from "../rl/records.ts";
import { readJsonl, rolloutsPath } from "../rundir/mod.ts";
import {
  openRewardUploadTarget,
  type RolloutMessage,
  RolloutUploader,
  type RolloutUploaderOptions,
} from "../openreward/rollout_upload.ts";

type RecordMessage = RolloutRecord["turns"][number]["action"];

/**
 * An episode as rollout messages: each turn's new messages, then its action (reasoning, text,
 * one tool_call per call), and after the last turn what followed it. A turn's reward goes on the
 * first message that answers its action; the last message says the episode finished.
 */
export function recordMessages(rec: RolloutRecord): RolloutMessage[] {
  const out: RolloutMessage[] = [];
  let owed: number | null = null;
  const push = (m: RolloutMessage) => {
    if (owed !== null && m.type !== "tool_call" && m.type !== "assistant_message") {
      m.reward = owed;
      owed = null;
    }
    out.push(m);
  };
  rec.turns.forEach((t, i) => {
    for (const m of t.observation) push(fromMessage(m, `${rec.group_id}-${rec.episode}`));
    if (t.action.thinking) push({ type: "reasoning", content: t.action.thinking });
    if (t.action.content || !t.action.toolCalls?.length) {
      push({ type: "assistant_message", content: t.action.content });
    }
    t.action.toolCalls?.forEach((c, k) =>
      push({
        type: "tool_call",
        name: c.name,
        content: JSON.stringify(c.arguments ?? {}),
        callId: c.id ?? `${rec.group_id}-${rec.episode}-t${i}-c${k}`,
      })
    );
    owed = t.reward;
    if (i === rec.turns.length - 1) {
      for (const m of t.next_state) push(fromMessage(m, `${rec.group_id}-${rec.episode}`));
    }
  });
  const last = out.at(-1);
  if (last) {
    if (owed !== null) last.reward = (last.reward ?? 0) + owed;
    last.isFinished = true;
  }
  return out;
}

function fromMessage(m: RecordMessage, episode: string): RolloutMessage {
  switch (m.role) {
    case "system":
      return { type: "system_message", content: m.content };
    case "user":
      return { type: "user_message", content: m.content };
    case "assistant":
      return { type: "assistant_message", content: m.content };
    case "tool":
      return { type: "tool_result", content: m.content, callId: m.toolCallId ?? episode };
  }
}

/** The uploads of one training run, fed step by step. */
export class RunRolloutUploads {
  readonly uploader: RolloutUploader;
  readonly #cfg: TrainConfig;
  readonly #runDir: string;
  readonly #environments: ReadonlySet<string>;
  readonly #runName: string;
  readonly #warn: (line: string) => void;
  #reading: Promise<void> = Promise.resolve();

  constructor(cfg: TrainConfig, runDir: string, environments: string[], o: RolloutUploaderOptions) {
    this.#warn = o.warn ?? ((line) => console.error(line));
    this.#cfg = cfg;
    this.#runDir = runDir;
    this.#environments = new Set(environments);
    this.#runName = cfg.logging.openreward_run_name ?? cfg.logging.run_name ??
      basename(resolve(runDir));
    this.uploader = new RolloutUploader(o);
  }

  /**
   * Queues the step's episodes of OpenReward environments, read from its rollouts file in the
   * background (steps in order). It returns at once and never throws: a file it cannot read is
   * one warning, and training goes on.
   */
  addStep(step: number): void {
    this.#reading = this.#reading.then(() => this.#addStep(step)).catch((e) =>
      this.#warn(
        `warning: OpenReward: step ${step}'s rollouts not uploaded: ${(e as Error).message}`,
      )
    );
  }

  async #addStep(step: number): Promise<void> {
    const skipped: string[] = [];
    const rows = await readJsonl(rolloutsPath(this.#runDir, step), { skipped });
    for (const line of skipped) this.#warn(`warning: OpenReward: ${line}`);
    for (const row of rows) {
      const rec = parseRolloutRecord(row);
      const [environment, split] = rec.tags;
      if (!this.#environments.has(environment)) continue;
      this.uploader.add({
        runName: this.#runName,
        rolloutName: `${rec.group_id}-e${rec.episode}`,
        environment,
        split: split ?? "train",
        step,
        metadata: {
          group_id: rec.group_id,
          episode: rec.episode,
          total_reward: rec.total_reward,
          success: rec.success,
          stop_reason: rec.stop_reason,
          trained: rec.group_kept,
        },
        runInfo: {
          model_name: this.#cfg.policy.model,
          run_type: "train",
          training_stage: "rl",
          peft_type: "lora",
          peft_rank: this.#cfg.policy.lora_rank,
          rl_algorithm: this.#cfg.scoring.method,
          batch_size: this.#cfg.rollout.groups_per_batch,
          lr: resolveLearningRate(this.#cfg),
          framework: "tinkerbench",
        },
        rolloutInfo: {
          task_index: rec.env_seed,
          current_step: step,
          temperature: this.#cfg.environments[environment]?.temperature ??
            this.#cfg.rollout.temperature,
          max_tokens: this.#cfg.rollout.max_tokens_per_turn,
        },
        messages: recordMessages(rec),
      });
    }
  }

  /** Sends what is queued (at most `timeoutMs`). */
  async finish(timeoutMs?: number): Promise<void> {
    await this.#reading;
    await this.uploader.finish(timeoutMs);
  }
}

/**
 * The run's uploads when `OPENREWARD_API_KEY` is set and the run trains on hosted OpenReward
 * environments (`Org/Env` entries without `base_url`); else null.
 */
export function openRolloutUploads(
  cfg: TrainConfig,
  runDir: string,
  o: {
    env?: Record<string, string | undefined>;
    warn?: (line: string) => void;
    backoffMs?: number;
  } = {},
): RunRolloutUploads | null {
  const hosted = Object.entries(cfg.environments)
    .filter(([name, e]) => name.includes("/") && e.base_url === null && e.env_id === null)
    .map(([name]) => name);
  if (hosted.length === 0) return null;
  const target = openRewardUploadTarget(o.env ?? Deno.env.toObject());
  if (!target) return null;
  return new RunRolloutUploads(cfg, runDir, hosted, {
    ...target,
    ...(o.warn ? { warn: o.warn } : {}),
    ...(o.backoffMs === undefined ? {} : { backoffMs: o.backoffMs }),
  });
}
