/**
 * The byte-level tokenizer of the local models: ids 0–255 are UTF-8 bytes, followed by a few
 * special tokens for the chat format. Byte-level keeps the local models tiny (vocab 264) and
 * needs no tokenizer files, while any text still round-trips exactly.
 *
 * @module
 */

import type { Tokenizer } from "./types.ts";

/** Special tokens, in id order after the 256 byte ids. */
export const BYTE_SPECIAL_TOKENS = [
  "<|endoftext|>",
  "<|im_start|>",
  "<|im_end|>",
  "<think>",
  "</think>",
  "<tool_call>",
  "</tool_call>",
  "<|reserved|>",
] as const;

/** A special token of the byte tokenizer. */
export type ByteSpecialToken = typeof BYTE_SPECIAL_TOKENS[number];

/** Vocabulary size of the byte tokenizer: 256 bytes + the special tokens. */
export const BYTE_VOCAB_SIZE = 256 + BYTE_SPECIAL_TOKENS.length;

const SPECIAL_ID: ReadonlyMap<string, number> = new Map<string, number>(
  BYTE_SPECIAL_TOKENS.map((t, i) => [t, 256 + i]),
);
const SPECIAL_PATTERN = new RegExp(
  BYTE_SPECIAL_TOKENS.map((t) => t.replace(/[|<>/]/g, (c) => `\\${c}`)).join("|"),
  "g",
);

/**
 * Byte-level tokenizer with chat special tokens.
 *
 * @example
 * const tok = new ByteTokenizer();
 * const ids = tok.encode("<|im_start|>user\nhi<|im_end|>");
 * tok.decode(ids); // the same text
 */
export class ByteTokenizer implements Tokenizer {
  /** Identifier reported by the backend's get_info (`model_data.tokenizer_id`). */
  readonly id: string = "tinkerbench/byte";
  /** 256 bytes and the special tokens ({@link BYTE_VOCAB_SIZE}). */
  readonly vocabSize: number = BYTE_VOCAB_SIZE;
  /** `<|im_end|>`, which ends a turn. */
  readonly eosTokenId: number = SPECIAL_ID.get("<|im_end|>")!;
  /** `<|endoftext|>`. */
  readonly padTokenId: number = SPECIAL_ID.get("<|endoftext|>")!;
  /** The special tokens and their ids (256 onwards). */
  readonly specialTokens: ReadonlyMap<string, number> = SPECIAL_ID;
  #encoder = new TextEncoder();
  #decoder = new TextDecoder("utf-8", { fatal: false });

  /** Id of a special token. */
  specialId(token: ByteSpecialToken): number {
    return SPECIAL_ID.get(token)!;
  }

  /** Encodes text; special token strings become their ids unless `allowSpecial` is false. */
  encode(text: string, { allowSpecial = true }: { allowSpecial?: boolean } = {}): number[] {
    if (!allowSpecial) return [...this.#encoder.encode(text)];
    const ids: number[] = [];
    let last = 0;
    for (const m of text.matchAll(SPECIAL_PATTERN)) {
      ids.push(...this.#encoder.encode(text.slice(last, m.index)));
      ids.push(SPECIAL_ID.get(m[0])!);
      last = m.index! + m[0].length;
    }
    ids.push(...this.#encoder.encode(text.slice(last)));
    return ids;
  }

  /** Decodes ids to text; invalid UTF-8 becomes U+FFFD, ids beyond the vocabulary are dropped. */
  decode(ids: ArrayLike<number>): string {
    let out = "";
    let bytes: number[] = [];
    const flush = () => {
      if (bytes.length) out += this.#decoder.decode(new Uint8Array(bytes));
      bytes = [];
    };
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (id >= 0 && id < 256) bytes.push(id);
      else if (id >= 256 && id < BYTE_VOCAB_SIZE) {
        flush();
        out += BYTE_SPECIAL_TOKENS[id - 256];
      }
    }
    flush();
    return out;
  }
}
