/**
 * Exports a trained local policy as a model folder that `@huggingface/transformers`
 * (transformers.js) loads as it loads its own ONNX exports, so a policy trained here runs in a
 * transformers.js pipeline, in Deno or a browser:
 *
 * ```
 * OUT_DIR/config.json              GPT-2's config keys (our GPT is GPT-2's pre-LN decoder with an untied head)
 * OUT_DIR/generation_config.json   eos / pad ids
 * OUT_DIR/tokenizer.json           the model's Hugging Face tokenizer
 * OUT_DIR/tokenizer_config.json    its config plus the ChatML chat template the renderer writes
 * OUT_DIR/onnx/model.onnx          the graph in Hugging Face's decoder layout, LoRA folded in
 * ```
 *
 * @module
 */

import { join } from "node:path";
import { UserInputError } from "../errors.ts";
import type { CheckpointStore } from "../checkpoints.ts";
import { findLocalModel, loadBaseWeights } from "../models.ts";
import { foldLoraOnHost } from "../model/lora.ts";
import { mlpWidth } from "../model/config.ts";
import { parseTinkerPath } from "../../protocol/paths.ts";
import { GAMES_TOKENIZER_DIR, GAMES_TOKENIZER_ID } from "../../tokenizers/games.ts";
import { buildGptGraph } from "./gpt_graph.ts";

/**
 * The chat template of the ChatML renderer (`lib/renderers/chatml.ts`), for plain messages:
 * `<|im_start|>role\ncontent<|im_end|>\n` per message, then `<|im_start|>assistant\n`.
 */
export const CHATML_TEMPLATE = "{% for message in messages %}" +
  "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Options of {@link exportPolicy}. */
export interface ExportOptions {
  /** Where `path` is looked up. */
  checkpoints: CheckpointStore;
  /** `tinker://<run>/sampler_weights/<name>` (or `…/weights/<name>`). */
  path: string;
  /** The folder to write; created if missing. */
  outDir: string;
}

/** Writes the model folder of a checkpoint and returns the files written. */
export async function exportPolicy(opts: ExportOptions): Promise<string[]> {
  const { meta, tensors } = await opts.checkpoints.load(parseTinkerPath(opts.path));
  const spec = findLocalModel(meta.base_model);
  if (!spec) throw new UserInputError(`${opts.path}: unknown base model ${meta.base_model}`);
  if (spec.tokenizerId !== GAMES_TOKENIZER_ID) {
    throw new UserInputError(
      `${spec.name} uses the byte tokenizer, which has no tokenizer.json for transformers.js; ` +
        "policies of local/games2 export",
    );
  }
  const weights = meta.trainable === "full" ? tensors.weights : foldLoraOnHost(
    await loadBaseWeights(spec),
    tensors.weights,
    meta.lora.alpha / meta.lora.rank,
  );
  const cfg = spec.config;
  const tokenizerConfig = JSON.parse(
    await Deno.readTextFile(new URL("tokenizer_config.json", GAMES_TOKENIZER_DIR)),
  );
  const tokenizer = JSON.parse(
    await Deno.readTextFile(new URL("tokenizer.json", GAMES_TOKENIZER_DIR)),
  );
  const idOf = (content: string): number => {
    const t = (tokenizer.added_tokens as { id: number; content: string }[]).find((a) =>
      a.content === content
    );
    if (!t) throw new Error(`export: the tokenizer has no ${content} token`);
    return t.id;
  };
  const eos = idOf(tokenizerConfig.eos_token), pad = idOf(tokenizerConfig.pad_token);
  await Deno.mkdir(join(opts.outDir, "onnx"), { recursive: true });
  const files: Record<string, string | Uint8Array> = {
    "config.json": json({
      model_type: "gpt2",
      architectures: ["GPT2LMHeadModel"],
      vocab_size: cfg.vocabSize,
      n_embd: cfg.dModel,
      n_layer: cfg.nLayers,
      n_head: cfg.nHeads,
      n_positions: cfg.maxSeqLen,
      n_inner: mlpWidth(cfg),
      activation_function: "gelu_new",
      layer_norm_epsilon: 1e-5,
      tie_word_embeddings: false,
      bos_token_id: eos,
      eos_token_id: eos,
      pad_token_id: pad,
      use_cache: true,
      tinkerbench: { base_model: spec.name, checkpoint: opts.path, step: meta.optimizer_step },
    }),
    "generation_config.json": json({ eos_token_id: eos, pad_token_id: pad, bos_token_id: eos }),
    "tokenizer.json": json(tokenizer),
    "tokenizer_config.json": json({ ...tokenizerConfig, chat_template: CHATML_TEMPLATE }),
    "onnx/model.onnx": buildGptGraph(cfg, { weights, layout: "transformers" }),
  };
  for (const [name, body] of Object.entries(files)) {
    const path = join(opts.outDir, name);
    if (typeof body === "string") await Deno.writeTextFile(path, body);
    else await Deno.writeFile(path, body);
  }
  return Object.keys(files).map((f) => join(opts.outDir, f));
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}
