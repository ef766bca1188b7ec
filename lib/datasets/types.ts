/**
 * The nouns of supervised datasets.
 *
 * @module
 */

/** One supervised training example as text: the completion is trained on, the prompt is not. */
export interface PromptCompletion {
  /** The prompt text. */
  prompt: string;
  /** The completion the model should learn to write after it. */
  completion: string;
}
