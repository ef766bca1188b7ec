import { assert } from "../assert.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";
import { Qwen3Renderer } from "../../lib/renderers/qwen3.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Message, ToolSpec } from "../../lib/renderers/types.ts";
import { GUESS } from "./corpus.ts";

const tok = loadQwen3Tokenizer();
const r = new Qwen3Renderer();

const HINT: ToolSpec = {
  name: "hint",
  description: "Ask for a hint (costs a turn).",
  parameters: { type: "object", properties: {} },
};

function templateWithTools(messages: Message[], tools: ToolSpec[]): string {
  return tok.applyChatTemplate(messages.map((m) => ({ role: m.role, content: m.content })), {
    addGenerationPrompt: true,
    enable_thinking: false,
    tools: tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    })),
  }) as string;
}

for (
  const [name, messages] of [
    ["with a system message", [{ role: "system", content: "Play well." }, {
      role: "user",
      content: "Find the number in 1..10.",
    }]],
    ["without a system message", [{ role: "user", content: "Find the number in 1..10." }]],
  ] as [string, Message[]][]
) {
  Deno.test(`tools: declared as Qwen3's jinja template writes them (${name})`, () => {
    const tools = [GUESS, HINT];
    assert.equal(
      r.renderText(r.declareTools(messages, tools), true),
      templateWithTools(messages, tools),
    );
  });
}

Deno.test("tools: no tools leave the messages as they are; ChatML gets the same section", () => {
  const messages: Message[] = [{ role: "user", content: "hi" }];
  assert.equal(r.declareTools(messages, []), messages);
  const chatml = new ChatMLRenderer();
  const text = chatml.tokenizer.decode(
    chatml.buildGenerationPrompt(chatml.declareTools(messages, [GUESS])),
  );
  assert.ok(text.startsWith("<|im_start|>system\n# Tools\n"));
  assert.ok(text.includes('"name": "guess"'));
});

Deno.test("tools: ChatML writes tool results as Qwen3's template does (one user turn of <tool_response> blocks)", () => {
  const messages: Message[] = [
    { role: "user", content: "Weather in Paris and Rome?" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }, {
        name: "get_weather",
        arguments: { city: "Rome" },
      }],
    },
    { role: "tool", content: '{"temp": 18}' },
    { role: "tool", content: '{"temp": 21}' },
  ];
  const chatml = new ChatMLRenderer();
  const qwen = new Qwen3Renderer({ tokenizer: tok, enableThinking: true });
  const text = chatml.tokenizer.decode(chatml.buildGenerationPrompt(messages));
  assert.equal(text, qwen.renderText(messages, true));
  assert.ok(text.includes('<|im_start|>user\n<tool_response>\n{"temp": 18}\n</tool_response>\n'));
  // Still a growing conversation: the continuation after the answer extends the prompt.
  const prompt = chatml.buildGenerationPrompt(messages.slice(0, 1));
  const answer = chatml.buildSupervisedExample(messages.slice(0, 2)).tokens.slice(prompt.length);
  assert.deepEqual(
    [...prompt, ...answer, ...chatml.continuation(messages.slice(2))],
    chatml.buildGenerationPrompt(messages),
  );
});
