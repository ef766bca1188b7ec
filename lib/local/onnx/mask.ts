/**
 * The attention mask's one value, shared by the GPT graph, its rotary and windowed parts, and
 * the host's KV cache, which writes it into `key_bias` for slots a row may not see.
 *
 * @module
 */

/** The additive bias of a key slot a row must not see: exp underflows to exactly 0. */
export const MASKED = -1e9;
