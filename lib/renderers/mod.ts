/**
 * Renderers: chat formats as token ids (ChatML, Qwen3, Llama 3, DeepSeek V3, gpt-oss,
 * Kimi K2, role-colon), tool
 * declarations in the prompt, and
 * the renderer of a model by name.
 *
 * @module
 */

export type {
  Message,
  ParsedResponse,
  Renderer,
  SupervisedExample,
  ToolCall,
  ToolSpec,
  TrainOn,
} from "./types.ts";
export {
  openAiTools,
  qwen3DeclareTools,
  toolsInSystemText,
  toolsOnSystem,
  toolsSection,
} from "./tools.ts";
export { ChatMLRenderer } from "./chatml.ts";
export { Qwen3Renderer, type Qwen3RendererOptions, type Qwen3Variant } from "./qwen3.ts";
export { getRenderer, RENDERER_NAMES, type RendererOptions } from "./registry.ts";
export { type Llama3Options, Llama3Renderer, llamaToday } from "./llama3.ts";
export { type DeepSeekV3Options, DeepSeekV3Renderer } from "./deepseek_v3.ts";
export { RoleColonRenderer } from "./role_colon.ts";
export {
  type GptOssOptions,
  GptOssRenderer,
  harmonyToolDefinition,
  type ReasoningEffort,
} from "./gpt_oss.ts";
export { type GptOssTemplateOptions, GptOssTemplateRenderer } from "./gpt_oss_template.ts";
export { parseXmlToolCall, type QwenXmlFormat, QwenXmlRenderer } from "./qwen3_5.ts";
export { KimiK2Renderer, type KimiOptions } from "./kimi_k2.ts";
export {
  GEM_TEMPLATE_NAMES,
  GEM_TEMPLATES,
  type GemTemplateName,
  GemTemplateRenderer,
} from "./gem_templates.ts";
// Types the renderers' signatures name.
export type { ContentPart, ImagePart, InputChunk } from "./types.ts";
export type { Piece } from "./pieces.ts";
export { PieceRenderer } from "./piece_renderer.ts";
export type { QwenXmlEffort } from "./qwen3_5.ts";
