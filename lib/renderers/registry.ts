/**
 * Renderers by name and by model: the model table (`lib/models/`) names each model's renderer,
 * `local/*` models render ChatML over their tokenizer, and `renderer` overrides the table
 * (`--renderer NAME`, `policy.renderer`). Every path that renders (env rollouts, the proxy, the
 * judges, SFT) gets its renderer here.
 *
 * @module
 */

import { modelInfo } from "../models/table.ts";
import { getTokenizer } from "../tokenizers/registry.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { ChatMLRenderer } from "./chatml.ts";
import { DeepSeekV3Renderer } from "./deepseek_v3.ts";
import { type GemTemplateName, GemTemplateRenderer } from "./gem_templates.ts";
import { GptOssRenderer } from "./gpt_oss.ts";
import { KimiK2Renderer } from "./kimi_k2.ts";
import { Llama3Renderer, llamaToday } from "./llama3.ts";
import { Qwen3Renderer } from "./qwen3.ts";
import { RoleColonRenderer } from "./role_colon.ts";
import type { Renderer } from "./types.ts";

/** Options of {@link getRenderer}. */
export interface RendererOptions {
  /**
   * Let the model reason first, where its format has a switch (Qwen3 hybrid's
   * `enable_thinking`, DeepSeek V3's `thinking`); default false.
   */
  enableThinking?: boolean;
  /** A renderer name from {@link RENDERER_NAMES}, in place of the model table's. */
  renderer?: string | null;
  /**
   * GEM's prompt format (`template`): `chat` (default) renders with the model's chat renderer;
   * `qwen3_game`, `qwen3_general`, `no` build each turn's prompt from the observation alone.
   */
  template?: "chat" | GemTemplateName;
}

type Make = (tok: Tokenizer, thinking: boolean) => Renderer;

/** The renderers by name (the cookbook's names where it has the renderer). */
const RENDERERS: Readonly<Record<string, Make>> = {
  qwen3: (tokenizer, thinking) => new Qwen3Renderer({ tokenizer, enableThinking: thinking }),
  qwen3_disable_thinking: (tokenizer) => new Qwen3Renderer({ tokenizer, enableThinking: false }),
  qwen3_instruct: (tokenizer) => new Qwen3Renderer({ tokenizer, variant: "instruct" }),
  qwen3_thinking: (tokenizer) => new Qwen3Renderer({ tokenizer, variant: "thinking" }),
  llama3: (tok) => new Llama3Renderer(tok),
  llama3_2: (tok) => new Llama3Renderer(tok, { date: llamaToday() }),
  deepseekv3: (tok, thinking) => new DeepSeekV3Renderer(tok, { thinking }),
  deepseekv3_thinking: (tok) => new DeepSeekV3Renderer(tok, { thinking: true }),
  gpt_oss: (tok) => new GptOssRenderer(tok),
  gpt_oss_low_reasoning: (tok) => new GptOssRenderer(tok, { reasoningEffort: "low" }),
  gpt_oss_high_reasoning: (tok) => new GptOssRenderer(tok, { reasoningEffort: "high" }),
  kimi_k2: (tok) => new KimiK2Renderer(tok),
  role_colon: (tok) => new RoleColonRenderer(tok),
  chatml: (tok) => new ChatMLRenderer(tok),
};

/** The renderer names `--renderer` accepts. */
export const RENDERER_NAMES: readonly string[] = Object.keys(RENDERERS);

/** Families in the table whose renderer this workbench does not have. */
const MISSING: Readonly<Record<string, string>> = {
  qwen3_5:
    "Qwen3.5's chat template could not be had here to check a renderer against (--renderer NAME picks another)",
};

/**
 * The renderer of a model, over its tokenizer.
 *
 * @example
 * getRenderer("Qwen/Qwen3-4B-Instruct-2507").stopSequences(); // [151645]
 * getRenderer("meta-llama/Llama-3.1-8B", { renderer: "llama3" }); // override the table's role_colon
 */
export function getRenderer(modelName: string, opts: RendererOptions = {}): Renderer {
  if (opts.template && opts.template !== "chat") {
    return new GemTemplateRenderer(getTokenizer(modelName), opts.template);
  }
  const local = /^local\/[^/]+$/.test(modelName);
  const info = modelInfo(modelName);
  const name = opts.renderer ?? (local ? "chatml" : info?.renderer);
  if (name === undefined) {
    throw new Error(
      `no renderer for model ${
        JSON.stringify(modelName)
      }: not in the model table (deno task models lists it); pass --renderer NAME (${
        RENDERER_NAMES.join(", ")
      })`,
    );
  }
  const make = RENDERERS[name];
  if (!make) {
    throw new Error(
      MISSING[name]
        ? `no renderer for ${modelName}: ${MISSING[name]}`
        : `unknown renderer ${JSON.stringify(name)}: known are ${RENDERER_NAMES.join(", ")}`,
    );
  }
  return make(getTokenizer(modelName), opts.enableThinking ?? false);
}
