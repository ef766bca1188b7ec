import { assert } from "../assert.ts";
import {
  GAMES_TOKENIZER_DIR,
  getTokenizer,
  loadGamesTokenizer,
  loadToolsTokenizer,
  TOOLS_TOKENIZER_DIR,
} from "../../lib/tokenizers/mod.ts";
import { buildGamesTokenizer, buildToolsTokenizer, tokenCounts } from "../../lib/pretrain/vocab.ts";
import type { Tokenizer } from "../../lib/tokenizers/types.ts";
import { ByteTokenizer } from "../../lib/tokenizers/byte.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getRenderer } from "../../lib/renderers/registry.ts";
import { Rng } from "../../lib/util/random.ts";

const tok = loadGamesTokenizer();

/** A random string of valid code points from every plane, biased towards ASCII and markup. */
function randomText(rng: Rng, length: number): string {
  const pieces = ["<|im_end|>", "<|im_start|>", " below", "\\boxed{", "\n", "  ", "42", " 7"];
  let s = "";
  for (let i = 0; i < length; i++) {
    const u = rng.uniform();
    if (u < 0.2) s += pieces[rng.nextU32() % pieces.length];
    else if (u < 0.6) s += String.fromCharCode(32 + (rng.nextU32() % 95));
    else {
      let cp = rng.nextU32() % 0x110000;
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd; // lone surrogates are not text
      s += String.fromCodePoint(cp);
    }
  }
  return s;
}

Deno.test("games tokenizer: round-trips random unicode text exactly", () => {
  const rng = new Rng(7);
  for (let i = 0; i < 300; i++) {
    const text = randomText(rng, 1 + (rng.nextU32() % 60));
    const ids = tok.encode(text);
    assert.ok(ids.every((id) => id >= 0 && id < tok.vocabSize), JSON.stringify(text));
    assert.equal(tok.decode(ids), text);
  }
  for (const text of ["", " ", "\u0000\t\r\n", "漢字 😀 é", "Above 3 , below 11 ."]) {
    assert.equal(tok.decode(tok.encode(text)), text);
  }
});

Deno.test("games tokenizer: a GuessTheNumber move is a handful of tokens", () => {
  const move = "Above 21, below 51. \\boxed{47}<|im_end|>";
  const ids = tok.encode(move);
  assert.deepEqual(
    ids.map((id) => tok.decode([id])),
    ["Above", " 21", ",", " below", " 51", ".", " \\boxed{", "47", "}", "<|im_end|>"],
  );
  assert.ok(new ByteTokenizer().encode(move).length >= 3 * ids.length);
});

Deno.test("games tokenizer: chat markup and every number 0-100 are single tokens", () => {
  for (const t of ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</tool_call>"]) {
    assert.equal(tok.encode(t).length, 1, t);
    assert.equal(tok.specialTokens.get(t), tok.encode(t)[0]);
  }
  for (let n = 0; n <= 100; n++) {
    assert.equal(tok.encode(String(n)).length, 1, String(n));
    assert.equal(tok.encode(` ${n}`).length, 1, ` ${n}`);
  }
  for (const w of ["assistant", "user", " higher", " lower", " turns", "Turn", "reveal"]) {
    assert.equal(tok.encode(w).length, 1, w);
  }
  assert.equal(tok.eosTokenId, tok.specialTokens.get("<|im_end|>"));
});

Deno.test("games tokenizer: local/games2 uses it, other local models keep bytes", () => {
  assert.equal(getTokenizer("local/games2").id, "tinkerbench/games");
  assert.equal(getTokenizer("local/games").id, "tinkerbench/byte");
  const r = getRenderer("local/games2");
  assert.equal(r.tokenizer.id, "tinkerbench/games");
  const prompt = r.buildGenerationPrompt([{ role: "user", content: "Guess." }]);
  assert.equal(tok.decode(prompt), "<|im_start|>user\nGuess.<|im_end|>\n<|im_start|>assistant\n");
  const reply = tok.encode("Above 0, below 11. \\boxed{5}<|im_end|>");
  const parsed = r.parseResponse(reply);
  assert.equal(parsed.ok, true);
  assert.equal(parsed.message.content, "Above 0, below 11. \\boxed{5}");
  assert.equal(new ChatMLRenderer(tok).parseResponse([tok.eosTokenId]).message.content, "");
});

Deno.test("games tokenizer: the committed tokenizer.json is what scripts/tokenizer.ts builds", async () => {
  const committed = JSON.parse(
    await Deno.readTextFile(new URL("tokenizer.json", GAMES_TOKENIZER_DIR)),
  );
  assert.deepEqual(await buildGamesTokenizer(), committed);
});

Deno.test("tokenCounts: a GuessTheNumber move is 10 games tokens against ~29 bytes", async () => {
  const envs = ["game:GuessTheNumber-v0-easy"];
  const [games] = await tokenCounts(envs, new ChatMLRenderer<Tokenizer>(tok), { episodes: 5 });
  const [bytes] = await tokenCounts(envs, new ChatMLRenderer(), { episodes: 5 });
  assert.equal(games.perMove, 10);
  assert.ok(bytes.perMove > 25, String(bytes.perMove));
  assert.ok(games.perEpisode * 3 < bytes.perEpisode, `${games.perEpisode} vs ${bytes.perEpisode}`);
  assert.ok(games.maxEpisode >= games.perEpisode);
});

Deno.test("tools tokenizer: extends the games tokenizer (same ids), tool-call markup in a few tokens, local/games2 unchanged", async () => {
  const tools = loadToolsTokenizer();
  const games = JSON.parse(await Deno.readTextFile(new URL("tokenizer.json", GAMES_TOKENIZER_DIR)));
  const ext = JSON.parse(await Deno.readTextFile(new URL("tokenizer.json", TOOLS_TOKENIZER_DIR)));
  for (const [w, id] of Object.entries(games.model.vocab)) assert.equal(ext.model.vocab[w], id, w);
  assert.ok(tools.vocabSize > tok.vocabSize);
  assert.equal(tok.vocabSize, 743); // local/games2's shipped weights are tied to these ids
  assert.equal(getTokenizer("local/games2").id, "tinkerbench/games");
  assert.equal(getTokenizer("local/tools").id, "tinkerbench/tools");
  assert.deepEqual(
    tools.encode("Above 21, below 51. \\boxed{47}<|im_end|>"),
    tok.encode("Above 21, below 51. \\boxed{47}<|im_end|>"),
  );
  const call = '<tool_call>\n{"name": "guess", "arguments": {"number": 7}}\n</tool_call>';
  assert.deepEqual(tools.encode(call).map((id) => tools.decode([id])), [
    "<tool_call>",
    "\n",
    '{"',
    "name",
    '":',
    ' "',
    "guess",
    '",',
    ' "',
    "arguments",
    '":',
    ' {"',
    "number",
    '":',
    " 7",
    "}}",
    "\n",
    "</tool_call>",
  ]);
  assert.ok(tok.encode(call).length > 2 * tools.encode(call).length);
  const rng = new Rng(11);
  for (let i = 0; i < 200; i++) {
    const text = randomText(rng, 1 + (rng.nextU32() % 60));
    assert.equal(tools.decode(tools.encode(text)), text); // byte fallback kept
  }
});

Deno.test("tools tokenizer: the committed tokenizer.json is what scripts/tokenizer.ts --tools builds", async () => {
  const committed = JSON.parse(
    await Deno.readTextFile(new URL("tokenizer.json", TOOLS_TOKENIZER_DIR)),
  );
  const games = JSON.parse(await Deno.readTextFile(new URL("tokenizer.json", GAMES_TOKENIZER_DIR)));
  assert.deepEqual(await buildToolsTokenizer(games), committed);
});
