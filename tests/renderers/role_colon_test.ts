import { assert } from "../assert.ts";
import { RoleColonRenderer } from "../../lib/renderers/role_colon.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";
import type { Message } from "../../lib/renderers/types.ts";

const tok = loadQwen3Tokenizer();
const r = new RoleColonRenderer(tok);

const CONV: Message[] = [
  { role: "system", content: "Answer briefly." },
  { role: "user", content: "2+2?" },
  { role: "assistant", content: "4" },
  { role: "user", content: "And 3+3?" },
  { role: "assistant", content: "6", toolCalls: [{ name: "check", arguments: { n: 6 } }] },
];

Deno.test("role-colon: base models' text format, ending turns with <|endoftext|>", () => {
  assert.equal(
    r.renderText(CONV.slice(0, 4), true),
    "System: Answer briefly.\n\nUser: 2+2?\n\nAssistant: 4<|endoftext|>\n\nUser: And 3+3?\n\nAssistant:",
  );
  assert.deepEqual(r.stopSequences(), [151643]);
  assert.ok(getRenderer("Qwen/Qwen3-8B-Base") instanceof RoleColonRenderer);
  assert.ok(getRenderer("meta-llama/Llama-3.1-8B") instanceof RoleColonRenderer);
});

Deno.test("role-colon: the trained turn follows its prompt and parses back", () => {
  const ex = r.buildSupervisedExample(CONV);
  const prompt = r.buildGenerationPrompt(CONV.slice(0, 4));
  assert.deepEqual(ex.tokens.slice(0, prompt.length), prompt);
  const reply = ex.tokens.slice(prompt.length);
  assert.ok(ex.weights.slice(prompt.length).every((w) => w === 1));
  assert.ok(ex.weights.slice(0, prompt.length).every((w) => w === 0));
  assert.deepEqual(r.parseResponse(reply), { message: CONV[4], ok: true });
  const all = r.buildSupervisedExample(CONV, { trainOn: "all_assistant" });
  assert.equal(
    tok.decode(all.tokens.filter((_, i) => all.weights[i] === 1)),
    ' 4<|endoftext|> 6\n<tool_call>\n{"name":"check","arguments":{"n":6}}\n</tool_call><|endoftext|>',
  );
  assert.equal(r.parseResponse(tok.encode(" cut off")).ok, false);
});
