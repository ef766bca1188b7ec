/**
 * The nouns of supervised datasets.
 *
 * @module
 */

/** One supervised training example as text: the completion is trained on, the prompt is not. */
export interface PromptCompletion {
  prompt: string;
  completion: string;
}
