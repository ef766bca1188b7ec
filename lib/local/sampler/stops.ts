/**
 * Stop conditions of a continuation: single stop tokens and multi-token stop sequences
 * (stop strings tokenized with the model's tokenizer).
 *
 * @module
 */

/** Decides whether a growing continuation has just completed a stop. */
export class StopMatcher {
  readonly #tokens: Set<number>;
  readonly #sequences: readonly number[][];

  constructor(stopTokens: readonly number[], stopSequences: readonly number[][]) {
    this.#tokens = new Set(stopTokens);
    this.#sequences = stopSequences;
  }

  /**
   * Whether `generated` ends with a stop token or a complete stop sequence. Only generated
   * tokens count (a stop sequence may not start inside the prompt), and it is checked after
   * every token so the first completed stop wins.
   */
  endsWithStop(generated: readonly number[]): boolean {
    const n = generated.length;
    if (n === 0) return false;
    if (this.#tokens.has(generated[n - 1])) return true;
    return this.#sequences.some((seq) => endsWith(generated, seq));
  }
}

function endsWith(xs: readonly number[], suffix: readonly number[]): boolean {
  if (suffix.length > xs.length) return false;
  const off = xs.length - suffix.length;
  for (let i = 0; i < suffix.length; i++) if (xs[off + i] !== suffix[i]) return false;
  return true;
}
