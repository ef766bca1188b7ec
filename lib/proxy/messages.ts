/**
 * Anthropic's Messages API on the proxy (`POST /v1/messages`, what Claude Code speaks; a query
 * string such as `?beta=true` is ignored), on the same sessions, scoring and training as chat
 * completions. `system` (a string or text blocks), `messages` with `text`, `thinking`,
 * `tool_use` and `tool_result` blocks (and Claude Code's mid-conversation `system` messages,
 * as a string or blocks alike) and custom tools become the renderers' messages and tools; the
 * answer is a message whose `content` holds a `thinking` block (the model's thinking), a `text`
 * block and `tool_use` blocks, with `stop_reason` `end_turn`, `max_tokens`, `stop_sequence` or
 * `tool_use`, streamed as Anthropic's named events or not.
 *
 * Errors are Anthropic's `{"type": "error", "error": {"type", "message"}}`, every one of them,
 * the key check included (`x-api-key` or a bearer). A field this proxy does not support (image
 * blocks, server tools, …) is a 400 naming it; fields Claude Code sends that change nothing
 * here (`metadata`, `thinking`, `context_management`, `output_config`, `cache_control`, …) are
 * accepted.
 *
 * @module
 */

import type { Context, Hono, MiddlewareHandler } from "hono";
import { z } from "zod";
import type { Message, ToolCall, ToolSpec } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import type { SampledChoice } from "./completion.ts";
import { ProxyError, strictRequestError } from "./errors.ts";
import { checkNesting, DEFAULT_TEMPERATURE, namedTool } from "./request.ts";
import { type NamedEvent, tokenDeltas } from "./stream.ts";
import { answerOrEvents, type ApiContext, type TurnAnswer } from "./turn.ts";

const Block = z.looseObject({ type: z.string() });
const Content = z.union([z.string(), z.array(Block)]);

/** The body of `POST /v1/messages` (unknown fields are a 400 naming them). */
export const MessagesRequestSchema = z.object({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(
    z.looseObject({ role: z.enum(["user", "assistant", "system"]), content: Content }),
  )
    .min(1, "messages must be a non-empty list"),
  system: Content.nullish(),
  tools: z.array(z.looseObject({ name: z.string().min(1), type: z.string().nullish() })).nullish(),
  tool_choice: z.looseObject({
    type: z.enum(["auto", "any", "tool", "none"]),
    name: z.string().optional(),
  }).nullish(),
  temperature: z.number().min(0).max(1).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(1).nullish(),
  stop_sequences: z.array(z.string().min(1)).max(4).nullish(),
  stream: z.boolean().nullish(),
  // Accepted, and change nothing here.
  metadata: z.looseObject({}).nullish(),
  thinking: z.looseObject({ type: z.string() }).nullish(),
  context_management: z.looseObject({}).nullish(),
  output_config: z.looseObject({}).nullish(),
  service_tier: z.string().nullish(),
}).strict();

type MessagesRequest = z.infer<typeof MessagesRequestSchema>;

/** Anthropic's error `type` of a status. */
function anthropicType(status: number): string {
  return ({
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
  } as Record<number, string>)[status] ?? "api_error";
}

/**
 * Middleware (mounted before the key check) that turns every error answer under
 * `/v1/messages` into Anthropic's error shape.
 */
export const anthropicErrors: MiddlewareHandler = async (c: Context, next) => {
  await next();
  if (c.res.status < 400 || !c.req.path.startsWith("/v1/messages")) return;
  const body = await c.res.clone().json().catch(() => null) as
    | { error?: { message?: string } }
    | null;
  const message = body?.error?.message ?? `HTTP ${c.res.status}`;
  const headers = new Headers(c.res.headers);
  c.res = new Response(
    JSON.stringify({ type: "error", error: { type: anthropicType(c.res.status), message } }),
    { status: c.res.status, headers },
  );
};

/** Mounts `POST /v1/messages`. */
export function mountMessages(app: Hono, api: ApiContext): void {
  app.post("/v1/messages", async (c) => {
    const json = await api.requestJson(c.req.raw);
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      throw new ProxyError(400, "the request body must be a JSON object");
    }
    checkNesting(json);
    const parsed = MessagesRequestSchema.safeParse(json);
    if (!parsed.success) throw strictRequestError(parsed.error);
    const body = parsed.data;
    const messages = [
      ...(body.system == null
        ? []
        : [{ role: "system" as const, content: blockText(body.system, "system") }])
        .filter((m) => m.content),
      ...body.messages.flatMap((m, i) => toMessages(m.role, m.content, `messages[${i}]`)),
    ];
    const a = await api.serveTurn({
      req: {
        messages,
        tools: declaredTools(body),
        sampling: {
          temperature: body.temperature ?? DEFAULT_TEMPERATURE,
          topP: body.top_p ?? 1,
          topK: body.top_k ?? -1,
          maxTokens: body.max_tokens,
          stop: body.stop_sequences ?? [],
          n: 1,
          logprobs: false,
          topLogprobs: 0,
        },
      },
      meta: api.turnMeta(c.req.raw, {}),
      model: body.model,
    });
    const message = messageObject(a, body, api.tokenizer);
    return answerOrEvents(
      c.env,
      a,
      message,
      body.stream ? () => messageEvents(message, a.choices[0], api) : null,
    );
  });
}

/** The text of `system` or of a system message: a string, or text blocks. */
function blockText(content: z.infer<typeof Content>, where: string): string {
  if (typeof content === "string") return content;
  return content.map((b, k) => {
    if (b.type !== "text") unsupported(`${where}[${k}].type`, b.type);
    return String((b as { text?: unknown }).text ?? "");
  }).join("\n");
}

function unsupported(param: string, value: unknown): never {
  throw new ProxyError(400, `${param} ${JSON.stringify(value)} is not supported`, {
    param,
    code: "unsupported_parameter",
  });
}

/**
 * One Anthropic message as the renderers' messages: a user message's `tool_result` blocks are
 * tool messages (before its text, as the API orders them), an assistant's `thinking`, `text`
 * and `tool_use` blocks one assistant message.
 */
function toMessages(
  role: "user" | "assistant" | "system",
  content: z.infer<typeof Content>,
  where: string,
): Message[] {
  if (role === "system") return [{ role: "system", content: blockText(content, where) }];
  if (typeof content === "string") return [{ role, content }];
  if (role === "assistant") {
    const m: Message = { role: "assistant", content: "" };
    const texts: string[] = [];
    const thoughts: string[] = [];
    const calls: ToolCall[] = [];
    for (const [k, b] of content.entries()) {
      const x = b as Record<string, unknown>;
      if (b.type === "text") texts.push(String(x.text ?? ""));
      else if (b.type === "thinking") thoughts.push(String(x.thinking ?? ""));
      else if (b.type === "tool_use") {
        calls.push({ name: String(x.name), arguments: x.input ?? {}, id: String(x.id) });
      } else unsupported(`${where}.content[${k}].type`, b.type);
    }
    m.content = texts.join("");
    if (thoughts.length) m.thinking = thoughts.join("\n");
    if (calls.length) m.toolCalls = calls;
    return [m];
  }
  const out: Message[] = [];
  const texts: string[] = [];
  for (const [k, b] of content.entries()) {
    const x = b as Record<string, unknown>;
    if (b.type === "text") texts.push(String(x.text ?? ""));
    else if (b.type === "tool_result") {
      const c = x.content;
      const text = c == null
        ? ""
        : typeof c === "string"
        ? c
        : blockText(c as z.infer<typeof Content>, `${where}.content[${k}].content`);
      out.push({
        role: "tool",
        content: x.is_error ? `Error: ${text}` : text,
        toolCallId: String(x.tool_use_id),
      });
    } else unsupported(`${where}.content[${k}].type`, b.type);
  }
  if (texts.length) out.push({ role: "user", content: texts.join("\n") });
  return out;
}

/** Custom tools (`name`, `description`, `input_schema`); server tools are a 400. */
function declaredTools(body: MessagesRequest): ToolSpec[] {
  const specs = (body.tools ?? []).map((t, i): ToolSpec => {
    if (t.type != null && t.type !== "custom") unsupported(`tools[${i}].type`, t.type);
    const x = t as Record<string, unknown>;
    return {
      name: t.name,
      description: typeof x.description === "string" ? x.description : "",
      parameters: (x.input_schema as Record<string, unknown>) ??
        { type: "object", properties: {} },
    };
  });
  const choice = body.tool_choice;
  if (choice?.type === "none") return [];
  if (choice?.type === "tool") return namedTool(specs, choice.name ?? "");
  return specs;
}

/** Anthropic's `stop_reason` and `stop_sequence` of a sampled answer. */
function stopOf(
  c: SampledChoice,
  stops: string[],
  tokenizer: Tokenizer,
): { reason: string; sequence: string | null } {
  if (c.stopReason === "length") return { reason: "max_tokens", sequence: null };
  if (c.message.toolCalls?.length) return { reason: "tool_use", sequence: null };
  // The content has a client's stop string cut off; the sampled tokens still end with it.
  const text = stops.length ? tokenizer.decode(c.tokens) : "";
  const sequence = stops.find((s) => text.endsWith(s)) ?? null;
  return sequence ? { reason: "stop_sequence", sequence } : { reason: "end_turn", sequence: null };
}

/** The answer's content blocks. */
function contentBlocks(c: SampledChoice): Record<string, unknown>[] {
  const m = c.message;
  const blocks: Record<string, unknown>[] = [];
  if (m.thinking) blocks.push({ type: "thinking", thinking: m.thinking, signature: "" });
  if (m.content || !m.toolCalls?.length) blocks.push({ type: "text", text: m.content });
  for (const call of m.toolCalls ?? []) {
    blocks.push({
      type: "tool_use",
      id: `toolu_${(call.id ?? crypto.randomUUID()).replace(/^call_/, "").replaceAll("-", "")}`,
      name: call.name,
      input: typeof call.arguments === "object" && call.arguments !== null ? call.arguments : {},
    });
  }
  return blocks;
}

function messageObject(
  a: TurnAnswer,
  body: MessagesRequest,
  tokenizer: Tokenizer,
): Record<string, unknown> {
  const c = a.choices[0];
  const stop = stopOf(c, body.stop_sequences ?? [], tokenizer);
  return {
    id: `msg_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
    type: "message",
    role: "assistant",
    model: a.model,
    content: contentBlocks(c),
    stop_reason: stop.reason,
    stop_sequence: stop.sequence,
    usage: {
      input_tokens: a.usage.prompt_tokens,
      output_tokens: a.usage.completion_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

/**
 * Anthropic's stream: `message_start`, then per content block `content_block_start`, its
 * deltas (`thinking_delta`s and a `signature_delta`, `text_delta`s one per sampled token, one
 * `input_json_delta` for a tool call) and `content_block_stop`, then `message_delta` with the
 * stop reason and usage, and `message_stop`.
 */
function* messageEvents(
  message: Record<string, unknown>,
  choice: SampledChoice,
  api: ApiContext,
): Generator<NamedEvent> {
  const ev = (event: string, data: Record<string, unknown>): NamedEvent => ({
    event,
    data: { type: event, ...data },
  });
  const usage = message.usage as Record<string, number>;
  yield ev("message_start", {
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 0 },
    },
  });
  const deltas = tokenDeltas(api.tokenizer, choice);
  for (const [index, block] of (message.content as Record<string, unknown>[]).entries()) {
    if (block.type === "thinking") {
      yield ev("content_block_start", { index, content_block: { ...block, thinking: "" } });
      const text = String(block.thinking);
      const pieces = deltas.map((d) => d.reasoning_content ?? "").filter((d) => d);
      for (const thinking of pieces.join("") === text ? pieces : [text]) {
        yield ev("content_block_delta", { index, delta: { type: "thinking_delta", thinking } });
      }
      yield ev("content_block_delta", { index, delta: { type: "signature_delta", signature: "" } });
    } else if (block.type === "text") {
      yield ev("content_block_start", { index, content_block: { type: "text", text: "" } });
      const text = String(block.text);
      const pieces = deltas.map((d) => d.content ?? "").filter((d) => d);
      for (const piece of pieces.join("") === text ? pieces : [text]) {
        yield ev("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
      }
    } else {
      yield ev("content_block_start", { index, content_block: { ...block, input: {} } });
      yield ev("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    yield ev("content_block_stop", { index });
  }
  yield ev("message_delta", {
    delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
    usage: { output_tokens: usage.output_tokens },
  });
  yield ev("message_stop", {});
}
