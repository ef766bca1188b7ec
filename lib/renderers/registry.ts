/**
 * Renderers by name and by model: the model table (`lib/models/`) names each model's renderer
 * (the cookbook's recommended one, or its no-thinking variant unless `policy.thinking`),
 * `local/*` models render ChatML over their tokenizer, and `renderer` overrides the table
 * (`--renderer NAME`, `policy.renderer`). Every path that renders (env rollouts, the proxy, the
 * judges, SFT) gets its renderer here. A renderer name does what tinker-cookbook's renderer of
 * that name does (`renderers/__init__.py`'s `get_renderer`); names the cookbook does not have
 * (`qwen3_thinking`, `llama3_2`, `chatml`, `gpt_oss_template_*`) say so in their renderer's
 * docs.
 *
 * @module
 */

import { defaultRenderer, modelInfo } from "../models/table.ts";
import { getTokenizer } from "../tokenizers/registry.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { ChatMLRenderer } from "./chatml.ts";
import { DeepSeekV3Renderer } from "./deepseek_v3.ts";
import { type GemTemplateName, GemTemplateRenderer } from "./gem_templates.ts";
import { GptOssRenderer } from "./gpt_oss.ts";
import { GptOssTemplateRenderer } from "./gpt_oss_template.ts";
import { KimiK2Renderer } from "./kimi_k2.ts";
import { Llama3Renderer, llamaToday } from "./llama3.ts";
import { Qwen3Renderer } from "./qwen3.ts";
import { QwenXmlRenderer } from "./qwen3_5.ts";
import { RoleColonRenderer } from "./role_colon.ts";
import type { Renderer } from "./types.ts";

/** Options of {@link getRenderer}. */
export interface RendererOptions {
  /**
   * Let the model reason first: hybrid models render with their thinking renderer (the
   * table's `renderer`) rather than their no-thinking one; default false.
   */
  enableThinking?: boolean;
  /** A renderer name from {@link RENDERER_NAMES}, in place of the model table's. */
  renderer?: string | null;
  /**
   * The tokenizer to render over, in place of the model's own (any {@link Tokenizer} with the
   * format's special tokens): renderers can then be used and tested without the model's files.
   */
  tokenizer?: Tokenizer;
  /**
   * GEM's prompt format (`template`): `chat` (default) renders with the model's chat renderer;
   * `qwen3_game`, `qwen3_general`, `no` build each turn's prompt from the observation alone.
   */
  template?: "chat" | GemTemplateName;
}

type Make = (tok: Tokenizer) => Renderer;

/** The renderers by name (the cookbook's names where it has the renderer). */
const RENDERERS: Readonly<Record<string, Make>> = {
  qwen3: (tokenizer) => new Qwen3Renderer({ tokenizer, enableThinking: true, history: "cookbook" }),
  qwen3_disable_thinking: (tokenizer) =>
    new Qwen3Renderer({ tokenizer, enableThinking: false, history: "cookbook" }),
  qwen3_instruct: (tokenizer) => new Qwen3Renderer({ tokenizer, variant: "instruct" }),
  qwen3_thinking: (tokenizer) => new Qwen3Renderer({ tokenizer, variant: "thinking" }),
  qwen3_5: (tok) => new QwenXmlRenderer(tok, { format: "qwen3_5", thinking: true }),
  qwen3_5_disable_thinking: (tok) => new QwenXmlRenderer(tok, { format: "qwen3_5" }),
  qwen3_8_xhigh_reasoning: (tok) =>
    new QwenXmlRenderer(tok, { format: "qwen3_8", thinking: true, effort: "xhigh" }),
  qwen3_8_medium_reasoning: (tok) =>
    new QwenXmlRenderer(tok, { format: "qwen3_8", thinking: true, effort: "medium" }),
  qwen3_8_low_reasoning: (tok) =>
    new QwenXmlRenderer(tok, { format: "qwen3_8", thinking: true, effort: "low" }),
  qwen3_8_disable_thinking: (tok) => new QwenXmlRenderer(tok, { format: "qwen3_8" }),
  nemotron3: (tok) => new QwenXmlRenderer(tok, { format: "nemotron3", thinking: true }),
  nemotron3_low_thinking: (tok) =>
    new QwenXmlRenderer(tok, { format: "nemotron3", thinking: true, effort: "low" }),
  nemotron3_disable_thinking: (tok) => new QwenXmlRenderer(tok, { format: "nemotron3" }),
  nemotron3_preserve_thinking: (tok) =>
    new QwenXmlRenderer(tok, { format: "nemotron3", thinking: true, preserveThinking: true }),
  nemotron3_ultra: (tok) => new QwenXmlRenderer(tok, { format: "nemotron3_ultra", thinking: true }),
  nemotron3_ultra_disable_thinking: (tok) =>
    new QwenXmlRenderer(tok, { format: "nemotron3_ultra" }),
  nemotron3_ultra_medium_thinking: (tok) =>
    new QwenXmlRenderer(tok, { format: "nemotron3_ultra", thinking: true, effort: "medium" }),
  nemotron3_ultra_preserve_thinking: (tok) =>
    new QwenXmlRenderer(tok, {
      format: "nemotron3_ultra",
      thinking: true,
      preserveThinking: true,
    }),
  llama3: (tok) => new Llama3Renderer(tok),
  llama3_2: (tok) => new Llama3Renderer(tok, { date: llamaToday() }),
  deepseekv3: (tok) => new DeepSeekV3Renderer(tok, { thinking: false }),
  deepseekv3_disable_thinking: (tok) => new DeepSeekV3Renderer(tok, { thinking: false }),
  deepseekv3_thinking: (tok) => new DeepSeekV3Renderer(tok, { thinking: true }),
  gpt_oss_no_sysprompt: (tok) => new GptOssRenderer(tok),
  gpt_oss_low_reasoning: (tok) => new GptOssRenderer(tok, { reasoningEffort: "low" }),
  gpt_oss_medium_reasoning: (tok) => new GptOssRenderer(tok, { reasoningEffort: "medium" }),
  gpt_oss_high_reasoning: (tok) => new GptOssRenderer(tok, { reasoningEffort: "high" }),
  gpt_oss_template_low_reasoning: (tok) =>
    new GptOssTemplateRenderer(tok, { reasoningEffort: "low" }),
  gpt_oss_template_medium_reasoning: (tok) =>
    new GptOssTemplateRenderer(tok, { reasoningEffort: "medium" }),
  gpt_oss_template_high_reasoning: (tok) =>
    new GptOssTemplateRenderer(tok, { reasoningEffort: "high" }),
  kimi_k2: (tok) => new KimiK2Renderer(tok),
  kimi_k25: (tok) => new KimiK2Renderer(tok, { thinking: true }),
  kimi_k25_disable_thinking: (tok) => new KimiK2Renderer(tok, { thinking: false }),
  kimi_k26: (tok) => new KimiK2Renderer(tok, { thinking: true }),
  kimi_k26_disable_thinking: (tok) => new KimiK2Renderer(tok, { thinking: false }),
  kimi_k26_preserve_thinking: (tok) =>
    new KimiK2Renderer(tok, { thinking: true, preserveThinking: true }),
  role_colon: (tok) => new RoleColonRenderer(tok),
  chatml: (tok) => new ChatMLRenderer(tok),
};

/** Cookbook renderer names this workbench does not have, and why (one line each). */
const MISSING: Readonly<Record<string, string>> = {
  tml_v0:
    "Inkling's format (tml_v0, rendered through the tml-renderers package) cannot be learned from public sources here",
};

/** The renderer names `--renderer` accepts, and those of the model table (some not built). */
export const RENDERER_NAMES: readonly string[] = [
  ...Object.keys(RENDERERS),
  ...Object.keys(MISSING),
];

/**
 * The renderer of a model, over its tokenizer (or the one given).
 *
 * @example
 * getRenderer("Qwen/Qwen3-4B-Instruct-2507").stopSequences(); // [151645]
 * getRenderer("meta-llama/Llama-3.1-8B", { renderer: "llama3" }); // override the table's role_colon
 * getRenderer("Qwen/Qwen3.5-4B", { tokenizer: myTokenizer }); // no model files needed
 */
export function getRenderer(modelName: string, opts: RendererOptions = {}): Renderer {
  const tokenizer = () => opts.tokenizer ?? getTokenizer(modelName);
  if (opts.template && opts.template !== "chat") {
    return new GemTemplateRenderer(tokenizer(), opts.template);
  }
  const local = /^local\/[^/]+$/.test(modelName);
  const info = modelInfo(modelName);
  const name = opts.renderer ??
    (local ? "chatml" : info && defaultRenderer(info, opts.enableThinking ?? false));
  if (!name) {
    throw new Error(
      `no renderer for model ${
        JSON.stringify(modelName)
      }: not in the model table (deno task models lists it); pass --renderer NAME (${
        Object.keys(RENDERERS).join(", ")
      })`,
    );
  }
  const make = RENDERERS[name];
  if (!make) {
    throw new Error(
      MISSING[name]
        ? `no renderer for ${modelName}: ${MISSING[name]}`
        : `unknown renderer ${JSON.stringify(name)}: known are ${
          Object.keys(RENDERERS).join(", ")
        }`,
    );
  }
  return make(tokenizer());
}
