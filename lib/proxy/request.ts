/**
 * A chat-completions request as the proxy reads it: OpenAI's body validated with zod (unknown
 * fields are ignored, as OpenAI-compatible servers do, since agents send vendor extras such as
 * `store` or `prompt_cache_key`), messages normalised into the renderers' {@link Message}s and
 * tools into {@link ToolSpec}s.
 *
 * Normalisation, as the OpenClaw seed does it: `developer` becomes `system`; content given as
 * parts keeps its text parts joined by a space (images and audio are dropped); assistant tool
 * calls keep their ids and parsed JSON arguments; tool results keep their call ids. The session
 * fields of the seed's body (`session_id`, `turn_type`, `session_done`, `reward`) are read here
 * and never reach the sampler.
 *
 * @module
 */

import { z } from "zod";
import type { ContentPart, Message, ToolCall, ToolSpec } from "../renderers/types.ts";
import { ProxyError, requestError } from "./errors.ts";

const ContentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });
const ContentSchema = z.union([z.string(), z.array(ContentPartSchema)]);

const ToolCallSchema = z.object({
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const ChatMessageSchema = z.object({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: ContentSchema.nullish(),
  tool_calls: z.array(ToolCallSchema).nullish(),
  tool_call_id: z.string().nullish(),
  /** Reasoning an agent replays (vLLM's and DeepSeek's field, and pi-ai's `reasoning`). */
  reasoning_content: z.string().nullish(),
  reasoning: z.string().nullish(),
});

/** One message of a request, as OpenAI defines it. */
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

const ToolSchema = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
  }),
});

const ToolChoiceSchema = z.union([
  z.enum(["none", "auto", "required"]),
  z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) }),
]);

const positiveInt = () => z.number().int().min(1);

/** The body of `POST /v1/chat/completions`. */
export const ChatCompletionRequestSchema = z.object({
  model: z.string().min(1).optional(),
  messages: z.array(ChatMessageSchema).min(1, "messages must be a non-empty list"),
  tools: z.array(ToolSchema).nullish(),
  tool_choice: ToolChoiceSchema.nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  /** Not OpenAI's, but vLLM's and SGLang's: -1 (or absent) is off. */
  top_k: z.number().int().min(-1).refine((k) => k !== 0, "top_k must be -1 (off) or ≥ 1")
    .nullish(),
  max_tokens: positiveInt().nullish(),
  max_completion_tokens: positiveInt().nullish(),
  stop: z.union([z.string().min(1), z.array(z.string().min(1)).max(4)]).nullish(),
  n: positiveInt().nullish(),
  seed: z.number().int().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  // The OpenClaw seed's session fields.
  session_id: z.union([z.string(), z.number()]).nullish(),
  turn_type: z.string().nullish(),
  session_done: z.union([z.boolean(), z.string(), z.number()]).nullish(),
  /** The reward of the session's previous main turn (an agent with a verifier). */
  reward: z.number().refine(Number.isFinite, "reward must be finite").nullish(),
});

/** A validated request body. */
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

/** Sampling settings of a request, resolved. */
export interface RequestSampling {
  temperature: number;
  topP: number;
  topK: number;
  /** Null: as many as the context leaves (up to the proxy's default). */
  maxTokens: number | null;
  stop: string[];
  n: number;
  seed?: number;
  logprobs: boolean;
  topLogprobs: number;
}

/** What the proxy needs of a request. */
export interface ParsedRequest {
  body: ChatCompletionRequest;
  messages: Message[];
  /** Tools to declare in the prompt (after `tool_choice`). */
  tools: ToolSpec[];
  sampling: RequestSampling;
  stream: boolean;
  includeUsage: boolean;
}

/** The seed's default temperature. */
export const DEFAULT_TEMPERATURE = 0.6;

/**
 * Validates a parsed JSON body and normalises it; bad input is a {@link ProxyError} naming the
 * field.
 *
 * @example
 * const req = parseChatRequest(await c.req.json(), { maxN: 8 });
 * renderer.buildGenerationPrompt(renderer.declareTools(req.messages, req.tools));
 */
export function parseChatRequest(json: unknown, { maxN }: { maxN: number }): ParsedRequest {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ProxyError(400, "the request body must be a JSON object");
  }
  checkNesting(json);
  const parsed = ChatCompletionRequestSchema.safeParse(json);
  if (!parsed.success) throw requestError(parsed.error);
  const body = parsed.data;
  const n = body.n ?? 1;
  if (n > maxN) {
    throw new ProxyError(400, `n is ${n}; this proxy samples at most ${maxN} choices`, {
      param: "n",
    });
  }
  if (body.top_logprobs && !body.logprobs) {
    throw new ProxyError(400, "top_logprobs needs logprobs: true", { param: "top_logprobs" });
  }
  return {
    body,
    messages: normaliseMessages(body.messages),
    tools: declaredTools(body.tools ?? [], body.tool_choice ?? "auto"),
    sampling: {
      temperature: body.temperature ?? DEFAULT_TEMPERATURE,
      topP: body.top_p ?? 1,
      topK: body.top_k ?? -1,
      maxTokens: body.max_completion_tokens ?? body.max_tokens ?? null,
      stop: body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop,
      n,
      ...(body.seed == null ? {} : { seed: body.seed }),
      logprobs: body.logprobs ?? false,
      topLogprobs: body.top_logprobs ?? 0,
    },
    stream: body.stream ?? false,
    includeUsage: body.stream_options?.include_usage ?? false,
  };
}

/** How deep a request body may nest (JSON Schemas of real agents' tools stay under 20). */
export const MAX_NESTING = 64;

/**
 * A 400 naming the first value nested deeper than {@link MAX_NESTING} levels (a tool's
 * `parameters` thousands of levels deep would otherwise overflow the stack when rendered).
 * Walks the body without recursion.
 */
export function checkNesting(json: unknown, max: number = MAX_NESTING): void {
  const stack: [unknown, (string | number)[]][] = [[json, []]];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (path.length >= max) {
      const param = issueParamOf(path.slice(0, 4)) + "…";
      throw new ProxyError(400, `${param} nests deeper than ${max} levels`, {
        param,
        code: "too_deeply_nested",
      });
    }
    const entries = Array.isArray(v) ? v.map((x, i) => [i, x] as const) : Object.entries(v);
    for (const [k, x] of entries) {
      if (x !== null && typeof x === "object") stack.push([x, [...path, k]]);
    }
  }
}

function issueParamOf(path: (string | number)[]): string {
  return path.map((p, i) => typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${p}`).join("");
}

/** OpenAI's messages as the renderers' {@link Message}s (see the module's rules). */
export function normaliseMessages(messages: ChatMessage[]): Message[] {
  return messages.map(toMessage);
}

/** The schema of OpenAI's messages (for other routes that take a conversation). */
export const ChatMessagesSchema = z.array(ChatMessageSchema);

function toMessage(m: ChatMessage, i: number): Message {
  if (m.content == null && m.role !== "assistant") {
    throw new ProxyError(400, `messages[${i}].content is required for a ${m.role} message`, {
      param: `messages[${i}].content`,
    });
  }
  const content = flatten(m.content);
  switch (m.role) {
    case "system":
    case "developer":
      return { role: "system", content };
    case "user":
      return { role: "user", content, ...imageParts(m.content, i) };
    case "tool":
      return { role: "tool", content, ...(m.tool_call_id ? { toolCallId: m.tool_call_id } : {}) };
    case "assistant": {
      const out: Message = { role: "assistant", content };
      const thinking = m.reasoning_content ?? m.reasoning;
      if (thinking) out.thinking = thinking;
      if (m.tool_calls?.length) out.toolCalls = m.tool_calls.map(toToolCall);
      return out;
    }
  }
}

/**
 * A user message's content in order with its `image_url` parts as image parts (data: URLs of
 * PNG or JPEG; the proxy fetches nothing), when it has any.
 */
function imageParts(content: ChatMessage["content"], i: number): { parts?: ContentPart[] } {
  if (!Array.isArray(content) || !content.some((p) => p.type === "image_url")) return {};
  return {
    parts: content.flatMap((p): ContentPart[] => {
      if (p.type !== "image_url") {
        return typeof p.text === "string" ? [{ type: "text", text: p.text }] : [];
      }
      const raw = p.image_url as { url?: unknown } | string | undefined;
      const url = typeof raw === "string" ? raw : raw?.url;
      const m = typeof url === "string" && /^data:image\/(png|jpe?g);base64,(.+)$/s.exec(url);
      if (!m) {
        throw new ProxyError(
          400,
          `messages[${i}].content: an image_url must be a data: URL of a PNG or JPEG image (the proxy fetches nothing)`,
          { param: `messages[${i}].content` },
        );
      }
      return [{ type: "image", format: m[1] === "png" ? "png" : "jpeg", data: m[2] }];
    }),
  };
}

/** Text parts joined by a space (the seed's rule); images go to `parts` (user messages). */
function flatten(content: ChatMessage["content"]): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.filter((p) => typeof p.text === "string" && /text|refusal/.test(p.type))
    .map((p) => p.text).join(" ");
}

function toToolCall(c: z.infer<typeof ToolCallSchema>): ToolCall {
  let args: unknown = c.function.arguments;
  try {
    args = JSON.parse(c.function.arguments);
  } catch { /* arguments that are not JSON stay text, as the model wrote them */ }
  return { name: c.function.name, arguments: args, ...(c.id ? { id: c.id } : {}) };
}

/**
 * The tools declared in the prompt: all of them for `auto` and `required` (a sampler cannot
 * force a call), none for `none`, the named one for `{type: "function", function: {name}}`.
 */
function declaredTools(
  tools: z.infer<typeof ToolSchema>[],
  choice: z.infer<typeof ToolChoiceSchema>,
): ToolSpec[] {
  const specs = tools.map((t): ToolSpec => ({
    name: t.function.name,
    description: t.function.description ?? "",
    parameters: t.function.parameters ?? { type: "object", properties: {} },
  }));
  if (choice === "none") return [];
  if (typeof choice === "object") return namedTool(specs, choice.function.name);
  return specs;
}

/**
 * The one tool a `tool_choice` names (chat completions, Responses, Messages), as the only one
 * declared; a name not among the tools is a 400.
 */
export function namedTool(specs: ToolSpec[], name: string): ToolSpec[] {
  const named = specs.filter((t) => t.name === name);
  if (named.length === 0) {
    throw new ProxyError(400, `tool_choice names ${JSON.stringify(name)}, which is not in tools`, {
      param: "tool_choice",
    });
  }
  return named;
}
