import { assert } from "../assert.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";
import { Qwen3Renderer } from "../../lib/renderers/qwen3.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { Message } from "../../lib/renderers/types.ts";
import { trajectoryToDatums } from "../../lib/datums/mod.ts";

const tok = loadQwen3Tokenizer();
const r = new Qwen3Renderer(); // enableThinking: false
const rThink = new Qwen3Renderer({ enableThinking: true });

/** Messages in the shape transformers passes to the jinja template. */
function hfMessages(messages: Message[]): object[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.thinking !== undefined ? { reasoning_content: m.thinking } : {}),
    ...(m.toolCalls
      ? {
        tool_calls: m.toolCalls.map((c) => ({
          type: "function",
          function: { name: c.name, arguments: c.arguments },
        })),
      }
      : {}),
  }));
}

function template(messages: Message[], addGenerationPrompt: boolean, enableThinking: boolean) {
  return tok.applyChatTemplate(hfMessages(messages), {
    addGenerationPrompt,
    enable_thinking: enableThinking,
  });
}

const SIMPLE: Message[] = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: "What is 2 + 2?" },
];

const TOOLS: Message[] = [
  { role: "system", content: "Use tools." },
  { role: "user", content: "Weather in Paris and Oslo?" },
  {
    role: "assistant",
    content: "Let me check.",
    thinking: "Two cities, two calls.",
    toolCalls: [
      { name: "get_weather", arguments: { city: "Paris", unit: "c", days: [1, 2] } },
      { name: "get_weather", arguments: { city: "Oslo", opts: { é: true, n: null } } },
    ],
  },
  { role: "tool", content: '{"temp": 18}' },
  { role: "tool", content: '{"temp": 7}' },
  { role: "assistant", content: "", toolCalls: [{ name: "noop", arguments: {} }] },
  { role: "tool", content: "ok" },
];

const MULTI: Message[] = [
  { role: "user", content: "Pick a number." },
  { role: "assistant", content: "7", thinking: "Lucky." },
  { role: "user", content: "Another?" },
  { role: "assistant", content: "<think>\nhmm\n</think>\n\n3" },
  { role: "user", content: "Thanks.\n\nBye" },
];

Deno.test("Qwen3 template: rendering equals the reference rendering (enable_thinking false)", () => {
  // Reference: /work/shared/reference/local-engine-measurements.md §3, identical to
  // transformers' apply_chat_template(..., add_generation_prompt=True, enable_thinking=False).
  const expected = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" +
    "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n" +
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";
  assert.equal(template(SIMPLE, true, false), expected);
  assert.equal(r.renderText(SIMPLE, true), expected);
  // The closing think block is <think> "\n\n" </think> "\n\n" = 151667, 271, 151668, 271.
  assert.deepEqual(r.buildGenerationPrompt(SIMPLE).slice(-9), [
    151645,
    198,
    151644,
    77091,
    198,
    151667,
    271,
    151668,
    271,
  ]);
});

Deno.test("Qwen3 renderer: generation prompt equals the tokenized chat template", () => {
  for (const messages of [SIMPLE, TOOLS, MULTI, SIMPLE.slice(1)]) {
    for (const [renderer, thinking] of [[r, false], [rThink, true]] as const) {
      const text = template(messages, true, thinking);
      assert.equal(renderer.renderText(messages, true), text);
      assert.deepEqual(renderer.buildGenerationPrompt(messages), tok.encode(text));
    }
  }
});

Deno.test("Qwen3 renderer: full conversations render as the template does", () => {
  const convs: Message[][] = [
    [...SIMPLE, { role: "assistant", content: "4" }],
    [...SIMPLE, { role: "assistant", content: "4", thinking: "\nEasy.\n" }],
    TOOLS,
    [...MULTI, {
      role: "assistant",
      content: "Bye!",
      toolCalls: [{ name: "end", arguments: "{}" }],
    }],
  ];
  for (const messages of convs) {
    for (const [renderer, thinking] of [[r, false], [rThink, true]] as const) {
      assert.equal(renderer.renderText(messages, false), template(messages, false, thinking));
    }
  }
});

Deno.test("Qwen3 renderer: supervised weights cover exactly the last assistant turn", () => {
  const answer: Message = {
    role: "assistant",
    content: "Let me check.",
    toolCalls: [{ name: "calc", arguments: { expr: "2+2" } }],
  };
  const messages = [...SIMPLE, answer];
  const { tokens, weights } = r.buildSupervisedExample(messages);
  assert.equal(tokens.length, weights.length);
  // Same tokens as the template's text (without its final newline).
  assert.deepEqual(tokens, tok.encode(template(messages, false, false).replace(/\n$/, "")));
  // Weight-0 prefix = the generation prompt; weight-1 suffix = the answer through <|im_end|>.
  const first = weights.indexOf(1);
  const prompt = r.buildGenerationPrompt(SIMPLE);
  assert.equal(first, prompt.length);
  assert.deepEqual(tokens.slice(0, first), prompt);
  assert.ok(weights.slice(first).every((w) => w === 1));
  assert.equal(tokens.at(-1), 151645);
  assert.equal(
    tok.decode(tokens.slice(first)),
    'Let me check.\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call>' +
      "<|im_end|>",
  );
});

Deno.test("Qwen3 renderer: trainOn all_assistant weights every assistant turn only", () => {
  const messages: Message[] = [...MULTI, { role: "assistant", content: "Bye!" }];
  const last = r.buildSupervisedExample(messages);
  const all = r.buildSupervisedExample(messages, { trainOn: "all_assistant" });
  assert.deepEqual(all.tokens, last.tokens);
  const trained = (ex: { tokens: number[]; weights: number[] }) =>
    tok.decode(ex.tokens.filter((_, i) => ex.weights[i] === 1));
  assert.equal(trained(last), "Bye!<|im_end|>");
  // History turns lose their reasoning, as in the template; the last keeps its empty block
  // in the (untrained) prompt.
  assert.equal(trained(all), "7<|im_end|>3<|im_end|>Bye!<|im_end|>");
  // With thinking enabled the model writes the think block itself, so it is trained.
  const think = rThink.buildSupervisedExample([
    ...SIMPLE,
    { role: "assistant", content: "4", thinking: "Add." },
  ]);
  assert.equal(trained(think), "<think>\nAdd.\n</think>\n\n4<|im_end|>");
  // ... also when it is empty (the template writes it on the last turn either way).
  const empty = rThink.buildSupervisedExample([...SIMPLE, { role: "assistant", content: "4" }]);
  assert.equal(trained(empty), "<think>\n\n</think>\n\n4<|im_end|>");
});

Deno.test("Qwen3 renderer: parseResponse round-trips content, thinking and tool calls", () => {
  const cases: [Qwen3Renderer, Message][] = [
    [r, { role: "assistant", content: "The answer is 4." }],
    [rThink, { role: "assistant", content: "4", thinking: "2 + 2 = 4.\nSure." }],
    [rThink, { role: "assistant", content: "4" }], // an empty think block is no thinking
    [rThink, {
      role: "assistant",
      content: "Checking.",
      thinking: "Need the weather.",
      toolCalls: [
        { name: "get_weather", arguments: { city: "Paris", days: [1, 2] } },
        { name: "clock", arguments: {} },
      ],
    }],
    [r, { role: "assistant", content: "", toolCalls: [{ name: "noop", arguments: { x: 1 } }] }],
  ];
  for (const [renderer, message] of cases) {
    const { tokens, weights } = renderer.buildSupervisedExample([...SIMPLE, message]);
    const sampled = tokens.filter((_, i) => weights[i] === 1);
    const parsed = renderer.parseResponse(sampled);
    assert.equal(parsed.ok, true);
    assert.equal(parsed.error, undefined);
    assert.deepEqual(parsed.message, message);
  }
});

Deno.test("Qwen3 renderer: parseResponse flags truncation and malformed tool calls", () => {
  const sampled = tok.encode("<think>\nhm\n</think>\n\nPartial answer");
  const cut = r.parseResponse(sampled);
  assert.equal(cut.ok, false);
  assert.deepEqual(cut.message, { role: "assistant", content: "Partial answer", thinking: "hm" });
  assert.deepEqual(r.stopSequences(), [151645]);
  const done = r.parseResponse([...sampled, 151645, 151643]);
  assert.equal(done.ok, true);
  const bad = r.parseResponse(tok.encode("x\n<tool_call>\n{not json}\n</tool_call><|im_end|>"));
  assert.equal(bad.ok, true);
  assert.match(bad.error ?? "", /malformed tool call/);
  assert.equal(bad.message.toolCalls, undefined);
  assert.match(bad.message.content, /<tool_call>/);
  const open = r.parseResponse(tok.encode('<tool_call>\n{"name": "f", "arguments": {}}<|im_end|>'));
  assert.match(open.error ?? "", /unterminated/);
  // What a collapsing policy wrote in an RL run of the ORS GuessTheNumber (bench/results/
  // hand_runs.json, ors_bare_close_2026_11_26): the closing tag the sampler stops at, no call.
  const stray = r.parseResponse(tok.encode("Above 6}}\nAbove 8}}\n</tool_call><|im_end|>"));
  assert.equal(stray.ok, true);
  assert.match(stray.error ?? "", /without its opening <tool_call>/);
  assert.equal(stray.message.toolCalls, undefined);
  const after = r.parseResponse(
    tok.encode('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n</tool_call><|im_end|>'),
  );
  assert.match(after.error ?? "", /without its opening/);
});

Deno.test("Qwen3 Instruct-2507: ChatML with no think block anywhere, tools as Qwen3 declares them", () => {
  // Instruct-2507's template (tokenizer_config.json of Qwen/Qwen3-4B-Instruct-2507) is Qwen3's
  // without the reasoning branch: assistant content as given, and a generation prompt that
  // ends at `<|im_start|>assistant\n`. Its file could not be had here; this is its rule (ollama's
  // template of qwen3:30b-a3b-instruct-2507, ollama.com/library, agrees: no think block anywhere).
  const r2507 = new Qwen3Renderer({ variant: "instruct" });
  const conv: Message[] = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "2+2?" },
    { role: "assistant", content: "4", thinking: "dropped" },
    { role: "user", content: "Weather?" },
    { role: "assistant", content: "", toolCalls: [{ name: "w", arguments: { c: "Oslo" } }] },
    { role: "tool", content: "7C" },
  ];
  assert.equal(
    r2507.renderText(conv, true),
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n" +
      "<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nWeather?<|im_end|>\n" +
      '<|im_start|>assistant\n<tool_call>\n{"name": "w", "arguments": {"c": "Oslo"}}\n' +
      "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n7C\n</tool_response>" +
      "<|im_end|>\n<|im_start|>assistant\n",
  );
  const ex = r2507.buildSupervisedExample([...conv, { role: "assistant", content: "7 degrees." }]);
  const prompt = r2507.buildGenerationPrompt(conv);
  assert.deepEqual(ex.tokens.slice(0, prompt.length), prompt);
  const reply = ex.tokens.slice(prompt.length);
  assert.deepEqual(tok.decode(reply), "7 degrees.<|im_end|>");
  assert.deepEqual(r2507.parseResponse(reply).message, {
    role: "assistant",
    content: "7 degrees.",
  });
});

Deno.test("getRenderer: maps model names and rejects unknown or other-template ones", () => {
  const q = getRenderer("Qwen/Qwen3-8B");
  assert.ok(q instanceof Qwen3Renderer);
  assert.deepEqual(q.stopSequences(), [151645]);
  assert.equal(
    (getRenderer("Qwen/Qwen3-8B", { enableThinking: true }) as Qwen3Renderer)
      .enableThinking,
    true,
  );
  assert.deepEqual(getRenderer("local/tiny").stopSequences(), [258]);
  const instruct = getRenderer("Qwen/Qwen3-4B-Instruct-2507") as Qwen3Renderer;
  assert.equal(instruct.variant, "instruct");
  assert.throws(() => getRenderer("gpt-4o"), /no renderer for model/);
});

Deno.test("Qwen3 renderer: a re-rendered second turn drops the first turn's thinking, so an env episode trains as two datums", () => {
  const user1: Message = { role: "user", content: "Guess an integer between 1 and 10." };
  const prompt1 = rThink.buildGenerationPrompt([user1]);
  const action1 = tok.encode("<think>\nStart in the middle.\n</think>\n\n\\boxed{5}<|im_end|>");
  const parsed = rThink.parseResponse(action1);
  assert.equal(parsed.message.content, "\\boxed{5}");
  const prompt2 = rThink.buildGenerationPrompt([
    user1,
    parsed.message,
    { role: "user", content: "The number is higher than 5." },
  ]);
  const seq1 = [...prompt1, ...action1];
  assert.notDeepEqual(prompt2.slice(0, seq1.length), seq1, "the thinking is gone from turn 2");
  const action2 = tok.encode("\\boxed{8}<|im_end|>");
  const datums = trajectoryToDatums([
    { observation: prompt1, action: action1, logprobs: action1.map(() => -1), advantage: 1 },
    { observation: prompt2, action: action2, logprobs: action2.map(() => -1), advantage: 1 },
  ]);
  assert.equal(datums.length, 2);
});

Deno.test("qwen3 (the cookbook's names): thinking on writes no block at the prompt; off closes it; history loses reasoning", () => {
  const tokenizer = r.tokenizer;
  const on = getRenderer("Qwen/Qwen3-8B", { renderer: "qwen3", tokenizer });
  const off = getRenderer("Qwen/Qwen3-8B", { renderer: "qwen3_disable_thinking", tokenizer });
  const decode = (x: typeof on, m: Message[]) => x.tokenizer.decode(x.buildGenerationPrompt(m));
  const trained = (x: typeof on, m: Message[]) => {
    const { tokens, weights } = x.buildSupervisedExample(m);
    return x.tokenizer.decode(tokens.filter((_, i) => weights[i] === 1));
  };
  const hi: Message[] = [{ role: "user", content: "Hi" }];
  assert.equal(decode(on, hi), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  assert.equal(
    decode(off, hi),
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" +
      "<think>\n\n</think>\n\n",
  );
  const answer: Message = { role: "assistant", content: "Hello!" };
  assert.equal(trained(on, [...hi, answer]), "<think>\n\n</think>\n\nHello!<|im_end|>");
  assert.equal(trained(off, [...hi, answer]), "Hello!<|im_end|>");
  // A tool-calling turn's reasoning is dropped once it is history (the template would keep it).
  const agent: Message[] = [
    { role: "user", content: "Weather in Paris?" },
    {
      role: "assistant",
      content: "",
      thinking: "Look it up.",
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
    },
    { role: "tool", content: "18C" },
  ];
  assert.equal(
    decode(on, agent),
    "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n" +
      '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
      "<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
  );
  assert.throws(
    () => off.buildSupervisedExample([...hi, { ...answer, thinking: "Greet." }]),
    /qwen3_disable_thinking: this turn has reasoning/,
  );
});
