/**
 * Golden conversations of the cookbook's Kimi K2.5/K2.6 renderers (`kimi_k25`, `kimi_k26`,
 * `_disable_thinking`, `kimi_k26_preserve_thinking`), their text written out by reading
 * tinker-cookbook's `renderers/kimi_k25.py` and `kimi_k26.py` (HEAD 9dfcc3a2). Kimi's vocabulary
 * is a tiktoken model, not loadable here: a word-level stand-in holds Kimi's special tokens
 * (`getRenderer`'s `tokenizer` option).
 */

import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { Message, Renderer, ToolSpec } from "../../lib/renderers/types.ts";
import { kimiToolsTypeScript } from "../../lib/renderers/kimi_tools.ts";
import { HfTokenizer } from "../../lib/tokenizers/hf.ts";
import { buildWordLevelTokenizer } from "../../lib/tokenizers/word_level.ts";

const SPECIALS = [
  "<|im_end|>",
  "<|im_user|>",
  "<|im_assistant|>",
  "<|im_system|>",
  "<|im_middle|>",
  "<|tool_calls_section_begin|>",
  "<|tool_calls_section_end|>",
  "<|tool_call_begin|>",
  "<|tool_call_argument_begin|>",
  "<|tool_call_end|>",
  "<think>",
  "</think>",
];
const tokenizer = new HfTokenizer(
  "kimi-standin",
  buildWordLevelTokenizer(["You are Kimi, an AI assistant created by Moonshot AI."], {
    specialTokens: SPECIALS,
    vocabSize: 400,
  }),
  { eos_token: "<|im_end|>" },
);
const r = (name: string) => getRenderer("moonshotai/Kimi-K2.6", { renderer: name, tokenizer });
const text = (x: Renderer, m: Message[]) => x.tokenizer.decode(x.buildGenerationPrompt(m));
function example(x: Renderer, m: Message[]): { all: string; trained: string } {
  const { tokens, weights } = x.buildSupervisedExample(m);
  return {
    all: x.tokenizer.decode(tokens),
    trained: x.tokenizer.decode(tokens.filter((_, i) => weights[i] === 1)),
  };
}

const SYSTEM =
  "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>";
const THOUGHT: Message[] = [
  { role: "user", content: "2+2?" },
  { role: "assistant", thinking: "Add.", content: "4" },
  { role: "user", content: "Times 3?" },
];
const HISTORY = (think: string) =>
  `${SYSTEM}<|im_user|>user<|im_middle|>2+2?<|im_end|><|im_assistant|>assistant<|im_middle|>` +
  `<think>${think}</think>4<|im_end|><|im_user|>user<|im_middle|>Times 3?<|im_end|>` +
  "<|im_assistant|>assistant<|im_middle|>";

Deno.test("kimi_k26: the prompt opens the think block (closes it with thinking off); history's reasoning emptied", () => {
  assert.equal(r("kimi_k26").constructor.name, "KimiK2Renderer");
  assert.equal(text(r("kimi_k26"), THOUGHT), HISTORY("") + "<think>");
  assert.equal(text(r("kimi_k25"), THOUGHT), HISTORY("") + "<think>");
  assert.equal(text(r("kimi_k26_disable_thinking"), THOUGHT), HISTORY("") + "<think></think>");
  assert.equal(text(r("kimi_k26_preserve_thinking"), THOUGHT), HISTORY("Add.") + "<think>");
});

Deno.test("kimi_k26: the produced turn trains after the prompt's prefill", () => {
  const last: Message = { role: "assistant", thinking: "Multiply.", content: "12" };
  assert.deepEqual(example(r("kimi_k26"), [...THOUGHT, last]), {
    all: HISTORY("") + "<think>Multiply.</think>12<|im_end|>",
    trained: "Multiply.</think>12<|im_end|>",
  });
  assert.deepEqual(
    example(r("kimi_k26_disable_thinking"), [...THOUGHT, { role: "assistant", content: "12" }]),
    { all: HISTORY("") + "<think></think>12<|im_end|>", trained: "12<|im_end|>" },
  );
  assert.throws(
    () => r("kimi_k26_disable_thinking").buildSupervisedExample([...THOUGHT, last]),
    /thinking off: this turn has reasoning/,
  );
  const parsed = r("kimi_k26").parseResponse(tokenizer.encode("Multiply.</think>12<|im_end|>"));
  assert.deepEqual(parsed, {
    message: { role: "assistant", content: "12", thinking: "Multiply." },
    ok: true,
  });
});

// The cookbook's kimi_k25_test `get_tool_spec`, and two schemas that use every rule of the
// TypeScript-style declaration (kimi_k2_5_tool_declaration_ts.py), written out by hand.
const WEATHER: ToolSpec = {
  name: "get_weather",
  description: "Get the current weather for a location",
  parameters: {
    type: "object",
    properties: {
      location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"], description: "Temperature unit" },
    },
    required: ["location"],
  },
};
const WEATHER_TS = "// Get the current weather for a location\n" +
  "type get_weather = (_: {\n" +
  "  // The city and state, e.g. San Francisco, CA\n" +
  "  location: string,\n" +
  "  // Temperature unit\n" +
  '  unit?: "celsius" | "fahrenheit"\n' +
  "}) => any;";

Deno.test("kimi_k26: tools are declared in TypeScript style in a tool_declare turn before the system turn", () => {
  for (const name of ["kimi_k26", "kimi_k25", "kimi_k26_disable_thinking"]) {
    const x = r(name);
    const prompt = text(x, x.declareTools([{ role: "user", content: "Weather?" }], [WEATHER]));
    assert.equal(
      prompt,
      "<|im_system|>tool_declare<|im_middle|># Tools\n\n## functions\nnamespace functions {\n" +
        `${WEATHER_TS}\n}\n<|im_end|>${SYSTEM}<|im_user|>user<|im_middle|>Weather?<|im_end|>` +
        `<|im_assistant|>assistant<|im_middle|>${
          name.includes("disable") ? "<think></think>" : "<think>"
        }`,
    );
  }
  // A system prompt of the caller's replaces the default one.
  const own = r("kimi_k26").declareTools([{ role: "system", content: "Be brief." }], [WEATHER]);
  assert.ok(
    text(r("kimi_k26"), own).includes(
      "}\n<|im_end|><|im_system|>system<|im_middle|>Be brief.<|im_end|>",
    ),
  );
});

Deno.test("kimi tool declarations: constraints, defaults, arrays, unions, $defs, additionalProperties and a self-reference", () => {
  const search: ToolSpec = {
    name: "search",
    description: "Search.\nTwo lines.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "Text", maxLength: 100, minLength: 1 },
        limit: { type: "integer", minimum: 1, default: 10 },
        tags: { type: "array", items: { type: "string", description: "A tag" }, maxItems: 5 },
        filter: { anyOf: [{ type: "string" }, { type: "null" }] },
        mode: { type: ["string", "null"] },
        opts: {
          type: "object",
          properties: { deep: { type: "boolean" } },
          additionalProperties: false,
        },
        place: { $ref: "#/$defs/Place" },
      },
      required: ["query", "place"],
      $defs: {
        Place: {
          type: "object",
          description: "A place",
          properties: { name: { type: "string" } },
          required: ["name"],
        },
      },
    },
  };
  const tree: ToolSpec = {
    name: "tree",
    description: "",
    parameters: {
      type: "object",
      properties: {
        children: { type: "array", items: { $ref: "#" } },
        label: { type: "string" },
      },
      additionalProperties: true,
    },
  };
  assert.equal(
    kimiToolsTypeScript([search, tree]),
    "# Tools\n\n## functions\nnamespace functions {\n" +
      "// A place\ninterface Place {\n  name: string\n}\n" +
      "// Search.\n// Two lines.\n" +
      "type search = (_: {\n" +
      "  place: Place,\n" +
      "  // Text\n  // maxLength: 100, minLength: 1\n  query: string,\n" +
      "  filter?: string | null,\n" +
      "  // minimum: 1\n  // Default: 10\n  limit?: number,\n" +
      "  mode?: string | null,\n" +
      "  opts?: {\n    deep?: boolean,\n    [k: string]: never\n  },\n" +
      "  // maxItems: 5\n  tags?: Array<\n    // A tag\n    string\n  >\n" +
      "}) => any;\n" +
      "interface parameters {\n  children?: Array<parameters>,\n  label?: string\n}\n" +
      "type tree = (_: parameters) => any;\n}\n",
  );
  assert.equal(kimiToolsTypeScript([]), "");
  assert.throws(
    () =>
      kimiToolsTypeScript([{
        ...tree,
        parameters: { type: "object", properties: { x: { $ref: "#/$defs/No" } } },
      }]),
    /unsupported reference #\/\$defs\/No/,
  );
});

Deno.test("kimi_k26: a tool call and its result, rendered and parsed (malformed arguments are an error)", () => {
  const x = r("kimi_k26");
  const call: Message = {
    role: "assistant",
    thinking: "Look it up.",
    content: "",
    toolCalls: [{ name: "get_weather", arguments: { location: "NYC" } }],
  };
  const messages = [
    ...x.declareTools([{ role: "user", content: "Weather?" }], [WEATHER]),
    call,
    { role: "tool" as const, content: "72F" },
  ];
  const prompt = text(x, messages);
  assert.ok(
    prompt.endsWith(
      "<|im_assistant|>assistant<|im_middle|><think>Look it up.</think><|tool_calls_section_begin|>" +
        '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"location": "NYC"}' +
        "<|tool_call_end|><|tool_calls_section_end|><|im_end|><|im_system|>tool<|im_middle|>" +
        "## Return of functions.get_weather:0\n72F<|im_end|><|im_assistant|>assistant<|im_middle|><think>",
    ),
    prompt,
  );
  const sampled = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0" +
    '<|tool_call_argument_begin|>{"location": "NYC"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>';
  assert.deepEqual(x.parseResponse(tokenizer.encode(`Look it up.</think>${sampled}`)), {
    message: {
      role: "assistant",
      content: "",
      thinking: "Look it up.",
      toolCalls: [{
        name: "get_weather",
        arguments: { location: "NYC" },
        id: "functions.get_weather:0",
      }],
    },
    ok: true,
  });
  const bad = x.parseResponse(tokenizer.encode(`</think>${sampled.replace('"NYC"}', '"NYC"')}`));
  assert.match(bad.error ?? "", /malformed tool call/);
});

Deno.test("kimi_k26: calls without ids are numbered within their message, as the cookbook does", () => {
  const call = (city: string): Message => ({
    role: "assistant",
    content: "",
    toolCalls: [{ name: "get_weather", arguments: { location: city } }],
  });
  const prompt = text(r("kimi_k26"), [
    { role: "user", content: "Two cities?" },
    call("NYC"),
    { role: "tool", content: "72F" },
    call("LA"),
    { role: "tool", content: "80F" },
  ]);
  assert.equal(prompt.split("<|tool_call_begin|>functions.get_weather:0").length, 3, prompt);
  assert.equal(prompt.split("## Return of functions.get_weather:0\n").length, 3, prompt);
  assert.ok(!prompt.includes(":1"), prompt);
});

Deno.test("kimi_k2: tools declared as the cookbook's kimi_k2 writes them (compact JSON, keys sorted)", () => {
  const x = r("kimi_k2");
  assert.equal(
    text(x, x.declareTools([{ role: "user", content: "Weather?" }], [WEATHER])),
    "<|im_system|>tool_declare<|im_middle|>" +
      '[{"function":{"description":"Get the current weather for a location","name":"get_weather",' +
      '"parameters":{"properties":{"location":{"description":"The city and state, e.g. San ' +
      'Francisco, CA","type":"string"},"unit":{"description":"Temperature unit","enum":' +
      '["celsius","fahrenheit"],"type":"string"}},"required":["location"],"type":"object"}},' +
      `"type":"function"}]<|im_end|>${SYSTEM}<|im_user|>user<|im_middle|>Weather?<|im_end|>` +
      "<|im_assistant|>assistant<|im_middle|>",
  );
});
