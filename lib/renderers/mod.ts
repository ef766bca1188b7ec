/**
 * Renderers: chat formats as token ids (ChatML, Qwen3), tool declarations in the prompt, and
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
export { toolsSection, withTools } from "./tools.ts";
export { ChatMLRenderer } from "./chatml.ts";
export { Qwen3Renderer, type Qwen3RendererOptions } from "./qwen3.ts";
export { getRenderer } from "./registry.ts";
