/**
 * Checkpoint paths, `tinker://<run_id>/<kind>/<name>`: `weights/` for training state (from
 * save_state), `sampler_weights/` for sampling. Run ids may contain `:` (the service's are
 * `<session>:train:<n>`); the REST routes address a checkpoint as `<kind>/<name>`.
 *
 * @module
 */

/** `weights` (training state) or `sampler_weights` (for sampling). */
export type CheckpointKind = "weights" | "sampler_weights";

/** The parts of a checkpoint path. */
export interface TinkerPath {
  /** The training run. */
  runId: string;
  /** `weights` or `sampler_weights`. */
  kind: CheckpointKind;
  /** The checkpoint's name. */
  name: string;
}

/** A malformed checkpoint path or name (the caller's mistake: a 400 on a server). */
export class InvalidTinkerPathError extends Error {
  override name = "InvalidTinkerPathError";
}

const RUN_ID = /^[A-Za-z0-9_.:-]{1,255}$/;
const NAME = /^[A-Za-z0-9_.-]{1,255}$/;
const HINT =
  "expected tinker://<run_id>/weights/<name> or tinker://<run_id>/sampler_weights/<name>";

/**
 * Parses a checkpoint path, with a message that says what a valid one looks like.
 *
 * @example
 * parseTinkerPath("tinker://abc:train:0/weights/ckpt-1");
 * // { runId: "abc:train:0", kind: "weights", name: "ckpt-1" }
 */
export function parseTinkerPath(path: string): TinkerPath {
  const m = /^tinker:\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
  if (!m) {
    throw new InvalidTinkerPathError(`invalid checkpoint path ${JSON.stringify(path)}: ${HINT}`);
  }
  const [, runId, kind, name] = m;
  if (kind !== "weights" && kind !== "sampler_weights") {
    throw new InvalidTinkerPathError(
      `invalid checkpoint kind ${JSON.stringify(kind)} in ${path}: ${HINT}`,
    );
  }
  checkRunId(runId);
  checkCheckpointName(name);
  return { runId, kind, name };
}

/** Formats a checkpoint path. */
export function formatTinkerPath({ runId, kind, name }: TinkerPath): string {
  return `tinker://${runId}/${kind}/${name}`;
}

/** The REST routes' `<kind>/<name>` of a path. */
export function checkpointId(p: TinkerPath): string {
  return `${p.kind}/${p.name}`;
}

/** Throws unless `name` is a valid checkpoint name. */
export function checkCheckpointName(name: string): void {
  if (!NAME.test(name) || name === "." || name === "..") {
    throw new InvalidTinkerPathError(
      `invalid checkpoint name ${JSON.stringify(name)}: use 1-255 letters, digits, '_', '-' or '.'`,
    );
  }
}

/** Throws unless `runId` is a valid training run id. */
export function checkRunId(runId: string): void {
  if (!RUN_ID.test(runId) || runId === "." || runId === "..") {
    throw new InvalidTinkerPathError(`invalid training run id ${JSON.stringify(runId)}`);
  }
}
