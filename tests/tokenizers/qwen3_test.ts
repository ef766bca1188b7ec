import { assert } from "../assert.ts";
import { loadQwen3Tokenizer, QWEN3_IDS } from "../../lib/tokenizers/qwen3.ts";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";
import { ByteTokenizer } from "../../lib/tokenizers/byte.ts";
import type { Tokenizer } from "../../lib/tokenizers/types.ts";

const tok = loadQwen3Tokenizer();

// Expected ids come from Hugging Face transformers output published in public repositories:
// - alibaba/rtp-llm, maga_transformer/test/tokenizer_test/qwen2_tokenizer_test.py:
//   Qwen2Tokenizer.encode("<|im_start|>hello<|im_end|>") == [151644, 14990, 151645].
// - A public HiDream C tokenizer test (frozen oracle: transformers AutoTokenizer +
//   apply_chat_template, encode(add_special_tokens=False)) for the "teapot" prompt below.
// Qwen2 / Qwen2.5 / Qwen3 share this byte-level BPE vocabulary (151643 regular tokens).
const TEAPOT =
  "A red ceramic teapot on a wooden table, next to a yellow lemon and a blue ceramic cup. " +
  "Soft natural window light from the left, realistic photography, shallow depth of field, " +
  "clean background, high detail.";
const TEAPOT_IDS = [
  32,
  2518,
  42024,
  1013,
  89901,
  389,
  264,
  22360,
  1965,
  11,
  1790,
  311,
  264,
  13753,
  29464,
  323,
  264,
  6303,
  42024,
  10525,
  13,
  24079,
  5810,
  3241,
  3100,
  504,
  279,
  2115,
  11,
  25489,
  23751,
  11,
  25600,
  7990,
  315,
  2070,
  11,
  4240,
  4004,
  11,
  1550,
  7716,
  13,
];

Deno.test("Qwen3 tokenizer: ids equal Hugging Face output (rtp-llm fixture)", () => {
  assert.deepEqual(tok.encode("<|im_start|>hello<|im_end|>"), [151644, 14990, 151645]);
});

Deno.test("Qwen3 tokenizer: ids of a long prompt equal Hugging Face output (teapot fixture)", () => {
  assert.deepEqual(tok.encode(TEAPOT), TEAPOT_IDS);
  assert.deepEqual(
    tok.encode(`<|im_start|>user\n${TEAPOT}<|im_end|>\n<|im_start|>assistant\n`),
    [151644, 872, 198, ...TEAPOT_IDS, 151645, 198, 151644, 77091, 198],
  );
  assert.equal(tok.decode(TEAPOT_IDS), TEAPOT);
});

Deno.test("Qwen3 tokenizer: eos/pad/vocab match the reference facts", () => {
  // /work/shared/reference/local-engine-measurements.md §3: eos <|im_end|> = 151645,
  // pad <|endoftext|> = 151643, vocab 151,669.
  assert.equal(tok.eosTokenId, 151645);
  assert.equal(tok.padTokenId, 151643);
  assert.equal(tok.vocabSize, 151669);
  assert.equal(tok.specialTokens.get("<|im_end|>"), QWEN3_IDS.imEnd);
  assert.equal(tok.specialTokens.get("<|im_start|>"), QWEN3_IDS.imStart);
  assert.equal(tok.specialTokens.get("<think>"), QWEN3_IDS.think);
  assert.equal(tok.specialTokens.get("</think>"), QWEN3_IDS.thinkEnd);
  assert.equal(tok.specialTokens.get("<tool_call>"), QWEN3_IDS.toolCall);
  assert.equal(tok.specialTokens.get("</tool_call>"), QWEN3_IDS.toolCallEnd);
});

Deno.test("Qwen3 tokenizer: round-trips unicode, whitespace and special tokens", () => {
  const text = "<|im_start|>user\n  Grüße 🌧️ 你好\n\n\tx = [1, 2]<|im_end|>\n<think>\n\n</think>";
  const ids = tok.encode(text);
  assert.equal(ids[0], 151644);
  assert.equal(tok.decode(ids), text);
});

Deno.test("getTokenizer: maps model names and rejects unknown ones", () => {
  assert.equal(getTokenizer("Qwen/Qwen3-8B").eosTokenId, 151645);
  assert.equal(getTokenizer("Qwen/Qwen3-30B-A3B").id, "Qwen/Qwen3-30B-A3B");
  assert.ok(getTokenizer("local/tiny") instanceof ByteTokenizer);
  assert.throws(() => getTokenizer("Qwen2.5-7B"), /no tokenizer for model.*local\/\*/);
  assert.throws(() => getTokenizer("Qwen/Qwen2.5-7B-not-cached"), /no tokenizer files for/);
});

Deno.test("ByteTokenizer satisfies the Tokenizer interface", () => {
  const byte: Tokenizer = new ByteTokenizer();
  assert.equal(byte.specialTokens.get("<|im_end|>"), byte.eosTokenId);
  assert.equal(byte.specialTokens.get("<|endoftext|>"), byte.padTokenId);
  assert.deepEqual(byte.encode("<think>"), [byte.specialTokens.get("<think>")]);
});
