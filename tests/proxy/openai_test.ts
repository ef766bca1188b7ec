/**
 * The proxy through the official `openai` client and OpenClaw's pi-ai, on the real local
 * backend: `local/games` (its context fits the tool declarations) answering two prompts with
 * forced completions (one with tool calls, one with thinking), with the model's own log-probs.
 */

import { assert } from "../assert.ts";
import { forced, renderer, sseLines, withProxy } from "./harness.ts";
import type { Message, ToolSpec } from "../../lib/renderers/types.ts";
import { installTestDeps } from "../deps.ts";

const WEATHER: ToolSpec = {
  name: "get_weather",
  description: "The weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const TIME: ToolSpec = {
  name: "get_time",
  description: "The time in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const openaiTools = [WEATHER, TIME].map((t) => ({
  type: "function" as const,
  function: { name: t.name, description: t.description, parameters: t.parameters },
}));

/** A prompt and the completion the policy is forced to answer it with. */
interface Lesson {
  messages: Message[];
  tools?: ToolSpec[];
  completion: string;
}

const TOOL_LESSON: Lesson = {
  messages: [{ role: "user", content: "Paris?" }],
  tools: [WEATHER, TIME],
  completion:
    'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}' +
    '\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"city": "Paris"}}\n</tool_call>',
};
const THINK_LESSON: Lesson = {
  messages: [{ role: "user", content: "Hi!" }],
  completion: "<think>\nA greeting.\n</think>\n\nHello, friend!",
};
const lessons = [TOOL_LESSON, THINK_LESSON];
const lessonPrompts = lessons.map((l) =>
  renderer.tokenizer.decode(
    renderer.buildGenerationPrompt(renderer.declareTools(l.messages, l.tools ?? [])),
  )
);
const taught = {
  model: "local/games",
  wrap: (s: Parameters<typeof forced>[0]) =>
    forced(s, (prompt) => lessons[lessonPrompts.indexOf(prompt)]?.completion ?? null),
};

const promptTokens = (l: Lesson) =>
  renderer.buildGenerationPrompt(renderer.declareTools(l.messages, l.tools ?? [])).length;
const completionTokens = (l: Lesson) =>
  renderer.tokenizer.encode(`${l.completion}<|im_end|>`).length;

Deno.test("proxy: the openai client, non-stream and stream, text, thinking, tool calls, logprobs, usage", async () => {
  await withProxy(async ({ client }) => {
    // Tool calls, not streamed.
    const res = await client.chat.completions.create({
      model: "local/games",
      messages: [{ role: "user", content: "Paris?" }],
      tools: openaiTools,
      temperature: 0,
    });
    const msg = res.choices[0].message;
    assert.equal(res.object, "chat.completion");
    assert.equal(res.choices[0].finish_reason, "tool_calls");
    assert.equal(msg.content, "Let me check.");
    const calls = (msg.tool_calls ?? []).map((c) => {
      assert.equal(c.type, "function");
      assert.ok(/^call_[0-9a-f]{24}$/.test(c.id), c.id);
      const fn = (c as { function: { name: string; arguments: string } }).function;
      return [fn.name, JSON.parse(fn.arguments)];
    });
    assert.deepEqual(calls, [["get_weather", { city: "Paris" }], ["get_time", { city: "Paris" }]]);
    assert.notEqual(msg.tool_calls![0].id, msg.tool_calls![1].id);
    assert.deepEqual(res.usage, {
      prompt_tokens: promptTokens(TOOL_LESSON),
      completion_tokens: completionTokens(TOOL_LESSON),
      total_tokens: promptTokens(TOOL_LESSON) + completionTokens(TOOL_LESSON),
    });
    assert.equal(res.choices[0].logprobs, null, "no log-probs unless asked");

    // The same, streamed, assembled by the client's ChatCompletionStream.
    const runner = client.chat.completions.stream({
      model: "local/games",
      messages: [{ role: "user", content: "Paris?" }],
      tools: openaiTools,
      temperature: 0,
      stream_options: { include_usage: true },
    });
    const streamed = await runner.finalChatCompletion();
    assert.equal(streamed.choices[0].finish_reason, "tool_calls");
    assert.equal(streamed.choices[0].message.content, "Let me check.");
    assert.deepEqual(
      streamed.choices[0].message.tool_calls!.map((c) => {
        const fn = (c as { function: { name: string; arguments: string } }).function;
        return [fn.name, JSON.parse(fn.arguments)];
      }),
      calls,
    );
    assert.deepEqual(streamed.usage, res.usage);

    // Thinking becomes reasoning_content; log-probs, one per completion token, with top-k.
    const think = await client.chat.completions.create({
      model: "local/games",
      messages: [{ role: "user", content: "Hi!" }],
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    const tm = think.choices[0].message as unknown as Record<string, unknown>;
    assert.equal(tm.content, "Hello, friend!");
    assert.equal(tm.reasoning_content, "A greeting.");
    const lps = think.choices[0].logprobs!.content!;
    assert.equal(lps.length, think.usage!.completion_tokens);
    assert.equal(lps.length, completionTokens(THINK_LESSON));
    assert.equal(lps.map((l) => l.token).join(""), `${THINK_LESSON.completion}<|im_end|>`);
    for (const l of lps) {
      assert.ok(l.logprob <= 0 && Number.isFinite(l.logprob));
      assert.equal(l.top_logprobs.length, 3);
      // The model's top alternatives are at least as likely as the (forced) token, unless it
      // is among them with its own log-prob.
      const top = l.top_logprobs;
      assert.ok(top[0].logprob >= top[1].logprob && top[1].logprob >= top[2].logprob);
      const same = top.find((t) => t.token === l.token);
      if (same) assert.ok(Math.abs(same.logprob - l.logprob) < 1e-3, JSON.stringify(l));
      else assert.ok(top[2].logprob >= l.logprob - 1e-3, JSON.stringify(l));
    }

    // Streamed with log-probs: the client concatenates one entry per token, none twice.
    const s2 = await client.chat.completions.stream({
      model: "local/games",
      messages: [{ role: "user", content: "Hi!" }],
      temperature: 0,
      logprobs: true,
      stream_options: { include_usage: true },
    }).finalChatCompletion();
    const m2 = s2.choices[0].message as unknown as Record<string, unknown>;
    assert.equal(m2.content, "Hello, friend!");
    const l2 = s2.choices[0].logprobs!.content!;
    assert.deepEqual(l2.map((l) => l.token), lps.map((l) => l.token));
    l2.forEach((l, i) => assert.ok(Math.abs(l.logprob - lps[i].logprob) < 1e-4));
    assert.equal(s2.usage!.completion_tokens, lps.length);
  }, taught);
});

/** What pi-ai's `stream(...).result()` assembles (the fields read here). */
interface PiResult {
  stopReason: string;
  content: { type: string; name?: string; arguments?: unknown; text?: string; thinking?: string }[];
  usage: { input: number; output: number };
}

/** pi-ai's `stream` over each request, in a process with pi-ai's own install (pi_ai_stream.ts). */
async function piStream(
  model: object,
  requests: { context: object; options: object }[],
): Promise<PiResult[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      await installTestDeps("pi-ai"),
      new URL("./pi_ai_stream.ts", import.meta.url).pathname,
      JSON.stringify(model),
      JSON.stringify(requests),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, `pi-ai failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}

Deno.test("proxy: the SSE wire as §3.5 prescribes it; pi-ai (OpenClaw's client) reads it", async () => {
  await withProxy(async ({ proxy }) => {
    const res = await fetch(`${proxy.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "local/games",
        messages: [{ role: "user", content: "Paris?" }],
        tools: openaiTools,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const lines = await sseLines(res);
    assert.ok(lines.every((l) => l.startsWith("data: ")), "no event: lines, no bare lines");
    assert.equal(lines.at(-1), "data: [DONE]");
    const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.slice(6)));
    const ids = new Set(chunks.map((c) => c.id));
    assert.equal(ids.size, 1, "one id on every chunk, the usage chunk included");
    assert.equal(new Set(chunks.map((c) => c.created)).size, 1);
    assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
    assert.ok(chunks.every((c) => !("error" in c)));
    const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.deepEqual(calls.map((c: { index: number }) => c.index), [0, 0, 1, 1]);
    assert.ok(
      calls[0].id && calls[0].type === "function" && calls[0].function.name === "get_weather",
    );
    assert.equal(calls[0].function.arguments, "");
    assert.ok(calls[2].id && calls[2].id !== calls[0].id);
    assert.equal(chunks.at(-2).choices[0].finish_reason, "tool_calls");
    const usage = chunks.at(-1);
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.usage.completion_tokens, completionTokens(TOOL_LESSON));

    // pi-ai, as OpenClaw uses it: streaming with include_usage, tool calls by id.
    const model = {
      id: "local/games",
      name: "local/games through the proxy",
      api: "openai-completions",
      provider: "tinkerbench",
      baseUrl: proxy.url,
      reasoning: true,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 1024,
      maxTokens: 128,
    };
    const toolSchemas = [WEATHER, TIME].map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    }));
    const options = { apiKey: "none", temperature: 0 };
    const [done, thought] = await piStream(model, [
      {
        context: {
          messages: [{ role: "user", content: "Paris?", timestamp: Date.now() }],
          tools: toolSchemas,
        },
        options,
      },
      {
        context: { messages: [{ role: "user", content: "Hi!", timestamp: Date.now() }] },
        options,
      },
    ]);
    assert.equal(done.stopReason, "toolUse", JSON.stringify(done));
    const piCalls = done.content.filter((b) => b.type === "toolCall");
    assert.deepEqual(
      piCalls.map((b) => [(b as { name: string }).name, (b as { arguments: unknown }).arguments]),
      [["get_weather", { city: "Paris" }], ["get_time", { city: "Paris" }]],
    );
    const text = done.content.filter((b) => b.type === "text").map((b) =>
      (b as { text: string }).text
    );
    assert.equal(text.join(""), "Let me check.");
    assert.equal(done.usage.output, completionTokens(TOOL_LESSON));
    assert.equal(done.usage.input, promptTokens(TOOL_LESSON));

    const thinking = thought.content.find((b) => b.type === "thinking") as
      | { thinking: string }
      | undefined;
    assert.equal(thinking?.thinking, "A greeting.");
    assert.equal(
      thought.content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text)
        .join(""),
      "Hello, friend!",
    );
  }, taught);
});

Deno.test("proxy: /healthz, /v1/models, and the served model name", async () => {
  await withProxy(async ({ proxy, client }) => {
    const health = await fetch(proxy.url.replace(/\/v1$/, "/healthz"));
    assert.deepEqual(await health.json(), { ok: true });
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id).sort(), ["local/tiny", "qwen3-4b"]);
    const res = await client.chat.completions.create({
      model: "qwen3-4b",
      messages: [{ role: "developer", content: "Be brief." }, {
        role: "user",
        content: [{ type: "text", text: "Hello" }, { type: "text", text: "there" }],
      }],
      max_tokens: 5,
      n: 2,
      seed: 3,
    });
    assert.equal(res.model, "qwen3-4b");
    assert.equal(res.choices.length, 2);
    assert.ok(res.choices.every((c) => c.finish_reason === "length" || c.finish_reason === "stop"));
    assert.ok(res.usage!.completion_tokens <= 10);
    const expected = renderer.buildGenerationPrompt([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hello there" },
    ]);
    assert.equal(res.usage!.prompt_tokens, expected.length, "developer → system, parts joined");
  }, { options: { servedModelName: "qwen3-4b" } });
});
