/**
 * OpenAI's Responses API on the proxy (`POST /v1/responses`, what Codex speaks), on the same
 * sessions, scoring and training as chat completions. The request's `instructions`, `input`
 * (a string, or messages, `function_call`, `function_call_output` and `reasoning` items) and
 * flat function tools (and Codex's `namespace` of functions) become the renderers' messages and
 * tools; the answer is a response object whose `output` holds a `reasoning` item (the model's
 * thinking), a `message` and `function_call` items, streamed as Responses' named SSE events or
 * not. `previous_response_id` continues the session of the response it names (that response
 * must be its session's latest), with the conversation the proxy kept.
 *
 * Errors are OpenAI's error object. A field this proxy does not support (`background`, hosted
 * tools, `text.format` json_schema, image inputs, …) is a 400 naming it; fields agents send that
 * change nothing here (`store`, `include`, `reasoning`, `prompt_cache_key`, `client_metadata`,
 * …) are accepted.
 *
 * @module
 */

import type { Hono } from "hono";
import { z } from "zod";
import type { Message, ToolCall, ToolSpec } from "../renderers/types.ts";
import { openAIToolCall, type SampledChoice, type Usage } from "./completion.ts";
import { ProxyError, requestError, strictRequestError } from "./errors.ts";
import { checkNesting, DEFAULT_TEMPERATURE, namedTool } from "./request.ts";
import { responseEvents } from "./responses_stream.ts";
import { answerOrEvents, type ApiContext, type TurnAnswer } from "./turn.ts";

const Loose = z.looseObject({ type: z.string().optional() });

const FunctionToolSchema = z.object({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

/** The body of `POST /v1/responses` (unknown fields are a 400 naming them). */
export const ResponsesRequestSchema = z.object({
  model: z.string().min(1).optional(),
  input: z.union([z.string(), z.array(Loose)]),
  instructions: z.string().nullish(),
  tools: z.array(Loose).nullish(),
  tool_choice: z.union([
    z.enum(["none", "auto", "required"]),
    z.object({ type: z.literal("function"), name: z.string() }),
  ]).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  stream: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  text: z.object({
    format: z.object({ type: z.literal("text") }).optional(),
    verbosity: z.string().nullish(),
  }).nullish(),
  truncation: z.literal("disabled").nullish(),
  include: z.array(z.enum(["reasoning.encrypted_content", "message.output_text.logprobs"]))
    .nullish(),
  // Accepted, and change nothing here.
  store: z.boolean().nullish(),
  reasoning: z.looseObject({}).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.string().nullish(),
  client_metadata: z.record(z.string(), z.unknown()).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  service_tier: z.string().nullish(),
  stream_options: z.looseObject({}).nullish(),
  max_tool_calls: z.number().int().min(1).nullish(),
}).strict();

type ResponsesRequest = z.infer<typeof ResponsesRequestSchema>;

/** Mounts `POST /v1/responses`. */
export function mountResponses(app: Hono, api: ApiContext): void {
  app.post("/v1/responses", async (c) => {
    const json = await api.requestJson(c.req.raw);
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      throw new ProxyError(400, "the request body must be a JSON object");
    }
    checkNesting(json);
    const parsed = ResponsesRequestSchema.safeParse(json);
    if (!parsed.success) throw strictRequestError(parsed.error);
    const body = parsed.data;
    const meta = api.turnMeta(c.req.raw, {});
    let history: Message[] = [];
    if (body.previous_response_id) {
      const from = api.sessions.fromResponse(body.previous_response_id);
      if (!from) {
        throw new ProxyError(
          404,
          `previous_response_id ${
            JSON.stringify(body.previous_response_id)
          } is not the latest response of an open session`,
          { param: "previous_response_id", code: "previous_response_not_found" },
        );
      }
      meta.token = from.token;
      history = from.conversation;
      if (history[0]?.role === "system" && body.instructions != null) history = history.slice(1);
    }
    const messages = [
      ...(body.instructions ? [{ role: "system" as const, content: body.instructions }] : []),
      ...history,
      ...inputMessages(body.input),
    ];
    if (messages.length === 0) throw new ProxyError(400, "input is empty", { param: "input" });
    const responseId = `resp_${hex(24)}`;
    const a = await api.serveTurn({
      req: {
        messages,
        tools: declaredTools(body.tools ?? [], body.tool_choice ?? "auto"),
        sampling: {
          temperature: body.temperature ?? DEFAULT_TEMPERATURE,
          topP: body.top_p ?? 1,
          topK: -1,
          maxTokens: body.max_output_tokens ?? null,
          stop: [],
          n: 1,
          logprobs: false,
          topLogprobs: 0,
        },
      },
      meta,
      model: body.model,
      responseId,
    });
    const response = responseObject(responseId, body, a);
    return answerOrEvents(
      c.env,
      a,
      response,
      body.stream ? () => responseEvents(response, a.choices[0], api) : null,
    );
  });
}

/** Responses' input as the renderers' messages (see the module's rules). */
function inputMessages(input: ResponsesRequest["input"]): Message[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  const out: Message[] = [];
  let thinking: string | null = null;
  const lastAssistant = () => {
    const m = out.at(-1);
    return m?.role === "assistant" ? m : null;
  };
  for (const [i, raw] of input.entries()) {
    const item = raw as Record<string, unknown>;
    const type = item.type ?? "message";
    const where = `input[${i}]`;
    if (type === "message") {
      const role = String(item.role);
      const content = textOf(item.content, `${where}.content`);
      if (role === "assistant") {
        const open = lastAssistant();
        if (open && !open.content && !open.toolCalls?.length) open.content = content;
        else out.push({ role: "assistant", content, ...(thinking ? { thinking } : {}) });
        thinking = null;
      } else if (role === "user") out.push({ role: "user", content });
      else if (role === "system" || role === "developer") out.push({ role: "system", content });
      else {throw new ProxyError(400, `${where}.role ${JSON.stringify(role)} is not a role`, {
          param: `${where}.role`,
        });}
    } else if (type === "reasoning") {
      const parts = [...asArray(item.content), ...asArray(item.summary)] as { text?: unknown }[];
      const text = parts.map((p) => typeof p.text === "string" ? p.text : "").join("\n");
      out.push({ role: "assistant", content: "", ...(text ? { thinking: text } : {}) });
    } else if (type === "function_call") {
      if (typeof item.name !== "string" || typeof item.arguments !== "string") {
        throw new ProxyError(400, `${where}: a function_call needs name and arguments`, {
          param: where,
        });
      }
      const call: ToolCall = { name: item.name, arguments: parseArgs(item.arguments) };
      if (typeof item.call_id === "string") call.id = item.call_id;
      const open = lastAssistant();
      if (open) open.toolCalls = [...(open.toolCalls ?? []), call];
      else out.push({ role: "assistant", content: "", toolCalls: [call] });
    } else if (type === "function_call_output") {
      const content = typeof item.output === "string"
        ? item.output
        : textOf(item.output, `${where}.output`);
      out.push({
        role: "tool",
        content,
        ...(typeof item.call_id === "string" ? { toolCallId: item.call_id } : {}),
      });
    } else {
      throw new ProxyError(400, `${where}.type ${JSON.stringify(type)} is not supported`, {
        param: `${where}.type`,
        code: "unsupported_parameter",
      });
    }
  }
  return out;
}

/** A message's content: a string, or text parts (other parts are a 400 naming them). */
function textOf(content: unknown, where: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) {
    throw new ProxyError(400, `${where} must be a string or a list of parts`, { param: where });
  }
  return content.map((p: { type?: unknown; text?: unknown; refusal?: unknown }, k) => {
    if (p.type === "input_text" || p.type === "output_text") return String(p.text ?? "");
    if (p.type === "refusal") return String(p.refusal ?? "");
    throw new ProxyError(400, `${where}[${k}].type ${JSON.stringify(p.type)} is not supported`, {
      param: `${where}[${k}].type`,
      code: "unsupported_parameter",
    });
  }).join("");
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function parseArgs(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s; // arguments that are not JSON stay text, as the model wrote them
  }
}

/** Flat function tools, and the functions of Codex's `namespace` tools; others are a 400. */
function declaredTools(
  tools: Record<string, unknown>[],
  choice: NonNullable<ResponsesRequest["tool_choice"]>,
): ToolSpec[] {
  const specs: ToolSpec[] = [];
  const add = (t: unknown, where: string) => {
    const f = FunctionToolSchema.safeParse(t);
    if (!f.success) {
      const type = (t as { type?: unknown }).type;
      if (type !== "function") {
        throw new ProxyError(
          400,
          `${where}.type ${
            JSON.stringify(type)
          } is not supported: this proxy serves function tools`,
          {
            param: `${where}.type`,
            code: "unsupported_parameter",
          },
        );
      }
      const e = requestError(f.error);
      throw new ProxyError(400, `${where}.${e.message}`, { param: where });
    }
    specs.push({
      name: f.data.name,
      description: f.data.description ?? "",
      parameters: f.data.parameters ?? { type: "object", properties: {} },
    });
  };
  for (const [i, t] of tools.entries()) {
    if (t.type === "namespace") {
      for (const [k, inner] of asArray(t.tools).entries()) add(inner, `tools[${i}].tools[${k}]`);
    } else add(t, `tools[${i}]`);
  }
  if (choice === "none") return [];
  if (typeof choice === "object") return namedTool(specs, choice.name);
  return specs;
}

/** The output items of a sampled answer: its reasoning, its message, its function calls. */
function outputItems(c: SampledChoice): Record<string, unknown>[] {
  const m = c.message;
  const items: Record<string, unknown>[] = [];
  if (m.thinking) {
    items.push({
      type: "reasoning",
      id: `rs_${hex(24)}`,
      summary: [],
      content: [{ type: "reasoning_text", text: m.thinking }],
      status: "completed",
    });
  }
  const calls = (m.toolCalls ?? []).map(openAIToolCall);
  if (m.content || !calls.length) {
    items.push({
      type: "message",
      id: `msg_${hex(24)}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: m.content, annotations: [] }],
    });
  }
  for (const call of calls) {
    items.push({
      type: "function_call",
      id: `fc_${hex(24)}`,
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: "completed",
    });
  }
  return items;
}

function responseUsage(u: Usage): Record<string, unknown> {
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.total_tokens,
  };
}

/** The response object (non-streamed body, and the payload of `response.completed`). */
function responseObject(
  id: string,
  body: ResponsesRequest,
  a: TurnAnswer,
): Record<string, unknown> {
  const c = a.choices[0];
  const cut = c.stopReason === "length";
  return {
    id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: cut ? "incomplete" : "completed",
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    error: null,
    model: a.model,
    instructions: body.instructions ?? null,
    output: outputItems(c),
    previous_response_id: body.previous_response_id ?? null,
    tools: body.tools ?? [],
    tool_choice: body.tool_choice ?? "auto",
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    temperature: body.temperature ?? DEFAULT_TEMPERATURE,
    top_p: body.top_p ?? 1,
    max_output_tokens: body.max_output_tokens ?? null,
    reasoning: body.reasoning ?? null,
    store: body.store ?? false,
    text: { format: { type: "text" } },
    truncation: "disabled",
    metadata: body.metadata ?? {},
    usage: responseUsage(a.usage),
  };
}

function hex(n: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(n / 2)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
