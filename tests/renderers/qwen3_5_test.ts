/**
 * Golden conversations of the XML-tool ChatML renderers (qwen3_5, qwen3_8_*, nemotron3*), their
 * text written out by reading tinker-cookbook's `renderers/qwen3_5.py`, `qwen3_8.py` and
 * `nemotron3.py` (HEAD 9dfcc3a2). The Qwen3.5 vocabulary is not on this machine, so they render
 * over Qwen3's (same special tokens): `getRenderer`'s `tokenizer` option.
 */

import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import { QWEN3_8_EFFORT } from "../../lib/renderers/qwen3_5.ts";
import type { Message, Renderer, ToolSpec } from "../../lib/renderers/types.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";

const tokenizer = loadQwen3Tokenizer();
const r = (name: string, model = "Qwen/Qwen3.5-4B") =>
  getRenderer(model, { tokenizer, renderer: name });
const text = (x: Renderer, m: Message[]) => x.tokenizer.decode(x.buildGenerationPrompt(m));
/** The whole example's text and the text of its weighted tokens. */
function example(x: Renderer, m: Message[]): { all: string; trained: string } {
  const { tokens, weights } = x.buildSupervisedExample(m);
  return {
    all: x.tokenizer.decode(tokens),
    trained: x.tokenizer.decode(tokens.filter((_, i) => weights[i] === 1)),
  };
}
const reply = (x: Renderer, s: string) =>
  x.parseResponse([...tokenizer.encode(s), ...(x.stopSequences() as number[]).slice(0, 1)]);

const PLAIN: Message[] = [
  { role: "system", content: "You are helpful." },
  { role: "user", content: "Hi" },
  { role: "assistant", content: "Hello!" },
  { role: "user", content: "How are you?" },
];
const PLAIN_TEXT =
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n" +
  "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n" +
  "<|im_start|>assistant\n";
const ANSWER: Message = { role: "assistant", content: "Fine, thanks." };

const THOUGHT: Message[] = [
  { role: "user", content: "2+2?" },
  { role: "assistant", thinking: "Add.", content: "4" },
  { role: "user", content: "Times 3?" },
];
const THOUGHT_ANSWER: Message = { role: "assistant", thinking: "Multiply.", content: "12" };

const WEATHER: ToolSpec = {
  name: "get_weather",
  description: "Get the weather.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const CALL_XML =
  "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
const REMINDER = "If you choose to call a function ONLY reply in the following format with NO " +
  "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n" +
  "value_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second " +
  "parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n" +
  "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner " +
  "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n" +
  "- Required parameters MUST be specified\n- You may provide optional reasoning for your " +
  "function call in natural language BEFORE the function call, but NOT after\n- If there is no " +
  "function call available, answer the question like normal with your current knowledge and do " +
  "not tell the user about function calls\n</IMPORTANT>";
const TOOLS_HEAD = "# Tools\n\nYou have access to the following functions:\n\n<tools>\n";
const TOOL_TURNS = (x: Renderer): Message[] => [
  ...x.declareTools([{ role: "system", content: "Be brief." }], [WEATHER]),
  { role: "user", content: "Weather in Paris?" },
  {
    role: "assistant",
    content: "",
    toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
  },
  { role: "tool", content: "18C" },
];

Deno.test("qwen3_5: plain multi-turn; the prompt opens the think block (closes it with thinking off)", () => {
  assert.equal(text(r("qwen3_5"), PLAIN), PLAIN_TEXT + "<think>\n");
  assert.equal(text(r("qwen3_5_disable_thinking"), PLAIN), PLAIN_TEXT + "<think>\n\n</think>\n\n");
  // The produced turn's empty block: the prompt wrote "<think>\n", the model the rest.
  assert.deepEqual(example(r("qwen3_5"), [...PLAIN, ANSWER]), {
    all: PLAIN_TEXT + "<think>\n\n</think>\n\nFine, thanks.<|im_end|>",
    trained: "\n</think>\n\nFine, thanks.<|im_end|>",
  });
  assert.deepEqual(example(r("qwen3_5_disable_thinking"), [...PLAIN, ANSWER]), {
    all: PLAIN_TEXT + "<think>\n\n</think>\n\nFine, thanks.<|im_end|>",
    trained: "Fine, thanks.<|im_end|>",
  });
});

Deno.test("qwen3_5: earlier reasoning is dropped, the last turn's trained after the opened block", () => {
  const prompt = "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n" +
    "<|im_start|>user\nTimes 3?<|im_end|>\n<|im_start|>assistant\n<think>\n";
  assert.equal(text(r("qwen3_5"), THOUGHT), prompt);
  assert.deepEqual(example(r("qwen3_5"), [...THOUGHT, THOUGHT_ANSWER]), {
    all: prompt + "Multiply.\n</think>\n\n12<|im_end|>",
    trained: "Multiply.\n</think>\n\n12<|im_end|>",
  });
  assert.throws(
    () => r("qwen3_5_disable_thinking").buildSupervisedExample([...THOUGHT, THOUGHT_ANSWER]),
    /thinking off: the last turn has reasoning/,
  );
});

Deno.test("qwen3_8: the effort sentence in the system turn, reasoning kept in history", () => {
  const history = "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nAdd.\n" +
    "</think>\n\n4<|im_end|>\n<|im_start|>user\nTimes 3?<|im_end|>\n<|im_start|>assistant\n";
  const m = "Qwen/Qwen3.8-27B";
  assert.equal(
    text(r("qwen3_8_xhigh_reasoning", m), THOUGHT),
    `<|im_start|>system\n${QWEN3_8_EFFORT.xhigh}<|im_end|>\n${history}<think>\n`,
  );
  assert.equal(
    text(r("qwen3_8_low_reasoning", m), [{ role: "system", content: "Be brief." }, ...THOUGHT]),
    `<|im_start|>system\n${QWEN3_8_EFFORT.low}\n\nBe brief.<|im_end|>\n${history}<think>\n`,
  );
  assert.equal(text(r("qwen3_8_medium_reasoning", m), THOUGHT), `${history}<think>\n`);
  // Thinking off: no sentence, an empty system message renders nothing, and history that did
  // not reason still gets its empty block.
  assert.equal(
    text(r("qwen3_8_disable_thinking", m), [{ role: "system", content: "" }, ...PLAIN.slice(1)]),
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!" +
      "<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n<|im_start|>assistant\n" +
      "<think>\n\n</think>\n\n",
  );
});

Deno.test("nemotron3: an empty system turn, earlier reasoning collapsed, one newline after </think>", () => {
  const m = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16";
  const head = "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n" +
    "<|im_start|>assistant\n";
  const tail = "<|im_end|>\n<|im_start|>user\nTimes 3?<|im_end|>\n<|im_start|>assistant\n";
  assert.equal(text(r("nemotron3", m), THOUGHT), `${head}<think></think>\n4${tail}<think>\n`);
  assert.equal(
    text(r("nemotron3_disable_thinking", m), THOUGHT),
    `${head}<think></think>\n4${tail}<think></think>`,
  );
  assert.equal(
    text(r("nemotron3_preserve_thinking", m), THOUGHT),
    `${head}<think>\nAdd.\n</think>\n4${tail}<think>\n`,
  );
  assert.deepEqual(example(r("nemotron3", m), [...THOUGHT, THOUGHT_ANSWER]), {
    all: `${head}<think></think>\n4${tail}<think>\nMultiply.\n</think>\n12<|im_end|>`,
    trained: "Multiply.\n</think>\n12<|im_end|>",
  });
  // A turn that did not reason writes <think></think> where the prompt opened <think>\n (the
  // cookbook's #860): the example cannot follow its prompt, and trains the turn's output.
  assert.deepEqual(
    example(r("nemotron3", m), [...PLAIN, ANSWER]).trained,
    "Fine, thanks.<|im_end|>",
  );
  assert.ok(
    text(r("nemotron3_low_thinking", m), THOUGHT).includes(
      "Times 3?\n\n{reasoning effort: low}<|im_end|>",
    ),
  );
});

Deno.test("nemotron3_ultra: no separators around </think>", () => {
  const m = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16";
  const ultra = text(r("nemotron3_ultra", m), THOUGHT);
  assert.ok(ultra.includes("<|im_start|>assistant\n<think></think>4<|im_end|>"), ultra);
  assert.ok(
    text(r("nemotron3_ultra_preserve_thinking", m), THOUGHT).includes("<think>\nAdd.</think>4"),
  );
  assert.ok(
    text(r("nemotron3_ultra_medium_thinking", m), THOUGHT).includes(
      "Times 3?\n\n{reasoning effort: efficient}",
    ),
  );
  assert.deepEqual(reply(r("nemotron3_ultra", m), "Multiply.</think>12").message, {
    role: "assistant",
    thinking: "Multiply.",
    content: "12",
  });
});

Deno.test("qwen3_5: a declared tool, an XML call and its result", () => {
  const x = r("qwen3_5");
  const line = '{"name": "get_weather", "description": "Get the weather.", "parameters": ' +
    '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}';
  assert.equal(
    text(x, TOOL_TURNS(x)),
    `<|im_start|>system\n${TOOLS_HEAD}${line}\n</tools>\n\n${REMINDER}\n\nBe brief.<|im_end|>\n` +
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n" +
      `<think>\n\n</think>\n\n${CALL_XML}<|im_end|>\n<|im_start|>user\n<tool_response>\n18C\n` +
      "</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n",
  );
  // Two results in a row share one user turn.
  const two = text(x, [...TOOL_TURNS(x), { role: "tool", content: "19C" }]);
  assert.ok(
    two.endsWith(
      "<tool_response>\n18C\n</tool_response>\n<tool_response>\n19C\n" +
        "</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n",
    ),
    two,
  );
});

Deno.test("nemotron3: tools declared as XML after the system prompt; calls end with a newline", () => {
  const x = r("nemotron3", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16");
  const decl =
    "<function>\n<name>get_weather</name>\n<description>Get the weather.</description>\n" +
    "<parameters>\n<parameter>\n<name>city</name>\n<type>string</type>\n</parameter>\n" +
    '<required>["city"]</required>\n</parameters>\n</function>';
  assert.equal(
    text(x, TOOL_TURNS(x)),
    `<|im_start|>system\nBe brief.\n\n${TOOLS_HEAD}${decl}\n</tools>\n\n${REMINDER}<|im_end|>\n` +
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think></think>\n" +
      `${CALL_XML}\n<|im_end|>\n<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n` +
      "<|im_end|>\n<|im_start|>assistant\n<think>\n",
  );
});

Deno.test("XML tool calls: parsed, values as JSON where they are, malformed replies reported", () => {
  const x = r("qwen3_5");
  assert.deepEqual(
    reply(x, `Let me check.\n\n${CALL_XML}`),
    {
      message: {
        role: "assistant",
        content: "Let me check.",
        toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
      },
      ok: true,
    },
  );
  assert.deepEqual(
    reply(
      x,
      "Hot.\n</think>\n\n<tool_call>\n<function=f>\n<parameter=n>\n3\n</parameter>\n" +
        '<parameter=tags>\n["a"]\n</parameter>\n</function>\n</tool_call>',
    ).message,
    {
      role: "assistant",
      thinking: "Hot.",
      content: "",
      toolCalls: [{ name: "f", arguments: { n: 3, tags: ["a"] } }],
    },
  );
  const bad = reply(
    x,
    "<tool_call>\n<function=get_weather>\ncity=Paris\n</function>\n</tool_call>",
  );
  assert.match(bad.error ?? "", /unexpected text after the parameters of <function=get_weather>/);
  assert.equal(bad.message.toolCalls, undefined);
  assert.match(reply(x, "<tool_call>\n<function=f>\n").error ?? "", /unterminated <tool_call>/);
  assert.match(reply(x, '<tool_call>\n{"name": "f"}\n</tool_call>').error ?? "", /malformed XML/);
  assert.match(reply(x, "done</tool_call>").error ?? "", /without its <tool_call>/);
  const cut = x.parseResponse(tokenizer.encode("I think"));
  assert.equal(cut.ok, false);
});

Deno.test("XML tool calls: what a renderer writes parses back to the same call", () => {
  const call = { name: "set", arguments: { on: true, note: "two\nlines", n: 2 } };
  for (const [name, on] of [["qwen3_5", "True"], ["qwen3_8_medium_reasoning", "true"]]) {
    const x = r(name);
    const turn: Message = { role: "assistant", content: "", toolCalls: [call] };
    const { all } = example(x, [{ role: "user", content: "Go" }, turn]);
    assert.ok(all.includes(`<parameter=on>\n${on}\n</parameter>`), all);
    const sampled = all.slice(all.lastIndexOf("<tool_call>"));
    const parsed = reply(x, sampled).message.toolCalls?.[0];
    // Qwen3.5's template writes Python's True, which comes back as text.
    assert.deepEqual(parsed?.arguments, { ...call.arguments, on: on === "true" ? true : "True" });
  }
});

Deno.test("qwen3_8: a tool-call turn keeps its reasoning in history; the call, its result, the reply trained", () => {
  const x = r("qwen3_8_medium_reasoning", "Qwen/Qwen3.8-27B");
  const [system, user, , result] = TOOL_TURNS(x);
  const call: Message = {
    role: "assistant",
    thinking: "Look it up.",
    content: "",
    toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
  };
  const turns = [system, user, call, result];
  const line = '{"name": "get_weather", "description": "Get the weather.", "parameters": ' +
    '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}';
  const prompt = `<|im_start|>system\n${TOOLS_HEAD}${line}\n</tools>\n\n${REMINDER}\n\nBe brief.` +
    "<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n" +
    `<think>\nLook it up.\n</think>\n\n${CALL_XML}<|im_end|>\n<|im_start|>user\n<tool_response>\n` +
    "18C\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n";
  assert.equal(text(x, turns), prompt);
  assert.deepEqual(
    example(x, [...turns, { role: "assistant", thinking: "Mild.", content: "18C." }]),
    {
      all: prompt + "Mild.\n</think>\n\n18C.<|im_end|>",
      trained: "Mild.\n</think>\n\n18C.<|im_end|>",
    },
  );
  assert.deepEqual(reply(x, `Look it up.\n</think>\n\n${CALL_XML}`), {
    message: {
      role: "assistant",
      thinking: "Look it up.",
      content: "",
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
    },
    ok: true,
  });
});

Deno.test("nemotron3_ultra: a reasoning tool-call turn: no separators around </think>, one newline before and after each call", () => {
  const x = r("nemotron3_ultra", "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16");
  const [system, user, , result] = TOOL_TURNS(x);
  const call: Message = {
    role: "assistant",
    thinking: "Look.",
    content: "Checking.",
    toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
  };
  const decl =
    "<function>\n<name>get_weather</name>\n<description>Get the weather.</description>\n" +
    "<parameters>\n<parameter>\n<name>city</name>\n<type>string</type>\n</parameter>\n" +
    '<required>["city"]</required>\n</parameters>\n</function>';
  assert.equal(
    text(x, [system, user, call, result]),
    `<|im_start|>system\nBe brief.\n\n${TOOLS_HEAD}${decl}\n</tools>\n\n${REMINDER}<|im_end|>\n` +
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\nLook.</think>" +
      `Checking.\n${CALL_XML}\n<|im_end|>\n<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n` +
      "<|im_end|>\n<|im_start|>assistant\n<think>\n",
  );
});
