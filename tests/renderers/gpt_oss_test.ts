/**
 * Golden conversations of the cookbook's gpt-oss renderers (`gpt_oss_no_sysprompt`,
 * `gpt_oss_{low,medium,high}_reasoning`), their text written out by reading tinker-cookbook's
 * `renderers/gpt_oss.py` (HEAD 9dfcc3a2), over gpt-oss's own tokenizer (npm).
 */

import { assert } from "../assert.ts";
import { getRenderer, GptOssRenderer } from "../../lib/renderers/mod.ts";
import type { Message, Renderer, ToolSpec } from "../../lib/renderers/types.ts";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";

const tokenizer = getTokenizer("openai/gpt-oss-20b");
const noSys = getRenderer("openai/gpt-oss-20b");
const medium = new GptOssRenderer(tokenizer, { reasoningEffort: "medium", date: "2026-11-28" });
const text = (x: Renderer, m: Message[]) => x.tokenizer.decode(x.buildGenerationPrompt(m));
function example(x: Renderer, m: Message[]): { all: string; trained: string } {
  const { tokens, weights } = x.buildSupervisedExample(m);
  return {
    all: x.tokenizer.decode(tokens),
    trained: x.tokenizer.decode(tokens.filter((_, i) => weights[i] === 1)),
  };
}
const reply = (s: string) => noSys.parseResponse(tokenizer.encode(s));

const THOUGHT: Message[] = [
  { role: "user", content: "2+2?" },
  { role: "assistant", thinking: "Add.", content: "4" },
  { role: "user", content: "Times 3?" },
];
const HISTORY = "<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>analysis" +
  "<|message|>Add.<|end|><|start|>assistant<|channel|>final<|message|>4<|end|><|start|>user" +
  "<|message|>Times 3?<|end|><|start|>assistant";
const WEATHER: ToolSpec = {
  name: "get_weather",
  description: "Get the weather.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

Deno.test("gpt_oss: the table's renderer is no_sysprompt; a system prompt is a developer block", () => {
  assert.equal(noSys.constructor.name, "GptOssRenderer");
  assert.equal(
    text(noSys, [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }]),
    "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|><|start|>user" +
      "<|message|>Hi<|end|><|start|>assistant",
  );
  assert.equal(
    text(medium, [{ role: "user", content: "Hi" }]),
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n" +
      "Knowledge cutoff: 2024-06\nCurrent date: 2026-11-28\n\nReasoning: medium\n\n# Valid " +
      "channels: analysis, commentary, final. Channel must be included for every message." +
      "<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant",
  );
  for (const effort of ["low", "medium", "high"]) {
    const r = getRenderer("openai/gpt-oss-120b", { renderer: `gpt_oss_${effort}_reasoning` });
    assert.ok(text(r, [{ role: "user", content: "Hi" }]).includes(`Reasoning: ${effort}\n`));
  }
});

Deno.test("gpt_oss: an earlier turn keeps its analysis channel; the last trains through <|return|>", () => {
  assert.equal(text(noSys, THOUGHT), HISTORY);
  const last: Message = { role: "assistant", thinking: "Multiply.", content: "12" };
  assert.deepEqual(example(noSys, [...THOUGHT, last]), {
    all: HISTORY + "<|channel|>analysis<|message|>Multiply.<|end|><|start|>assistant" +
      "<|channel|>final<|message|>12<|return|>",
    trained: "<|channel|>analysis<|message|>Multiply.<|end|><|start|>assistant<|channel|>final" +
      "<|message|>12<|return|>",
  });
});

Deno.test("gpt_oss: tools in a second system block and a developer block; a call and its result", () => {
  const messages: Message[] = [
    ...noSys.declareTools([{ role: "system", content: "Be brief." }], [WEATHER]),
    { role: "user", content: "Weather in Paris?" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
    },
    { role: "tool", content: "18C" },
  ];
  assert.equal(
    text(noSys, messages),
    "<|start|>system<|message|>Calls to these tools must go to the commentary channel: " +
      "'functions'.<|end|><|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n" +
      "## functions\n\nnamespace functions {\n\n// Get the weather.\ntype get_weather = (_:\n{\n" +
      "city: string,\n}) => any;\n\n} // namespace functions<|end|><|start|>user<|message|>" +
      "Weather in Paris?<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary " +
      '<|constrain|>json<|message|>{"city": "Paris"}<|call|><|start|>functions.get_weather ' +
      "to=assistant<|channel|>commentary<|message|>18C<|end|><|start|>assistant",
  );
  assert.equal(
    medium.declareTools([{ role: "user", content: "x" }], [WEATHER])[0].content,
    "",
    "no system prompt: the developer block holds the tools alone",
  );
});

Deno.test("gpt_oss: replies parse by channel; malformed and dangling calls are errors", () => {
  assert.deepEqual(
    reply(
      "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
    ),
    { message: { role: "assistant", content: "Hi", thinking: "Hmm." }, ok: true },
  );
  assert.deepEqual(
    reply(
      "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant to=functions.get_weather" +
        '<|channel|>commentary <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
    ).message,
    {
      role: "assistant",
      content: "",
      thinking: "Need it.",
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
    },
  );
  assert.match(
    reply(
      " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{city: Paris}<|call|>",
    ).error ?? "",
    /malformed tool call/,
  );
  assert.match(
    reply(" to=functions.get_weather<|channel|>commentary<|return|>").error ?? "",
    /without a parsable arguments message/,
  );
  assert.equal(reply("<|channel|>final<|message|>cut").ok, false);
});
