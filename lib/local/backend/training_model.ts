/**
 * One training model of the local backend: its record (base model, LoRA spec, seq-id order),
 * loading its {@link Learner} with the run record the REST API lists, and what its
 * checkpoints say about it.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import { loadBaseWeights, type LocalModelSpec } from "../models.ts";
import type { LoraSpec } from "../model/config.ts";
import type { CheckpointInfo, CheckpointMeta, CheckpointStore } from "../checkpoints.ts";
import { SeqOrder } from "../runtime/sequencer.ts";
import { Learner, type Trainable } from "../train/mod.ts";

/** What a new training model is made from. */
export interface NewTrainingModel {
  /** `<session>:train:<model_seq_id>`. */
  id: string;
  spec: LocalModelSpec;
  lora: LoraSpec;
  trainable: Trainable;
  userMetadata: Record<string, string>;
}

/** One training model. */
export interface TrainingModel extends NewTrainingModel {
  sessionId: string;
  /** Releases the model's operations in seq-id order. */
  order: SeqOrder;
  /** Operations accepted so far. */
  submitted: number;
  /** Set once loaded; until then (or if loading failed) operations wait or fail. */
  learner?: Learner;
  loadError?: unknown;
}

/** What the run records say owns the models. */
const MODEL_OWNER = "local";

/**
 * A model record of session `sessionId`, with no learner yet; a seq-id gap longer than
 * `seqGapTimeoutMs` is skipped with a warning.
 */
export function newTrainingModel(
  sessionId: string,
  m: NewTrainingModel,
  seqGapTimeoutMs: number,
): TrainingModel {
  return {
    ...m,
    sessionId,
    submitted: 0,
    order: new SeqOrder({
      gapTimeoutMs: seqGapTimeoutMs,
      onSkip: (from, to) =>
        console.warn(`model ${m.id}: seq_id ${from}..${to - 1} never arrived; moving on`),
    }),
  };
}

/** Loads the model's learner from its base weights and records the run; failures are kept. */
export async function loadLearner(model: TrainingModel, checkpoints: CheckpointStore) {
  try {
    model.learner = await Learner.create({
      config: model.spec.config,
      base: await loadBaseWeights(model.spec),
      lora: model.lora,
      trainable: model.trainable,
    });
    const now = new Date().toISOString();
    await checkpoints.saveRun({
      training_run_id: model.id,
      base_model: model.spec.name,
      model_owner: MODEL_OWNER,
      is_lora: model.trainable === "lora",
      corrupted: false,
      lora_rank: model.lora.rank,
      last_request_time: now,
      user_metadata: model.userMetadata,
      lora: model.lora,
      created_at: now,
    });
  } catch (e) {
    model.loadError = e;
    throw e;
  }
}

/** What a checkpoint of model `m` records about it. */
export function checkpointMeta(
  m: TrainingModel,
  l: Learner,
): Omit<CheckpointMeta, keyof CheckpointInfo> {
  return {
    training_run_id: m.id,
    base_model: m.spec.name,
    lora: m.lora,
    trainable: m.trainable,
    optimizer_step: l.step,
  };
}

/** Refuses a checkpoint of another base model or adapter shape than model `m`'s. */
export function checkCompatible(meta: CheckpointMeta, m: TrainingModel): void {
  if (meta.base_model !== m.spec.name) {
    throw new UserInputError(
      `checkpoint ${meta.tinker_path} was trained on ${meta.base_model}, not ${m.spec.name}`,
    );
  }
  if (meta.trainable !== m.trainable || meta.lora.rank !== m.lora.rank) {
    throw new UserInputError(
      `checkpoint ${meta.tinker_path} has LoRA rank ${meta.lora.rank}, the model has ${m.lora.rank}`,
    );
  }
}
