/**
 * Session bookkeeping: next states, side turns, done, idle flush, prefix matching (OpenClaw's
 * trailing context included), through the HTTP proxy and the official `openai` client.
 */

import OpenAI from "openai";
import { assert } from "../assert.ts";
import { forced, withProxy } from "./harness.ts";
import type { CompletedTurn } from "../../lib/proxy/sessions.ts";
import type { ServedRequest } from "../../lib/proxy/server.ts";
import type { SamplingClient } from "../../lib/tinker/mod.ts";
import type { Sampler } from "../../lib/rollout/mod.ts";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** One request of a conversation; returns the answer as the client would replay it. */
async function ask(
  client: OpenAI,
  messages: Msg[],
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Promise<Msg> {
  const res = await client.chat.completions.create(
    { model: "local/tiny", messages, max_tokens: 4, ...extra } as never,
    { headers },
  ) as OpenAI.Chat.Completions.ChatCompletion;
  return { role: "assistant", content: res.choices[0].message.content };
}

function collector() {
  const completed: CompletedTurn[] = [];
  const served: ServedRequest[] = [];
  return {
    completed,
    served,
    options: {
      onComplete: (t: CompletedTurn) => completed.push(t),
      onServed: (s: ServedRequest) => served.push(s),
    },
  };
}

Deno.test("sessions: the next main turn gives the previous its next state and reward; side turns are served only; done flushes", async () => {
  const c = collector();
  await withProxy(async ({ client }) => {
    const h = { "X-Session-Id": "s1" };
    const sys: Msg = { role: "system", content: "Play." };
    const u1: Msg = { role: "user", content: "Guess 1-10." };
    const a1 = await ask(client, [sys, u1], h);
    assert.equal(c.completed.length, 0, "turn 0 waits for its next state");

    // A side turn in the same session (a heartbeat): served, changes nothing.
    await ask(client, [sys, { role: "user", content: "heartbeat" }], {
      ...h,
      "X-Turn-Type": "side",
    });
    assert.equal(c.completed.length, 0);

    const u2: Msg = { role: "user", content: "Higher." };
    const a2 = await ask(client, [sys, u1, a1, u2], { ...h, "X-Turn-Reward": "0.5" });
    assert.equal(c.completed.length, 1);
    const t0 = c.completed[0];
    assert.equal(t0.sessionId, "s1");
    assert.equal(t0.index, 0);
    assert.deepEqual(t0.turn.nextState, [{ role: "user", content: "Higher." }]);
    assert.equal(t0.turn.reward, 0.5);
    assert.ok(t0.rewarded);
    assert.deepEqual(t0.turn.observation.map((m) => m.role), ["system", "user"]);
    assert.equal(t0.turn.samplerVersion, 0);
    assert.equal(t0.turn.logprobs.length, t0.turn.actionTokens.length);

    // Body fields work as the headers do; session_done flushes this turn without a next state.
    const u3: Msg = { role: "user", content: "Lower." };
    await ask(client, [sys, u1, a1, u2, a2, u3], {}, {
      session_id: "s1",
      session_done: true,
      reward: -1,
    });
    assert.equal(c.completed.length, 3);
    const [t1, t2] = c.completed.slice(1);
    assert.equal(t1.index, 1);
    assert.deepEqual(t1.turn.observation, [{ role: "user", content: "Higher." }]);
    assert.deepEqual(t1.turn.nextState, [{ role: "user", content: "Lower." }]);
    assert.equal(t1.turn.reward, -1);
    assert.equal(t2.index, 2);
    assert.deepEqual(t2.turn.nextState, []);
    assert.equal(t2.end, "done");
    assert.ok(!t2.rewarded);
    // The prompt of turn 1 extends turn 0's prompt and action (one datum for the session).
    const prefix = [...t0.turn.observationTokens, ...t0.turn.actionTokens];
    assert.deepEqual(t1.turn.observationTokens.slice(0, prefix.length), prefix);

    assert.deepEqual(c.served.map((s) => s.turnType), ["main", "side", "main", "main"]);
    assert.equal(c.served[1].sessionId, "s1");
  }, { options: c.options, wrap: (s) => forced(s, () => "I guess 5.") });
});

Deno.test("sessions: requests without ids join the session they extend; OpenClaw's trailing context is not a next state", async () => {
  const c = collector();
  await withProxy(async ({ client, proxy }) => {
    const sys: Msg = { role: "system", content: "You are an agent." };
    // Two conversations with no headers at all.
    const ua: Msg = { role: "user", content: "Task A" };
    const ub: Msg = { role: "user", content: "Task B" };
    const aa = await ask(client, [sys, ua]);
    const ab = await ask(client, [sys, ub]);
    assert.equal(proxy.sessions.size, 2);
    await ask(client, [sys, ub, ab, { role: "user", content: "B, again" }]);
    await ask(client, [sys, ua, aa, { role: "user", content: "A, again" }]);
    assert.equal(proxy.sessions.size, 2, "each extended its own session");
    const [b0, a0] = c.completed;
    assert.deepEqual(b0.turn.nextState, [{ role: "user", content: "B, again" }]);
    assert.deepEqual(a0.turn.nextState, [{ role: "user", content: "A, again" }]);
    assert.notEqual(a0.sessionId, b0.sessionId);

    // OpenClaw: every request ends with an internal context block the next one does not replay;
    // its affinity header names the session.
    const h = { session_id: "oc:0" };
    const ctx = (k: number): Msg => ({
      role: "user",
      content: [{ type: "text", text: `ctx ${k}` }],
    });
    const u1: Msg = { role: "user", content: "Book a table." };
    const a1 = await ask(client, [sys, u1, ctx(1)], h);
    const u2: Msg = { role: "user", content: "For two, please." };
    const a2 = await ask(client, [sys, u1, a1, u2, ctx(2)], h);
    const t1 = c.completed.at(-1)!;
    assert.equal(t1.sessionId, "oc:0");
    assert.deepEqual(t1.turn.nextState, [{ role: "user", content: "For two, please." }]);
    // Without its headers, the same traffic still finds the session by prefix.
    const u3: Msg = { role: "user", content: "At eight." };
    await ask(client, [sys, u1, a1, u2, a2, u3, ctx(3)], {});
    const t2 = c.completed.at(-1)!;
    assert.equal(t2.sessionId, "oc:0");
    assert.equal(t2.index, 1);
    assert.deepEqual(t2.turn.nextState, [{ role: "user", content: "At eight." }]);
    assert.deepEqual(t2.turn.observation.map((m) => m.content), ["For two, please.", "ctx 2"]);
  }, { options: c.options });
});

Deno.test("sessions: an idle session is flushed, its last turn without a next state", async () => {
  const c = collector();
  await withProxy(async ({ client, proxy }) => {
    await ask(client, [{ role: "user", content: "hello" }], { "X-Session-Id": "idle" });
    assert.equal(proxy.sessions.size, 1);
    const deadline = Date.now() + 5_000;
    while (c.completed.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(c.completed.length, 1);
    assert.equal(c.completed[0].end, "idle");
    assert.deepEqual(c.completed[0].turn.nextState, []);
    assert.equal(proxy.sessions.size, 0);
  }, { options: { ...c.options, sessionIdleS: 0.3 } });
});

Deno.test("sessions: /v1/sessions/{id}/done gives the last turn its next state and reward without sampling", async () => {
  const c = collector();
  await withProxy(async ({ client }) => {
    const u1: Msg = { role: "user", content: "Guess." };
    const a1 = await ask(client, [u1], { "X-Session-Id": "end" });
    const done = await client.post("/sessions/end/done", {
      body: { messages: [u1, a1, { role: "user", content: "Correct!" }], reward: 1 },
    });
    assert.deepEqual(done, { ok: true, session_id: "end" });
    assert.equal(c.completed.length, 1);
    assert.deepEqual(c.completed[0].turn.nextState, [{ role: "user", content: "Correct!" }]);
    assert.equal(c.completed[0].turn.reward, 1);
    assert.equal(c.served.length, 1, "nothing sampled");
    const again = await fetch(`${client.baseURL}/sessions/end/done`, { method: "POST" });
    assert.equal(again.status, 404);
    assert.equal((await again.json()).error.code, "session_not_found");
  }, { options: c.options });
});

Deno.test("sessions: a client that goes away before its answer loses that turn and nothing else", async () => {
  const c = collector();
  // The sampler takes a while, so the client can leave while its request is being sampled.
  const slow = (s: SamplingClient): Sampler => ({
    sample: async (args) => {
      await new Promise((r) => setTimeout(r, 300));
      return await s.sample(args);
    },
  });
  await withProxy(async ({ client, proxy }) => {
    const h = { "X-Session-Id": "s" };
    const u1: Msg = { role: "user", content: "one" };
    const a1 = await ask(client, [u1], h);
    // A client that dies mid-request: its socket closes while the answer is being sampled.
    const body = JSON.stringify({
      model: "local/tiny",
      messages: [u1, a1, { role: "user", content: "two" }],
      max_tokens: 4,
      stream: true,
    });
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    await conn.write(new TextEncoder().encode(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `x-session-id: s\r\ncontent-length: ${
          new TextEncoder().encode(body).length
        }\r\n\r\n${body}`,
    ));
    await new Promise((r) => setTimeout(r, 100));
    conn.close();
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(proxy.stats.disconnected, 1);
    // Turn 0 still got its next state (the request said it); the lost turn is not in the session.
    assert.equal(c.completed.length, 1);
    assert.deepEqual(c.completed[0].turn.nextState, [{ role: "user", content: "two" }]);
    // The client retries: the session goes on from turn 0, and another session is unaffected.
    const [retry, other] = await Promise.all([
      ask(client, [u1, a1, { role: "user", content: "two" }], h),
      ask(client, [{ role: "user", content: "elsewhere" }], { "X-Session-Id": "t" }),
    ]);
    assert.ok(retry && other);
    assert.equal(c.completed.length, 1, "the retry completes nothing twice");
    assert.equal(c.served.filter((s) => s.sessionId === "s").length, 2);
  }, { options: c.options, wrap: slow });
});
