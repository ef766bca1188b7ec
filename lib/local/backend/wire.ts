/**
 * Wire translation, in one place: Tinker's protocol types (see `lib/protocol`) to the local
 * backend's own (learner datums, LoRA specs, sample jobs) and back (sample responses,
 * forward_backward outputs, model and checkpoint descriptions, REST run records). Everything
 * here is a pure function; a malformed request is a {@link UserInputError} in the wire's
 * field names.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import { findLocalModel, localModelNames, type LocalModelSpec } from "../models.ts";
import { type LoraSpec, LoraSpecSchema } from "../model/config.ts";
import type { CheckpointInfo, CheckpointMeta, RunInfo } from "../checkpoints.ts";
import type { ForwardBackwardResult, LearnerDatum, Trainable } from "../train/mod.ts";
import type { SampleJob, SampleResult } from "../sampler/mod.ts";
import { getTokenizer } from "../../tokenizers/registry.ts";
import type * as wire from "../../protocol/mod.ts";
import { formatZodError } from "../../util/zod.ts";

// ---- requests: wire to local ----

/**
 * The token ids of a ModelInput; the local models take text only (an image is a 400).
 *
 * @example
 * modelInputTokens({ chunks: [{ type: "encoded_text", tokens: [1, 2] }] }, "prompt"); // [1, 2]
 */
export function modelInputTokens(input: wire.ModelInput, field: string): number[] {
  const tokens: number[] = [];
  input.chunks.forEach((c, i) => {
    if (c.type !== "encoded_text") {
      throw new UserInputError(
        `${field}.chunks[${i}] is ${c.type === "image" ? "an image" : `a ${c.type}`} chunk: ` +
          "the local backend's models take text only",
      );
    }
    for (const t of c.tokens) tokens.push(t);
  });
  return tokens;
}

/**
 * Wire datums (ModelInput + TensorData) to the learner's dense typed arrays; sparse CSR
 * tensors (the SDK sends them for 2-D targets when that is smaller) are expanded. Malformed
 * tensors are a 400 naming the datum and key.
 */
export function toLearnerDatums(data: readonly wire.Datum[]): LearnerDatum[] {
  return data.map((d, i) => {
    const tokens = Int32Array.from(modelInputTokens(d.model_input, `data[${i}].model_input`));
    const inputs: LearnerDatum["inputs"] = {};
    for (const [key, t] of Object.entries(d.loss_fn_inputs)) {
      inputs[key] = denseTensor(t, `data[${i}].loss_fn_inputs.${key}`, tokens.length);
    }
    return { tokens, inputs };
  });
}

/**
 * The served model a request names as base_model; an unknown name is a 400 listing the
 * served ones.
 */
export function toModelSpec(baseModel: string): LocalModelSpec {
  const spec = findLocalModel(baseModel);
  if (!spec) {
    throw new UserInputError(
      `the local backend does not serve ${JSON.stringify(baseModel)}; it serves ` +
        `${localModelNames().join(", ")}. Set TINKER_API_KEY to use the Tinker cloud's models.`,
    );
  }
  return spec;
}

/** create_model's lora_config with the service's defaults (rank 32, everything trained). */
export function toLoraSpec(cfg: wire.CreateModelRequest["lora_config"]): LoraSpec {
  const parsed = LoraSpecSchema.safeParse({
    rank: cfg?.rank ?? 32,
    seed: cfg?.seed ?? Math.floor(Math.random() * 2 ** 31),
    trainAttn: cfg?.train_attn ?? true,
    trainMlp: cfg?.train_mlp ?? true,
    trainUnembed: cfg?.train_unembed ?? true,
  });
  if (!parsed.success) {
    throw new UserInputError(formatZodError(parsed.error, "lora_config"));
  }
  return parsed.data;
}

/** What create_model trains: the whole model when its user_metadata asks for it, else LoRA. */
export function toTrainable(userMetadata: Record<string, string> | null | undefined): Trainable {
  return userMetadata?.["tinkerbench.trainable"] === "full" ? "full" : "lora";
}

/** A sample request as the sampler's job, with the service's defaults for unset parameters. */
export function toSampleJob(req: wire.SampleRequest, spec: LocalModelSpec): SampleJob {
  const p = req.sampling_params;
  const stops = p.stop == null ? [] : typeof p.stop === "string" ? [p.stop] : p.stop;
  const stopTokens: number[] = [];
  const stopSequences: number[][] = [];
  // Stop strings become token ids of the model's own tokenizer.
  const tokenizer = getTokenizer(spec.name);
  for (const s of stops as Array<string | number>) {
    if (typeof s === "number") stopTokens.push(s);
    else {
      const ids = tokenizer.encode(s);
      if (ids.length === 1) stopTokens.push(ids[0]);
      else if (ids.length > 1) stopSequences.push(ids);
    }
  }
  return {
    prompt: Int32Array.from(modelInputTokens(req.prompt, "prompt")),
    numSamples: req.num_samples ?? 1,
    maxTokens: p.max_tokens ?? spec.config.maxSeqLen,
    temperature: p.temperature ?? 1,
    topK: p.top_k ?? -1,
    topP: p.top_p ?? 1,
    seed: p.seed ?? undefined,
    stopTokens,
    stopSequences,
    promptLogprobs: req.prompt_logprobs ?? false,
    topkPromptLogprobs: req.topk_prompt_logprobs ?? 0,
  };
}

/**
 * Refuses a request holding a number that is not finite anywhere in it (JSON reads `1e999` as
 * Infinity, protobuf floats carry NaN): one such value poisons a whole training step, so it is
 * a 400 naming the first one's field rather than a NaN loss later.
 *
 * @example
 * assertFiniteNumbers({ adam_params: { learning_rate: Infinity } }, "optim_step");
 * // throws: optim_step: adam_params.learning_rate is Infinity; numbers must be finite
 */
export function assertFiniteNumbers(value: unknown, where: string): void {
  const bad = firstNonFinite(value, "");
  if (bad) {
    throw new UserInputError(
      `${where}: ${bad.path || "the body"} is ${bad.value}; numbers must be finite`,
    );
  }
}

function firstNonFinite(
  v: unknown,
  path: string,
): { path: string; value: number } | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? undefined : { path, value: v };
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
    const a = v as unknown as ArrayLike<number | bigint>;
    for (let i = 0; i < a.length; i++) {
      const x = a[i];
      if (typeof x === "number" && !Number.isFinite(x)) return { path: `${path}[${i}]`, value: x };
    }
    return undefined;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const bad = firstNonFinite(v[i], `${path}[${i}]`);
      if (bad) return bad;
    }
    return undefined;
  }
  if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      const bad = firstNonFinite(x, path ? `${path}.${k}` : k);
      if (bad) return bad;
    }
  }
  return undefined;
}

// ---- results: local to wire ----

/** A sampler result as the sample future's value. */
export function toSampleResponse(r: SampleResult): wire.SampleResponse {
  return {
    type: "sample",
    sequences: r.sequences.map((s) => ({
      stop_reason: s.stopReason,
      tokens: s.tokens,
      logprobs: s.logprobs,
    })),
    prompt_logprobs: r.promptLogprobs ?? null,
    topk_prompt_logprobs: r.topkPromptLogprobs ?? null,
    prompt_cache_hit_tokens: 0,
  };
}

/** A learner pass as the forward_backward future's value. */
export function toForwardBackwardOutput(out: ForwardBackwardResult): wire.ForwardBackwardOutput {
  // JSON has no NaN: a non-finite loss would reach the client as `null`, read as a number.
  for (const [name, x] of Object.entries(out.metrics)) {
    if (!Number.isFinite(x)) {
      throw new UserInputError(
        `forward_backward: the metric ${name} is ${x} (the loss overflowed float32: are the ` +
          `advantages or loss weights far too large?)`,
      );
    }
  }
  return {
    loss_fn_output_type: "ArrayRecord",
    loss_fn_outputs: out.outputs.map((o) => ({
      logprobs: { data: Array.from(o.logprobs.data), dtype: "float32", shape: o.logprobs.shape },
    })),
    metrics: out.metrics,
  };
}

/** The served models, for get_server_capabilities. */
export function toCapabilities(): wire.GetServerCapabilitiesResponse {
  return {
    supported_models: localModelNames().map((name) => ({
      model_name: name,
      max_context_length: findLocalModel(name)!.config.maxSeqLen,
    })),
  };
}

/** A training model as get_info describes it. */
export function toModelInfo(
  m: { id: string; spec: LocalModelSpec; lora: LoraSpec; trainable: Trainable },
): wire.GetInfoResponse {
  return {
    type: "get_info",
    model_id: m.id,
    model_data: { arch: "gpt", model_name: m.spec.name, tokenizer_id: m.spec.tokenizerId },
    is_lora: m.trainable === "lora",
    lora_rank: m.lora.rank,
    model_name: m.spec.name,
  };
}

/** What a checkpoint was trained from, as weights_info answers it. */
export function toWeightsInfo(meta: CheckpointMeta): wire.WeightsInfoResponse {
  return {
    base_model: meta.base_model,
    is_lora: meta.trainable === "lora",
    lora_rank: meta.lora.rank,
    train_attn: meta.lora.trainAttn,
    train_mlp: meta.lora.trainMlp,
    train_unembed: meta.lora.trainUnembed,
  };
}

/** A run record as the REST API shows it; `ckpts` are the run's checkpoints, newest first. */
export function toTrainingRun(run: RunInfo, ckpts: readonly CheckpointInfo[]): wire.TrainingRun {
  const { lora: _lora, created_at: _created, ...rest } = run;
  return {
    ...rest,
    last_checkpoint: ckpts.find((c) => c.checkpoint_type === "training") ?? null,
    last_sampler_checkpoint: ckpts.find((c) => c.checkpoint_type === "sampler") ?? null,
  };
}

function denseTensor(t: wire.TensorData, field: string, n: number) {
  const shape = t.shape ?? [t.sparse_crow_indices ? n : t.data.length];
  const size = shape.reduce((a, b) => a * b, 1);
  const values = t.sparse_crow_indices ? expandCsr(t, shape, field) : t.data;
  if (values.length !== size) {
    throw new UserInputError(`${field} has ${values.length} values but shape [${shape}]`);
  }
  if (t.dtype === "int64") {
    const out = new Int32Array(size);
    for (let i = 0; i < size; i++) {
      const v = Number(values[i]);
      if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
        throw new UserInputError(`${field}[${i}] = ${values[i]} is not a 32-bit integer`);
      }
      out[i] = v;
    }
    return { shape, data: out };
  }
  return { shape, data: Float32Array.from(values, Number) };
}

function expandCsr(t: wire.TensorData, shape: number[], field: string): Float32Array {
  const crow = t.sparse_crow_indices!, col = t.sparse_col_indices ?? [];
  if (shape.length !== 2 || crow.length !== shape[0] + 1 || col.length !== t.data.length) {
    throw new UserInputError(
      `${field}: sparse CSR needs a 2-D shape, ${
        shape[0] + 1
      } row offsets and one column per value`,
    );
  }
  const [rows, cols] = shape;
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let k = Number(crow[r]); k < Number(crow[r + 1]); k++) {
      const c = Number(col[k]);
      if (c < 0 || c >= cols) throw new UserInputError(`${field}: column index ${c} out of range`);
      out[r * cols + c] = Number(t.data[k]);
    }
  }
  return out;
}
