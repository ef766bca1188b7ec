/**
 * Golden conversations of the cookbook's Kimi K2.5/K2.6 renderers (`kimi_k25`, `kimi_k26`,
 * `_disable_thinking`, `kimi_k26_preserve_thinking`), their text written out by reading
 * tinker-cookbook's `renderers/kimi_k25.py` and `kimi_k26.py` (HEAD 9dfcc3a2). Kimi's vocabulary
 * is a tiktoken model, not loadable here: a word-level stand-in holds Kimi's special tokens
 * (`getRenderer`'s `tokenizer` option).
 */

import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { Message, Renderer } from "../../lib/renderers/types.ts";
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

Deno.test("kimi_k26: TypeScript-style tool declarations are refused in one line", () => {
  const tool = { name: "f", description: "F.", parameters: { type: "object" } };
  assert.throws(
    () => r("kimi_k26").declareTools([{ role: "user", content: "x" }], [tool]),
    /^Error: Kimi K2\.5\/K2\.6 declare tools in TypeScript style, which is not built here/,
  );
});
