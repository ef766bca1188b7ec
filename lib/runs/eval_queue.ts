/**
 * Evaluates every checkpoint of every run once, one at a time, in the server: a run's
 * checkpoints are found in its `checkpoints.jsonl` as they appear, and each result (or the
 * reason it failed) is stored, so a restarted server only evaluates what is still missing.
 *
 * @module
 */

import { make } from "../envs/registry.ts";
import type { AnyEnv } from "../envs/types.ts";
import { getRenderer, type Renderer } from "../renderers/mod.ts";
import type { SamplingClient } from "../tinker/mod.ts";
import type { CheckpointRecord, PolicyScore } from "../rundir/mod.ts";
import { withPolicy } from "./policy.ts";
import { readCheckpoints } from "../rundir/mod.ts";
import type { RunRecord, RunStore } from "./store.ts";

/**
 * The held-out evaluator checkpoints are scored with: the trainer's (`evaluateHeldOut` and
 * `heldOutEnvironment` of lib/trainer/evaluate.ts), handed in by the entry point that starts the
 * server, so that the run API reads run directories without importing the trainer.
 */
export interface HeldOutEvaluator {
  /** Plays one episode per held-out env seed with `sampler` and scores them. */
  evaluateHeldOut(
    sampler: SamplingClient,
    makeEnv: () => AnyEnv,
    o: {
      episodes: number;
      maxTokensPerTurn: number;
      maxTotalTokens?: number;
      temperature: number;
      maxConcurrency?: number;
      renderer: Renderer;
    },
  ): Promise<PolicyScore>;
  /** The environment held-out episodes play (a task list's held-out split). */
  heldOutEnvironment(makeEnv: () => AnyEnv): Promise<{ makeEnv: () => AnyEnv }>;
}

interface Job {
  run: RunRecord;
  checkpoint: CheckpointRecord;
}

/** The server's queue of checkpoint evaluations. */
export class EvalQueue {
  readonly #store: RunStore;
  readonly #dataDir: string;
  readonly #evaluator: HeldOutEvaluator;
  readonly #pending: Job[] = [];
  /** `run id + state path` of every job pending or running. */
  readonly #known = new Set<string>();
  #current: Promise<void> | null = null;
  #currentRun: string | null = null;
  #closed = false;

  constructor(store: RunStore, dataDir: string, evaluator: HeldOutEvaluator) {
    this.#store = store;
    this.#dataDir = dataDir;
    this.#evaluator = evaluator;
  }

  /** Queues the run's checkpoints that have no evaluation yet. */
  async scan(run: RunRecord): Promise<void> {
    if (this.#closed || !(Number(run.config.eval_episodes) > 0)) return;
    const done = new Set(this.#store.evalsFor(run.id).map((e) => e.checkpoint));
    for (const checkpoint of await readCheckpoints(run.runDir)) {
      const key = `${run.id} ${checkpoint.state_path}`;
      if (done.has(checkpoint.state_path) || this.#known.has(key)) continue;
      this.#known.add(key);
      this.#pending.push({ run, checkpoint });
    }
    this.#pump();
  }

  /** Whether a checkpoint of this run waits for or is in evaluation. */
  isPending(runId: string): boolean {
    return this.#currentRun === runId || this.#pending.some((j) => j.run.id === runId);
  }

  /** Drops what is queued and waits for the evaluation in progress. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#pending.length = 0;
    await this.#current;
  }

  #pump(): void {
    if (this.#current || this.#closed) return;
    const job = this.#pending.shift();
    if (!job) return;
    this.#currentRun = job.run.id;
    this.#current = this.#evaluate(job).finally(() => {
      this.#known.delete(`${job.run.id} ${job.checkpoint.state_path}`);
      this.#current = null;
      this.#currentRun = null;
      this.#pump();
    });
  }

  async #evaluate({ run, checkpoint }: Job): Promise<void> {
    const c = run.config;
    const record = {
      runId: run.id,
      checkpoint: checkpoint.state_path,
      step: checkpoint.step,
      kind: checkpoint.kind,
      createdAt: "",
    };
    try {
      // The trainer's evaluator, on the same held-out episodes as its final eval.json.
      const score = await withPolicy(
        this.#dataDir,
        { checkpoint },
        async (sampler, service) =>
          this.#evaluator.evaluateHeldOut(
            sampler,
            (await this.#evaluator.heldOutEnvironment(() => make(run.environment))).makeEnv,
            {
              episodes: Number(c.eval_episodes),
              maxTokensPerTurn: Number(c.max_token_length),
              // As the trainer's: an episode that fills the context ends unsolved, not left out.
              maxTotalTokens: await service.contextLength(String(c.model_name)),
              temperature: Number(c.temperature),
              maxConcurrency: Number(c.max_num_workers),
              renderer: getRenderer(String(c.model_name)),
            },
          ),
      );
      if (score.episodes === 0) {
        throw new Error(`no held-out episode finished (${score.first_error ?? "no error"})`);
      }
      this.#store.putEval({
        ...record,
        episodes: score.episodes,
        percentCorrect: score.success,
        rewardMean: score.mean_reward,
        error: null,
        createdAt: new Date().toISOString(),
      });
    } catch (e) {
      this.#store.putEval({
        ...record,
        episodes: 0,
        percentCorrect: null,
        rewardMean: null,
        error: (e as Error).message.split("\n")[0],
        createdAt: new Date().toISOString(),
      });
    }
  }
}
