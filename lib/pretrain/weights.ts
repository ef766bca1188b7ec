/**
 * Getting pretrained weights out of a training run and into `models/`, where the local backend
 * loads a served model's base weights from. The run is a full fine-tune, so its sampler
 * checkpoint holds every base tensor under the base names; it is downloaded through the
 * checkpoint archive URL (the same route any Tinker client uses), unpacked, checked against
 * the model's layout and written as one safetensors file.
 *
 * @module
 */

import type { ServiceClient } from "../tinker/mod.ts";
import type { LocalModelSpec } from "../local/models.ts";
import { checkBaseParameters, initBaseParameters } from "../local/model/params.ts";
import { decodeSafetensors, writeSafetensors } from "../local/safetensors.ts";
import { hostTensor, type NamedTensors } from "../local/tensors.ts";

/** One file of a tar archive. */
export interface TarFile {
  name: string;
  data: Uint8Array;
}

/** The regular files of a ustar archive (what the checkpoint archive URL serves). */
export function readTar(bytes: Uint8Array): TarFile[] {
  const out: TarFile[] = [];
  const dec = new TextDecoder();
  const field = (at: number, len: number) =>
    dec.decode(bytes.subarray(at, at + len)).replace(/\0.*$/s, "").trim();
  for (let pos = 0; pos + 512 <= bytes.length;) {
    const name = field(pos, 100);
    if (name === "") break; // the zero blocks that end the archive
    const size = parseInt(field(pos + 124, 12) || "0", 8);
    const type = field(pos + 156, 1);
    if (Number.isNaN(size) || pos + 512 + size > bytes.length) {
      throw new Error(`tar: entry ${name} runs past the end of the archive`);
    }
    if (type === "" || type === "0") {
      out.push({ name, data: bytes.slice(pos + 512, pos + 512 + size) });
    }
    pos += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

/**
 * The full weights of a `sampler_weights/` checkpoint of a full fine-tune, downloaded through
 * the archive URL and checked against `spec`'s base parameter names and shapes.
 */
export async function downloadFullWeights(
  service: ServiceClient,
  samplerPath: string,
  spec: LocalModelSpec,
): Promise<NamedTensors> {
  const { url } = await service.restClient().getCheckpointArchiveUrl(samplerPath);
  // The archive URL is a download link (signed on the service), fetched without the session.
  const res = await fetch(url);
  if (!res.ok) throw new Error(`archive of ${samplerPath}: HTTP ${res.status} from ${url}`);
  const files = readTar(new Uint8Array(await res.arrayBuffer()));
  const file = files.find((f) => f.name.endsWith("/adapter.safetensors"));
  if (!file) throw new Error(`archive of ${samplerPath} holds no adapter.safetensors`);
  const { tensors, metadata } = decodeSafetensors(file.data);
  if (metadata.format !== "tinkerbench-full") {
    throw new Error(
      `${samplerPath} is not a full fine-tune (format ${metadata.format ?? "unknown"}); create ` +
        `the training client with userMetadata {"tinkerbench.trainable": "full"}`,
    );
  }
  checkBaseParameters(spec.config, tensors);
  return tensors;
}

/** Writes base weights where the backend loads `spec`'s from (`models/<name>.safetensors`). */
export async function writeBaseWeights(
  path: string,
  spec: LocalModelSpec,
  tensors: NamedTensors,
  metadata: Record<string, string> = {},
): Promise<void> {
  checkBaseParameters(spec.config, tensors);
  await writeSafetensors(path, tensors, {
    format: "tinkerbench-base",
    model: spec.name,
    ...metadata,
  });
}

/**
 * Base weights of `to` started from another model's: every tensor of the same shape copied,
 * the token embedding's rows and the LM head's columns of the first `from` vocabulary ids
 * copied (`to`'s tokenizer must extend `from`'s, keeping its ids), the new tokens' rows from
 * `to`'s seeded random init. How `local/tools` starts from `local/games2`.
 *
 * @example
 * const start = extendVocabulary(findLocalModel("local/games2")!, games2Weights, toolsSpec);
 */
export function extendVocabulary(
  from: LocalModelSpec,
  weights: NamedTensors,
  to: LocalModelSpec,
): NamedTensors {
  checkBaseParameters(from.config, weights);
  const old = from.config.vocabSize, vocab = to.config.vocabSize, d = to.config.dModel;
  if (vocab < old || from.config.dModel !== d) {
    throw new Error(`${to.name} does not extend ${from.name}'s vocabulary and width`);
  }
  const out = initBaseParameters(to.config, to.initSeed);
  for (const [name, t] of out) {
    const src = weights.get(name)!;
    if (src.shape.join(",") === t.shape.join(",")) {
      out.set(name, hostTensor(t.shape, src.data.slice()));
    } else if (name === "wte.weight") {
      t.data.set(src.data); // rows [0, old) of [V, D]
    } else if (name === "lm_head.weight") {
      for (let i = 0; i < d; i++) t.data.set(src.data.subarray(i * old, (i + 1) * old), i * vocab);
    } else {
      throw new Error(`${from.name} → ${to.name}: ${name} differs in shape beyond the vocabulary`);
    }
  }
  return out;
}
