/**
 * The model table: Tinker's lineup with each model's family, renderer, context length and
 * default learning rate.
 *
 * @module
 */

export {
  defaultLearningRate,
  type ModelFamily,
  type ModelInfo,
  modelInfo,
  MODELS,
} from "./table.ts";
