/**
 * The model table: Tinker's lineup with each model's family, renderer, context length and
 * default learning rate, and its Markdown for the README.
 *
 * @module
 */

export {
  defaultLearningRate,
  defaultRenderer,
  LOCAL_LR,
  type ModelFamily,
  type ModelInfo,
  modelInfo,
  MODELS,
  type ModelStatus,
} from "./table.ts";
export { modelsMarkdown, tokenizerSource } from "./markdown.ts";
