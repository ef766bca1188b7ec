/**
 * Renderers by model name: `Qwen/Qwen3-*` (hybrid-thinking Qwen3) → {@link Qwen3Renderer},
 * `local/*` → {@link ChatMLRenderer} over the model's tokenizer (bytes, or the games tokenizer).
 *
 * @module
 */

import { ChatMLRenderer } from "./chatml.ts";
import { Qwen3Renderer, type Qwen3RendererOptions } from "./qwen3.ts";
import type { Renderer } from "./types.ts";
import { getTokenizer } from "../tokenizers/mod.ts";

/**
 * The renderer of a model. Qwen3 `-Base` and `-Instruct-2507` models use other chat templates
 * and are rejected rather than rendered wrongly.
 *
 * @example
 * const r = getRenderer("Qwen/Qwen3-8B", { enableThinking: false });
 */
export function getRenderer(
  modelName: string,
  opts: Omit<Qwen3RendererOptions, "tokenizer"> = {},
): Renderer {
  if (/^Qwen\/Qwen3-[^/]+$/.test(modelName)) {
    if (/-(Base|Instruct-2507|Thinking-2507)$/.test(modelName)) {
      throw new Error(
        `no renderer for ${modelName}: its chat template differs from Qwen3's hybrid template`,
      );
    }
    return new Qwen3Renderer({ ...opts, tokenizer: getTokenizer(modelName) });
  }
  if (/^local\/[^/]+$/.test(modelName)) return new ChatMLRenderer(getTokenizer(modelName));
  throw new Error(
    `no renderer for model ${JSON.stringify(modelName)}: known models are Qwen/Qwen3-*, local/*`,
  );
}
