/**
 * What the REST endpoints of the local backend answer: training runs with their latest
 * checkpoints, checkpoint listings, what a checkpoint was trained from, and sessions. Read-only
 * views over the checkpoint store and the open sessions.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { CheckpointInfo, CheckpointStore, RunInfo } from "../checkpoints.ts";
import { parseTinkerPath, type TinkerPath } from "../../protocol/paths.ts";
import type * as wire from "../../protocol/mod.ts";
import type { ClientSessions } from "./sessions.ts";
import { toTrainingRun, toWeightsInfo } from "./wire.ts";

/** A page of a listing: where it starts, how long it may be, how many there are in all. */
export interface Cursor {
  /** Index of the page's first item. */
  offset: number;
  /** Items per page. */
  limit: number;
  /** Items in all. */
  total_count: number;
}

/**
 * The REST views.
 *
 * @example
 * const views = new RestViews(checkpoints, sessions);
 * const { training_runs } = await views.trainingRuns(20, 0);
 */
export class RestViews {
  readonly #checkpoints: CheckpointStore;
  readonly #sessions: ClientSessions;

  constructor(checkpoints: CheckpointStore, sessions: ClientSessions) {
    this.#checkpoints = checkpoints;
    this.#sessions = sessions;
  }

  /** A run record as the REST API shows it, with its latest checkpoints; unknown is a 404. */
  async trainingRun(runId: string): Promise<wire.TrainingRun> {
    return await this.#runView(await this.#run(runId));
  }

  /** Runs, most recently used first. */
  async trainingRuns(
    limit: number,
    offset: number,
  ): Promise<{ training_runs: wire.TrainingRun[]; cursor: Cursor }> {
    const { runs, total } = await this.#checkpoints.listRuns(limit, offset);
    return {
      training_runs: await Promise.all(runs.map((r) => this.#runView(r))),
      cursor: { offset, limit, total_count: total },
    };
  }

  /** A run's checkpoints, newest first; an unknown run is a 404. */
  async runCheckpoints(runId: string): Promise<{ checkpoints: CheckpointInfo[] }> {
    await this.#run(runId);
    return { checkpoints: await this.#checkpoints.list(runId) };
  }

  /** One page of every run's checkpoints. */
  async checkpoints(
    limit: number,
    offset: number,
  ): Promise<{ checkpoints: CheckpointInfo[]; cursor: Cursor }> {
    const all = await this.#checkpoints.listAll();
    return {
      checkpoints: all.slice(offset, offset + limit),
      cursor: { offset, limit, total_count: all.length },
    };
  }

  /** weights_info: what a checkpoint was trained from, for create_training_client_from_state. */
  async weightsInfo(tinkerPath: string): Promise<wire.WeightsInfoResponse> {
    return toWeightsInfo(await this.#checkpoints.meta(parseTinkerPath(tinkerPath)));
  }

  /** Checkpoint path of a REST route's `{run_id}/checkpoints/{kind}/{name}`. */
  restPath(runId: string, checkpointId: string): TinkerPath {
    return parseTinkerPath(`tinker://${runId}/${checkpointId}`);
  }

  /** What a session owns; an unknown session is a 404. */
  sessionInfo(sessionId: string): { training_run_ids: string[]; sampler_ids: string[] } {
    const s = this.#sessions.get(sessionId);
    return { training_run_ids: [...s.models], sampler_ids: [...s.samplingSessions] };
  }

  async #run(runId: string): Promise<RunInfo> {
    const run = await this.#checkpoints.getRun(runId);
    if (!run) throw new UserInputError(`training run ${JSON.stringify(runId)} not found`, 404);
    return run;
  }

  async #runView(run: RunInfo): Promise<wire.TrainingRun> {
    return toTrainingRun(run, await this.#checkpoints.list(run.training_run_id));
  }
}
