/**
 * Golden conversations of the cookbook's `role_colon` renderer, written out by reading
 * tinker-cookbook's `renderers/role_colon.py` and `role_colon_test.py` (HEAD 9dfcc3a2) over
 * Qwen's vocabulary (the cookbook tests it with Qwen3.5-9B-Base's).
 */

import { assert } from "../assert.ts";
import { RoleColonRenderer } from "../../lib/renderers/role_colon.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";
import type { Message } from "../../lib/renderers/types.ts";

const tok = loadQwen3Tokenizer();
const r = new RoleColonRenderer(tok);
const EOS = tok.eosTokenId;

const CONV: Message[] = [
  { role: "system", content: "Answer briefly." },
  { role: "user", content: "2+2?" },
  { role: "assistant", content: "4" },
  { role: "user", content: "And 3+3?" },
  { role: "assistant", content: "6", toolCalls: [{ name: "check", arguments: { n: 6 } }] },
];

Deno.test("role_colon: `Role: content` turns, the prompt ends with `Assistant:`, sampling stops at \\n\\nUser:", () => {
  assert.equal(
    r.renderText(CONV.slice(0, 4), true),
    "System: Answer briefly.\n\nUser: 2+2?\n\nAssistant: 4\n\nUser: And 3+3?\n\nAssistant:",
  );
  assert.deepEqual(r.stopSequences(), ["\n\nUser:"]);
  assert.ok(getRenderer("Qwen/Qwen3-8B-Base") instanceof RoleColonRenderer);
  assert.ok(getRenderer("meta-llama/Llama-3.1-8B") instanceof RoleColonRenderer);
});

Deno.test("role_colon: the last turn trains through the `User:` that completes its stop, and parses back", () => {
  const ex = r.buildSupervisedExample(CONV);
  const prompt = r.buildGenerationPrompt(CONV.slice(0, 4));
  assert.deepEqual(ex.tokens.slice(0, prompt.length), prompt);
  const reply = ex.tokens.slice(prompt.length);
  assert.equal(
    tok.decode(reply),
    ' 6\n<tool_call>\n{"name":"check","arguments":{"n":6}}\n</tool_call>\n\nUser:',
  );
  assert.ok(ex.weights.slice(prompt.length).every((w) => w === 1));
  assert.ok(ex.weights.slice(0, prompt.length).every((w) => w === 0));
  assert.deepEqual(r.parseResponse(reply), { message: CONV[4], ok: true });
  const all = r.buildSupervisedExample(CONV, { trainOn: "all_assistant" });
  assert.equal(
    tok.decode(all.tokens.filter((_, i) => all.weights[i] === 1)),
    ' 4\n\n 6\n<tool_call>\n{"name":"check","arguments":{"n":6}}\n</tool_call>\n\nUser:',
  );
  // A conversation that ends with a user turn has nothing to complete.
  assert.ok(tok.decode(r.buildSupervisedExample(CONV.slice(0, 2)).tokens).endsWith("2+2?\n\n"));
});

Deno.test("role_colon: parsing as the cookbook's role_colon_test: end-of-text alone is clean, neither is cut off, both or two stops are malformed", () => {
  const parse = (text: string, eos = false) =>
    r.parseResponse([...tok.encode(text), ...(eos ? [EOS] : [])]);
  assert.deepEqual(parse("The answer is \\boxed{42}.", true), {
    message: { role: "assistant", content: "The answer is \\boxed{42}." },
    ok: true,
  });
  assert.deepEqual(parse("Some answer.\n\nUser:"), {
    message: { role: "assistant", content: "Some answer." },
    ok: true,
  });
  assert.deepEqual(parse("Some incomplete answer"), {
    message: { role: "assistant", content: "Some incomplete answer" },
    ok: false,
  });
  const both = parse("Some answer.\n\nUser:", true);
  assert.equal(both.message.content, "Some answer.");
  assert.match(both.error ?? "", /past "\\n\\nUser:" to end-of-text/);
  const two = parse("Answer.\n\nUser: question?\n\nUser:");
  assert.equal(two.message.content, "Answer.");
  assert.match(two.error ?? "", /2 "\\n\\nUser:" stops/);
  // The content's own whitespace comes back as it was rendered.
  for (const content of [" leading", "trailing ", "  both  ", " "]) {
    const p = parse(` ${content}\n\nUser:`);
    assert.deepEqual(p, { message: { role: "assistant", content }, ok: true }, content);
  }
});
