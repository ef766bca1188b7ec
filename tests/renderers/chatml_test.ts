import { assert } from "../assert.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Message } from "../../lib/renderers/types.ts";

const r = new ChatMLRenderer();
const tok = r.tokenizer;

const CHAT: Message[] = [
  { role: "system", content: "Play." },
  { role: "user", content: "Guess 1-10." },
];

Deno.test("ChatML renderer: generation prompt is the ChatML text over byte specials", () => {
  const text = "<|im_start|>system\nPlay.<|im_end|>\n<|im_start|>user\nGuess 1-10.<|im_end|>\n" +
    "<|im_start|>assistant\n";
  const ids = r.buildGenerationPrompt(CHAT);
  assert.deepEqual(ids, tok.encode(text));
  assert.deepEqual(ids, r.generationPrompt(CHAT));
  assert.equal(ids[0], tok.specialId("<|im_start|>"));
  assert.equal(ids.filter((i) => i === tok.eosTokenId).length, 2);
  assert.deepEqual(r.stopSequences(), [tok.eosTokenId]);
});

Deno.test("ChatML renderer: supervised weights cover exactly the trained assistant turns", () => {
  const answer: Message = {
    role: "assistant",
    content: "5",
    thinking: "middle",
    toolCalls: [{ name: "guess", arguments: { n: 5 } }],
  };
  const messages: Message[] = [
    ...CHAT,
    { role: "assistant", content: "3" },
    { role: "user", content: "higher" },
    answer,
  ];
  const { tokens, weights } = r.buildSupervisedExample(messages);
  assert.equal(tokens.length, weights.length);
  // Prompt tokens (weight 0) are the generation prompt of the history.
  const first = weights.indexOf(1);
  assert.deepEqual(tokens.slice(0, first), r.buildGenerationPrompt(messages.slice(0, -1)));
  assert.ok(weights.slice(first).every((w) => w === 1));
  assert.equal(
    tok.decode(tokens.slice(first)),
    '<think>\nmiddle\n</think>\n\n5\n<tool_call>\n{"name": "guess", "arguments": {"n": 5}}\n' +
      "</tool_call><|im_end|>",
  );
  const all = r.buildSupervisedExample(messages, { trainOn: "all_assistant" });
  assert.deepEqual(all.tokens, tokens);
  const trained = tok.decode(all.tokens.filter((_, i) => all.weights[i] === 1));
  assert.ok(trained.startsWith("3<|im_end|><think>"));
  assert.equal(all.weights.filter((w) => w === 1).length, 2 + (tokens.length - first));
});

Deno.test("ChatML renderer: parseResponse round-trips content, thinking and tool calls", () => {
  const messages: Message[] = [
    { role: "assistant", content: "plain 🎲" },
    { role: "assistant", content: "4", thinking: "two plus two" },
    {
      role: "assistant",
      content: "",
      thinking: "call",
      toolCalls: [{ name: "f", arguments: { a: [1, "x"] } }, { name: "g", arguments: {} }],
    },
  ];
  for (const m of messages) {
    const { tokens, weights } = r.buildSupervisedExample([...CHAT, m]);
    const parsed = r.parseResponse(tokens.filter((_, i) => weights[i] === 1));
    assert.equal(parsed.ok, true);
    assert.deepEqual(parsed.message, m);
  }
});

Deno.test("ChatML renderer: parseResponse flags truncation", () => {
  const body = tok.encode("<think>\nhm\n</think>\n\nanswer");
  const cut = r.parseResponse(body);
  assert.equal(cut.ok, false);
  assert.deepEqual(cut.message, { role: "assistant", content: "answer", thinking: "hm" });
  assert.equal(r.parseResponse([...body, tok.eosTokenId]).ok, true);
});
