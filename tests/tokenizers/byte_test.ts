import { assert } from "../assert.ts";
import { BYTE_VOCAB_SIZE, ByteTokenizer } from "../../lib/tokenizers/byte.ts";

const tok = new ByteTokenizer();

Deno.test("ByteTokenizer: round-trips text with unicode and special tokens", () => {
  const text = "<|im_start|>user\nGuess: 42 — ok? 🎲<|im_end|>\n";
  const ids = tok.encode(text);
  assert.equal(ids[0], tok.specialId("<|im_start|>"));
  assert.equal(ids.at(-2), tok.eosTokenId);
  assert.ok(ids.every((i) => i >= 0 && i < BYTE_VOCAB_SIZE));
  assert.equal(tok.decode(ids), text);
});

Deno.test("ByteTokenizer: allowSpecial=false keeps special strings as bytes", () => {
  const ids = tok.encode("<|im_end|>", { allowSpecial: false });
  assert.equal(ids.length, "<|im_end|>".length);
  assert.ok(ids.every((i) => i < 256));
});

Deno.test("ByteTokenizer: ids beyond the vocabulary are dropped on decode", () => {
  assert.equal(tok.decode([104, 105, 9999, 33]), "hi!");
});
