/**
 * The renderer interface: a chat format turned into token ids for sampling and training, and
 * sampled tokens parsed back into a message. One renderer per model family.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";

/** A tool call of an assistant message: a function name and its JSON arguments. */
export interface ToolCall {
  /** The function's name. */
  name: string;
  /** Its arguments, parsed from JSON. */
  arguments: unknown;
  /** The call's id, when the conversation's API gives calls ids (OpenAI's `call_…`). */
  id?: string;
}

/**
 * A tool the model may call, as OpenAI's `tools` entries and the Open Reward Standard declare
 * one: a name, what it does, and the JSON Schema of its arguments.
 */
export interface ToolSpec {
  /** The tool's name, as calls name it. */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** JSON Schema of the arguments object (`{"type": "object", "properties": …}`). */
  parameters: Record<string, unknown>;
}

/** An image in a message (the cookbook's `ImagePart`): its bytes, base64, and their format. */
export interface ImagePart {
  /** Always `image`. */
  type: "image";
  /** The image's bytes, base64. */
  data: string;
  /** The bytes' format. */
  format: "png" | "jpeg";
}

/** A piece of a message's content, in order: text or an image. */
export type ContentPart = { type: "text"; text: string } | ImagePart;

/**
 * A chunk of a model input as Tinker's wire and the official SDK carry it (`EncodedTextChunk`,
 * `ImageChunk`; `expected_tokens` is advisory, and left to the server here).
 */
export type InputChunk =
  | { type: "encoded_text"; tokens: number[] }
  | { type: "image"; data: string; format: "png" | "jpeg"; expected_tokens?: number | null };

/** A chat message. `thinking` and `toolCalls` only occur on assistant messages. */
export interface Message {
  /** Who speaks. */
  role: "system" | "user" | "assistant" | "tool";
  /** The text (with images: the text of `parts`). */
  content: string;
  /**
   * The content in order with its images, when it has any (`content` is then its text): the
   * vision renderers place each image where it is, the others refuse a message with one.
   */
  parts?: ContentPart[];
  /** The reasoning of an assistant turn (the text inside `<think>…</think>`). */
  thinking?: string;
  /** Tool calls of an assistant turn (the `<tool_call>{json}</tool_call>` blocks). */
  toolCalls?: ToolCall[];
  /** On a tool message: the id of the call it answers, when the caller gave calls ids. */
  toolCallId?: string;
  /**
   * On the leading system message: the tools declared to the model, for the formats that write
   * declarations where the format puts them (Llama 3, DeepSeek V3, gpt-oss, Kimi); set by
   * {@link Renderer.declareTools}.
   */
  tools?: readonly ToolSpec[];
}

/**
 * A parsed assistant response. `ok` is false when the response was cut off before the stop
 * token (truncated). `error` reports a malformed block (e.g. a tool call that is not JSON).
 */
export interface ParsedResponse {
  /** The message parsed from the response. */
  message: Message;
  /** False when the response was cut off before its stop token. */
  ok: boolean;
  /** What was malformed, when something was. */
  error?: string;
}

/** Tokens of a conversation with a per-token loss weight (1 on the tokens to train on). */
export interface SupervisedExample {
  /** The conversation's token ids. */
  tokens: number[];
  /** One loss weight per token. */
  weights: number[];
}

/** Which assistant messages a supervised example trains on. */
export type TrainOn = "last_assistant" | "all_assistant";

/** A chat format over a tokenizer. */
export interface Renderer {
  /** The tokenizer the format writes tokens with. */
  readonly tokenizer: Tokenizer;
  /**
   * Tokens of the messages followed by the opening of the assistant's turn (text only: tokens
   * alone cannot carry images, so a message with one is refused; see
   * {@link Renderer.buildGenerationInput}).
   */
  buildGenerationPrompt(messages: Message[]): number[];
  /**
   * Tokens of a whole conversation, with weight 1 on what the model produced in the trained
   * assistant turns (through the stop token) and 0 elsewhere. Default: the last assistant turn.
   */
  buildSupervisedExample(messages: Message[], opts?: { trainOn?: TrainOn }): SupervisedExample;
  /**
   * The generation prompt as the sampler's model input (the cookbook's `build_generation_prompt`,
   * which yields a `ModelInput`): the text as token chunks and, in the vision formats, each
   * image of the messages an image chunk where the format places it. The one way a prompt goes
   * to a sampler; formats that take no images refuse a message with one in one line.
   */
  buildGenerationInput(messages: Message[]): InputChunk[];
  /**
   * What ends sampling (the end of the assistant's message): token ids, or, for formats whose
   * end is text (`role_colon`'s `\n\nUser:`), strings; never both (the sampler's `stop`).
   */
  stopSequences(): number[] | string[];
  /** The assistant message in sampled tokens. */
  parseResponse(tokens: number[]): ParsedResponse;
  /**
   * Only for formats where a conversation's tokens only ever grow: the tokens that extend
   * prompt + sampled tokens with new messages, up to the next assistant opening. Multi-turn
   * rollouts use it when present (an episode is then one datum) and re-render the whole
   * conversation otherwise (Qwen3, which drops earlier thinking).
   */
  continuation?(messages: Message[]): number[];
  /**
   * The messages with `tools` declared as this format declares them (the counterpart of the
   * cookbook's `create_conversation_prefix_with_tools`): most formats write a section into the
   * leading system message, using its text as the system prompt (adding one when there is
   * none); some keep the specs on the message and write them where the format puts them.
   * Unchanged when there are no tools. The one way callers declare tools.
   *
   * @example
   * renderer.buildGenerationPrompt(renderer.declareTools(messages, env.tools ?? []));
   */
  declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[];
}
