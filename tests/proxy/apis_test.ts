/**
 * The Responses API (official `openai` client) and the Messages API (official
 * `@anthropic-ai/sdk`) through the proxy, on the real local backend (`local/games`) with forced
 * completions: text, reasoning / thinking, function calls and their outputs, streamed and not,
 * `previous_response_id`, `instructions`, `system`, `stop_reason`; both land in the same
 * sessions as chat completions; each API answers errors in its own shape and names an
 * unsupported field.
 */

import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { assert } from "../assert.ts";
import { forced, withProxy } from "./harness.ts";
import type { CompletedTurn } from "../../lib/proxy/session_types.ts";

const WEATHER = {
  name: "get_weather",
  description: "The weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const CALL = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}' +
  "\n</tool_call>";
const AFTER = "<think>\nIt said sunny.\n</think>\n\nSunny in Paris.";

/** The parsed error body a client error carries. */
interface ErrorBody {
  param?: string;
  code?: string;
  type?: string;
  error: { type: string; message: string };
}
const body = (e: unknown): ErrorBody => (e as { error: ErrorBody }).error;

/** The policy answers a weather question with a call, and the call's result with thinking. */
const taught = {
  model: "local/games",
  wrap: (s: Parameters<typeof forced>[0]) =>
    forced(s, (prompt) => {
      if (prompt.includes("<tool_response>")) return AFTER;
      if (prompt.includes("Paris?")) return CALL;
      return null;
    }),
};

Deno.test("responses: the openai client, text and function calls, previous_response_id and its outputs, reasoning, streamed and not, one session", async () => {
  const completed: CompletedTurn[] = [];
  await withProxy(async ({ client }) => {
    const tools = [{ type: "function" as const, strict: false, ...WEATHER }];
    const { data: r1, response } = await client.responses.create({
      model: "local/games",
      instructions: "Be brief.",
      input: "Paris?",
      tools,
    }).withResponse();
    assert.equal(r1.object, "response");
    assert.equal(r1.status, "completed");
    assert.match(r1.id, /^resp_[0-9a-f]{24}$/);
    assert.equal(r1.output_text, "Let me check.");
    const calls = r1.output.filter((o) => o.type === "function_call");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, "get_weather");
    assert.deepEqual(JSON.parse(calls[0].arguments), { city: "Paris" });
    assert.ok(r1.usage!.input_tokens > 0 && r1.usage!.output_tokens > 0);
    const sessionId = response.headers.get("x-session-id")!;
    assert.match(sessionId, /^sess_/);

    // The call's output, continuing from the response: reasoning and text back, streamed.
    const stream = client.responses.stream({
      model: "local/games",
      previous_response_id: r1.id,
      input: [{ type: "function_call_output", call_id: calls[0].call_id, output: "sunny" }],
      tools,
    });
    const types: string[] = [];
    stream.on("event", (e) => types.push(e.type));
    const r2 = await stream.finalResponse();
    assert.equal(r2.output_text, "Sunny in Paris.");
    const reasoning = r2.output.find((o) => o.type === "reasoning")!;
    assert.equal(reasoning.content![0].text, "It said sunny.");
    assert.equal(types[0], "response.created");
    assert.equal(types.at(-1), "response.completed");
    assert.ok(types.includes("response.output_text.delta"));
    assert.ok(types.includes("response.reasoning_text.delta"));

    // Turn 0 completed with the call's output as its next state, in the same session.
    assert.equal(completed.length, 1);
    assert.equal(completed[0].sessionId, sessionId);
    assert.deepEqual(completed[0].turn.nextState.map((m) => [m.role, m.content]), [
      ["tool", "sunny"],
    ]);
    assert.equal(completed[0].turn.observation[0].role, "system");
    assert.match(completed[0].turn.observation[0].content, /^Be brief\./);

    // An older response cannot be continued (it is not its session's latest).
    const stale = await client.responses.create({
      model: "local/games",
      previous_response_id: r1.id,
      input: "again",
    }).catch((e) => e);
    assert.ok(stale instanceof OpenAI.NotFoundError, String(stale));
    assert.equal(body(stale).code, "previous_response_not_found");
  }, { ...taught, options: { onComplete: (t) => completed.push(t) } });
});

Deno.test("responses: Codex's stateless history (developer messages, echoed items, a namespace tool) continues its session by label under history binding; unsupported fields are 400s naming them", async () => {
  const completed: CompletedTurn[] = [];
  await withProxy(async ({ client }) => {
    const h = { headers: { "session-id": "codex-thread-1" } };
    const tools = [{
      type: "namespace",
      name: "multi_agent_v1",
      tools: [{ type: "function", strict: false, ...WEATHER }],
    }];
    const input: Record<string, unknown>[] = [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "Agent." }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Paris?" }] },
    ];
    const r1 = await client.responses.create({
      model: "local/games",
      input,
      tools,
      store: false,
      stream: false,
      reasoning: { summary: "auto" },
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "codex-thread-1",
      parallel_tool_calls: true,
    } as never, h) as OpenAI.Responses.Response;
    const call = r1.output.find((o) => o.type === "function_call")!;
    // Codex replays everything, echoing the proxy's items, then the call's output.
    const echoed = r1.output.map((o) => ({ ...o }));
    await client.responses.create({
      model: "local/games",
      input: [...input, ...echoed, {
        type: "function_call_output",
        call_id: call.call_id,
        output: "sunny",
      }],
      tools,
    } as never, h);
    assert.equal(completed.length, 1);
    assert.deepEqual(completed[0].turn.nextState.map((m) => m.role), ["tool"]);

    for (
      const [extra, param] of [
        [{ background: true }, "background"],
        [{ tools: [{ type: "web_search" }] }, "tools[0].type"],
        [{
          input: [{
            role: "user",
            content: [{ type: "input_image", image_url: "data:image/png;base64,AA" }],
          }],
        }, "input[0].content[0].type"],
        [{ text: { format: { type: "json_schema", name: "x", schema: {} } } }, "text.format.type"],
      ] as const
    ) {
      const e = await client.responses.create(
        { model: "local/games", input: "hi", ...extra } as never,
      )
        .catch((x) => x);
      assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
      assert.equal(body(e).param, param);
    }
  }, {
    ...taught,
    options: { sessionBinding: "history", onComplete: (t) => completed.push(t) },
  });
});

Deno.test("messages: the @anthropic-ai/sdk client, system, tool_use and tool_result, thinking, stop_reason, streamed and not, one session by token", async () => {
  const completed: CompletedTurn[] = [];
  await withProxy(async ({ proxy }) => {
    const base = proxy.url.replace(/\/v1$/, "");
    const opener = new Anthropic({ baseURL: base, apiKey: "k", maxRetries: 0 });
    const tools = [{
      name: WEATHER.name,
      description: WEATHER.description,
      input_schema: WEATHER.parameters as never,
    }];
    const user: Anthropic.MessageParam = { role: "user", content: "Paris?" };
    const { data: m1, response } = await opener.messages.create({
      model: "local/games",
      max_tokens: 200,
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      messages: [user],
      tools,
    }).withResponse();
    assert.equal(m1.type, "message");
    assert.equal(m1.stop_reason, "tool_use");
    assert.deepEqual(m1.content.map((b) => b.type), ["text", "tool_use"]);
    const use = m1.content[1] as Anthropic.ToolUseBlock;
    assert.equal(use.name, "get_weather");
    assert.deepEqual(use.input, { city: "Paris" });
    assert.match(use.id, /^toolu_/);
    const token = response.headers.get("x-session-token")!;
    const sessionId = response.headers.get("x-session-id")!;

    // Claude Code's way: the beta route (?beta=true), streamed, with the tool's result.
    const holder = new Anthropic({
      baseURL: base,
      apiKey: "k",
      maxRetries: 0,
      defaultHeaders: { "X-Session-Token": token, "X-Turn-Reward": "0.5" },
    });
    const stream = holder.beta.messages.stream({
      model: "local/games",
      max_tokens: 200,
      system: "Be brief.",
      messages: [
        user,
        { role: "assistant", content: m1.content as never },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }],
        },
      ],
      tools,
      thinking: { type: "enabled", budget_tokens: 1024 },
    });
    const events: string[] = [];
    stream.on("streamEvent", (e) => events.push(e.type));
    const m2 = await stream.finalMessage();
    assert.equal(m2.stop_reason, "end_turn");
    assert.deepEqual(m2.content.map((b) => b.type), ["thinking", "text"]);
    assert.equal((m2.content[0] as { thinking: string }).thinking, "It said sunny.");
    assert.equal((m2.content[1] as { text: string }).text, "Sunny in Paris.");
    assert.equal(events[0], "message_start");
    assert.equal(events.at(-1), "message_stop");

    assert.equal(completed.length, 1);
    assert.equal(completed[0].sessionId, sessionId);
    assert.equal(completed[0].turn.reward, 0.5);
    assert.deepEqual(completed[0].turn.nextState.map((m) => [m.role, m.content]), [
      ["tool", "sunny"],
    ]);

    // A short limit is max_tokens.
    const cut = await opener.messages.create({
      model: "local/games",
      max_tokens: 2,
      messages: [{ role: "user", content: "Paris?" }],
    });
    assert.equal(cut.stop_reason, "max_tokens");
  }, { ...taught, options: { onComplete: (t) => completed.push(t) } });
});

Deno.test("messages: errors in Anthropic's shape: an unsupported field or block named, a wrong key, an unknown model", async () => {
  await withProxy(async ({ proxy }) => {
    const base = proxy.url.replace(/\/v1$/, "");
    const client = new Anthropic({ baseURL: base, apiKey: "secret", maxRetries: 0 });
    const ask = (extra: Record<string, unknown>) =>
      client.messages.create({
        model: "local/games",
        max_tokens: 8,
        messages: [{ role: "user", content: "hi" }],
        ...extra,
      } as never).catch((e) => e);
    for (
      const [extra, named] of [
        [{ mcp_servers: [] }, "mcp_servers"],
        [{ tools: [{ type: "web_search_20250305", name: "web_search" }] }, "tools[0].type"],
        [{
          messages: [{
            role: "user",
            content: [{
              type: "image",
              source: { type: "base64", media_type: "image/png", data: "AA" },
            }],
          }],
        }, "messages[0].content[0].type"],
      ] as const
    ) {
      const e = await ask(extra);
      assert.ok(e instanceof Anthropic.BadRequestError, `${named}: ${e}`);
      assert.equal(body(e).type, "error");
      assert.equal(body(e).error.type, "invalid_request_error");
      assert.ok(body(e).error.message.startsWith(named), body(e).error.message);
    }
    const model = await ask({ model: "claude-x" });
    assert.ok(model instanceof Anthropic.NotFoundError);
    assert.equal(body(model).error.type, "not_found_error");
    const bad = new Anthropic({ baseURL: base, apiKey: "wrong", maxRetries: 0 });
    const auth = await bad.messages.create({
      model: "local/games",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    }).catch((e) => e);
    assert.ok(auth instanceof Anthropic.AuthenticationError, String(auth));
    assert.equal(body(auth).error.type, "authentication_error");
  }, { model: "local/games", apiKey: "secret" });
});
