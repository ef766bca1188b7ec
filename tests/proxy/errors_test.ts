/**
 * Bad input and failures: every one a 4xx/5xx with OpenAI's error object, read by the official
 * client as an APIError with the status, code and param; the proxy keeps serving.
 */

import OpenAI from "openai";
import { assert } from "../assert.ts";
import { withProxy } from "./harness.ts";
import { SamplingClient } from "../../lib/tinker/mod.ts";

/** The status and error object of a raw request. */
async function raw(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const json = await res.json();
  return { status: res.status, error: json.error, headers: res.headers };
}

/** The APIError an openai call fails with. */
async function apiError(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (e) {
    if (e instanceof OpenAI.APIError) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

const hi = [{ role: "user" as const, content: "hi" }];

Deno.test("errors: malformed JSON, missing or wrong fields, context, n, body size, model, each a 4xx with OpenAI's error object", async () => {
  await withProxy(async ({ proxy, client }) => {
    const url = proxy.url;
    const bad = await raw(url, "{not json");
    assert.equal(bad.status, 400);
    assert.match(bad.error.message, /not valid JSON/);
    assert.deepEqual(Object.keys(bad.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(bad.error.type, "invalid_request_error");

    const noMessages = await raw(url, JSON.stringify({ model: "local/tiny" }));
    assert.equal(noMessages.status, 400);
    assert.equal(noMessages.error.param, "messages");
    const empty = await raw(url, JSON.stringify({ messages: [] }));
    assert.match(empty.error.message, /messages must be a non-empty list/);
    const role = await raw(url, JSON.stringify({ messages: [{ role: "wizard", content: "x" }] }));
    assert.equal(role.status, 400);
    assert.equal(role.error.param, "messages[0].role");
    const array = await raw(url, JSON.stringify([1, 2]));
    assert.equal(array.status, 400);

    const temp = await apiError(
      client.chat.completions.create({
        model: "local/tiny",
        messages: hi,
        temperature: "hot" as never,
      }),
    );
    assert.equal(temp.status, 400);
    assert.equal(temp.param, "temperature");
    const topLp = await apiError(
      client.chat.completions.create({ model: "local/tiny", messages: hi, top_logprobs: 2 }),
    );
    assert.equal(topLp.param, "top_logprobs");

    const long = await apiError(client.chat.completions.create({
      model: "local/tiny",
      messages: [{ role: "user", content: "x".repeat(300) }],
    }));
    assert.equal(long.status, 400);
    assert.equal(long.code, "context_length_exceeded");
    assert.match(long.message, /maximum context length is 256 tokens/);

    const n = await apiError(
      client.chat.completions.create({ model: "local/tiny", messages: hi, n: 9 }),
    );
    assert.equal(n.status, 400);
    assert.equal(n.param, "n");

    const big = await raw(
      url,
      JSON.stringify({ messages: [{ role: "user", content: "x".repeat(5000) }] }),
    );
    assert.equal(big.status, 413);
    assert.equal(big.error.code, "request_too_large");

    const model = await apiError(client.chat.completions.create({ model: "gpt-4o", messages: hi }));
    assert.equal(model.status, 404);
    assert.equal(model.code, "model_not_found");
    assert.match(model.message, /serves "local\/tiny"/);

    const tool = await apiError(client.chat.completions.create({
      model: "local/tiny",
      messages: hi,
      tool_choice: { type: "function", function: { name: "nope" } },
    }));
    assert.equal(tool.param, "tool_choice");
    const turnType = await apiError(
      client.chat.completions.create({ model: "local/tiny", messages: hi }, {
        headers: { "X-Turn-Type": "sometimes" },
      }),
    );
    assert.equal(turnType.status, 400);
    const reward = await apiError(
      client.chat.completions.create({ model: "local/tiny", messages: hi }, {
        headers: { "X-Turn-Reward": "lots" },
      }),
    );
    assert.equal(reward.param, "reward");
    const route = await fetch(`${url}/completions`, { method: "POST", body: "{}" });
    assert.equal(route.status, 404);
    await route.body?.cancel();

    // Still serving after all that.
    const ok = await client.chat.completions.create({
      model: "local/tiny",
      messages: hi,
      max_tokens: 2,
    });
    assert.equal(ok.choices.length, 1);
    assert.equal(proxy.stats.errors["400"] >= 8, true);
  }, { options: { maxBodyBytes: 4096 } });
});

Deno.test("errors: with an API key, a missing or wrong bearer is a 401; health stays open", async () => {
  await withProxy(async ({ proxy, client }) => {
    const none = await raw(proxy.url, JSON.stringify({ messages: hi }));
    assert.equal(none.status, 401);
    assert.equal(none.error.code, "invalid_api_key");
    assert.match(none.error.message, /missing API key: send Authorization: Bearer/);
    const wrong = new OpenAI({ baseURL: proxy.url, apiKey: "nope", maxRetries: 0 });
    const e = await apiError(wrong.chat.completions.create({ model: "local/tiny", messages: hi }));
    assert.equal(e.status, 401);
    assert.match(e.message, /invalid API key/);
    const models = await apiError(wrong.models.list());
    assert.equal(models.status, 401);
    const ok = await client.chat.completions.create({
      model: "local/tiny",
      messages: hi,
      max_tokens: 2,
    });
    assert.equal(ok.choices.length, 1);
    const health = await fetch(proxy.url.replace(/\/v1$/, "/healthz"));
    assert.deepEqual(await health.json(), { ok: true });
  }, { apiKey: "sk-test" });
});

Deno.test("errors: a failing sampler is a 502 naming it; a paused policy is a 503 with Retry-After", async () => {
  await withProxy(async ({ proxy, client, policy }) => {
    const e = await apiError(client.chat.completions.create({ model: "local/tiny", messages: hi }));
    assert.equal(e.status, 502);
    assert.equal(e.code, "sampler_error");
    assert.match(e.message, /the sampler failed: asample: HTTP 500/);

    policy.pause();
    const paused = await raw(proxy.url, JSON.stringify({ messages: hi }));
    assert.equal(paused.status, 503);
    assert.equal(paused.error.code, "submission_paused");
    assert.equal(paused.headers.get("retry-after"), "5");
    policy.resume();
    assert.equal(proxy.stats.errors["502"], 1);
  }, {
    // Every sample call fails on the server (the client retries 12 times, quickly here).
    faults: { serverError: 1, paths: "asample$" },
    wrap: (s, service) =>
      new SamplingClient(service.http, s.samplingSessionId, s.baseModel, { backoffBaseMs: 1 }),
    options: { pauseTimeoutS: 0.2 },
  });
});

Deno.test("errors: a stopping run answers 503 shutting_down, also to a turn whose sample its backend dropped", async () => {
  let stopping: (() => void) | null = null;
  await withProxy(async ({ proxy, policy }) => {
    // Ctrl-C while the turn samples: the run stops serving and its backend drops the sample.
    stopping = () => policy.stop();
    const dropped = await raw(proxy.url, JSON.stringify({ messages: hi }));
    assert.equal(dropped.status, 503);
    assert.equal(dropped.error.code, "shutting_down");
    assert.match(dropped.error.message, /^shutting down: the training run is stopping/);
    stopping = null;
    const later = await raw(proxy.url, JSON.stringify({ messages: hi }));
    assert.equal(later.status, 503, "no new turn is served");
    assert.equal(later.error.code, "shutting_down");
  }, {
    wrap: () => ({
      sample: () => {
        stopping?.();
        return Promise.reject(new Error("sample request dropped: the run is stopping"));
      },
    }),
  });
});
