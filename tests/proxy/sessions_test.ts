/**
 * Session bookkeeping: next states, side turns, done, idle flush, prefix matching (OpenClaw's
 * trailing context included), through the HTTP proxy and the official `openai` client.
 */

import type OpenAI from "openai";
import { assert } from "../assert.ts";
import { askFor, forced, renderer, withProxy } from "./harness.ts";
import type { CompletedTurn, SessionEnd } from "../../lib/proxy/session_types.ts";
import type { ServedRequest } from "../../lib/proxy/options.ts";
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
  return (await askFor(client, messages, headers, extra)).answer;
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
    const sys: Msg = { role: "system", content: "Play." };
    const u1: Msg = { role: "user", content: "Guess 1-10." };
    const opened = await askFor(client, [sys, u1], { "X-Session-Id": "my-label" });
    const a1 = opened.answer;
    assert.match(opened.id!, /^sess_[0-9a-f]{24}$/, "the proxy issues the id");
    assert.match(opened.token!, /^[0-9a-f]{64}$/);
    const h = { "X-Session-Token": opened.token! };
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
    assert.equal(t0.sessionId, opened.id);
    assert.equal(t0.index, 0);
    assert.deepEqual(t0.turn.nextState, [{ role: "user", content: "Higher." }]);
    assert.equal(t0.turn.reward, 0.5);
    assert.ok(t0.rewarded);
    assert.deepEqual(t0.turn.observation.map((m) => m.role), ["system", "user"]);
    assert.equal(t0.turn.samplerVersion, 0);
    assert.equal(t0.turn.logprobs.length, t0.turn.actionTokens.length);

    // Body fields work as the headers do; session_done flushes this turn without a next state.
    const u3: Msg = { role: "user", content: "Lower." };
    await ask(client, [sys, u1, a1, u2, a2, u3], h, { session_done: true, reward: -1 });
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
    assert.equal(c.served[1].sessionId, opened.id);
  }, { options: c.options, wrap: (s) => forced(s, () => "I guess 5.") });
});

Deno.test("sessions: with history binding, requests without a token join the session they extend (same label); OpenClaw's trailing context is not a next state", async () => {
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
    // its affinity header labels the session.
    const h = { session_id: "oc:0" };
    const ctx = (k: number): Msg => ({
      role: "user",
      content: [{ type: "text", text: `ctx ${k}` }],
    });
    const u1: Msg = { role: "user", content: "Book a table." };
    const first = await askFor(client, [sys, u1, ctx(1)], h);
    const a1 = first.answer;
    const u2: Msg = { role: "user", content: "For two, please." };
    const second = await askFor(client, [sys, u1, a1, u2, ctx(2)], h);
    assert.equal(second.id, first.id);
    assert.equal(second.token, null, "only the opener gets the token");
    const t1 = c.completed.at(-1)!;
    assert.equal(t1.sessionId, first.id);
    assert.deepEqual(t1.turn.nextState, [{ role: "user", content: "For two, please." }]);
    // Without its label, the same traffic opens a session of its own: a label binds.
    const u3: Msg = { role: "user", content: "At eight." };
    const unlabelled = await askFor(client, [sys, u1, a1, u2, second.answer, u3, ctx(3)], {});
    assert.notEqual(unlabelled.id, first.id);
    assert.equal(c.completed.at(-1), t1, "nothing completed in the labelled session");
    // With it, the session goes on.
    await ask(client, [sys, u1, a1, u2, second.answer, u3, ctx(3)], h);
    const t2 = c.completed.at(-1)!;
    assert.equal(t2.sessionId, first.id);
    assert.equal(t2.index, 1);
    assert.deepEqual(t2.turn.nextState, [{ role: "user", content: "At eight." }]);
    assert.deepEqual(t2.turn.observation.map((m) => m.content), ["For two, please.", "ctx 2"]);
  }, { options: { ...c.options, sessionBinding: "history" } });
});

Deno.test("sessions: a static X-Turn-Reward (an agent CLI's only reward setting) rewards every next turn; with history binding the opener's rewards nothing and is counted, with token binding it is a 400", async () => {
  const c = collector();
  const sys: Msg = { role: "system", content: "You are an agent." };
  const u1: Msg = { role: "user", content: "List the files." };
  const h = { "X-Turn-Reward": "1", "X-Session-Id": "cli-1" };
  await withProxy(async ({ client, proxy }) => {
    const first = await askFor(client, [sys, u1], h);
    assert.equal(proxy.stats.rewardsWithoutTurn, 1);
    const u2: Msg = { role: "user", content: "Now the dates." };
    const second = await askFor(client, [sys, u1, first.answer, u2], h);
    assert.equal(second.id, first.id, "one session");
    assert.equal(c.completed.length, 1);
    assert.equal(c.completed[0].turn.reward, 1, "the second request rewards the first turn");
    assert.equal(proxy.stats.rewardsWithoutTurn, 1, "a continuation's reward has its turn");
  }, { options: { ...c.options, sessionBinding: "history" } });
  await withProxy(async ({ client, proxy }) => {
    const err = await askFor(client, [sys, u1], h).then(() => null, (e) => e);
    assert.equal(err?.status, 400);
    assert.equal(err?.code, "no_session_to_reward");
    assert.equal(proxy.sessions.size, 0);
  });
});

Deno.test("sessions: with token binding (the default), only the token continues a session; an edited history is a counted break", async () => {
  const c = collector();
  await withProxy(async ({ client, proxy }) => {
    const u1: Msg = { role: "user", content: "one" };
    const first = await askFor(client, [u1], { "X-Session-Id": "x" });
    // The same label and an exact continuation, but no token: a new session.
    const other = await askFor(client, [u1, first.answer, { role: "user", content: "two" }], {
      "X-Session-Id": "x",
    });
    assert.notEqual(other.id, first.id);
    assert.equal(c.completed.length, 0);
    // The holder edits its history: the session goes on, and the break is counted.
    await ask(client, [{ role: "user", content: "uno" }, { role: "user", content: "dos" }], {
      "X-Session-Token": first.token!,
    });
    assert.equal(c.completed.length, 1);
    assert.equal(c.completed[0].sessionId, first.id);
    assert.equal(proxy.stats.historyBreaks, 1);
    assert.equal(proxy.sessions.historyBreaks, 1);
    // A token for no open session is a 404 naming it.
    const res = await fetch(`${client.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-token": "f".repeat(64) },
      body: JSON.stringify({ messages: [u1], max_tokens: 2 }),
    });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, "session_not_found");
  }, { options: c.options });
});

Deno.test("sessions: an idle session is flushed, its last turn without a next state, and leaves a record", async () => {
  const c = collector();
  const ends: SessionEnd[] = [];
  await withProxy(async ({ client, proxy }) => {
    await ask(client, [{ role: "user", content: "hello" }], { "X-Session-Id": "idle" });
    assert.equal(proxy.sessions.size, 1);
    const deadline = Date.now() + 10_000;
    while (c.completed.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(c.completed.length, 1);
    assert.equal(c.completed[0].end, "idle");
    assert.deepEqual(c.completed[0].turn.nextState, []);
    assert.equal(proxy.sessions.size, 0);
    assert.equal(ends.length, 1, "the idle session leaves its record");
    assert.equal(ends[0].end, "idle");
    assert.equal(ends[0].turns, 1);
    assert.equal(ends[0].label, "idle");
  }, {
    options: { ...c.options, sessionIdleS: 1.5, onSessionEnd: (e: SessionEnd) => ends.push(e) },
  });
});

Deno.test("sessions: /v1/sessions/{id}/done with the token gives the last turn its next state and reward without sampling", async () => {
  const c = collector();
  await withProxy(async ({ client }) => {
    const u1: Msg = { role: "user", content: "Guess." };
    const { answer: a1, id, token } = await askFor(client, [u1]);
    const done = await client.post(`/sessions/${id}/done`, {
      body: { messages: [u1, a1, { role: "user", content: "Correct!" }], reward: 1 },
      headers: { "X-Session-Token": token! },
    });
    assert.deepEqual(done, { ok: true, session_id: id });
    assert.equal(c.completed.length, 1);
    assert.deepEqual(c.completed[0].turn.nextState, [{ role: "user", content: "Correct!" }]);
    assert.equal(c.completed[0].turn.reward, 1);
    assert.equal(c.served.length, 1, "nothing sampled");
    const again = await fetch(`${client.baseURL}/sessions/${id}/done`, {
      method: "POST",
      headers: { "x-session-token": token! },
    });
    assert.equal(again.status, 404);
    assert.equal((await again.json()).error.code, "session_not_found");
  }, { options: c.options });
});

Deno.test("sessions: a session ended by X-Session-Done takes a late reward through /done", async () => {
  const c = collector();
  const ends: SessionEnd[] = [];
  await withProxy(async ({ client }) => {
    const u1: Msg = { role: "user", content: "Solve it." };
    const { id, token } = await askFor(client, [u1], { "X-Session-Done": "1" });
    assert.equal(c.completed.length, 0, "the last turn waits for its reward");
    await client.post(`/sessions/${id}/done`, {
      body: { reward: 0.75 },
      headers: { "X-Session-Token": token! },
    });
    assert.equal(c.completed.length, 1);
    assert.equal(c.completed[0].turn.reward, 0.75);
    assert.ok(c.completed[0].rewarded);
    assert.equal(c.completed[0].end, "done");
    assert.equal(ends.length, 1);
    assert.ok(ends[0].late_reward);
    // Without a reward, the held turn completes unrewarded when the window closes.
    await askFor(client, [{ role: "user", content: "Another." }], { "X-Session-Done": "1" });
    const deadline = Date.now() + 30_000;
    while (c.completed.length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(c.completed.length, 2);
    assert.ok(!c.completed[1].rewarded);
    assert.equal(ends.length, 2);
    assert.ok(!ends[1].late_reward);
  }, {
    // Wide enough for a loaded machine between the answer and the /done that follows (0.4 s was not).
    options: { ...c.options, lateRewardS: 3, onSessionEnd: (e: SessionEnd) => ends.push(e) },
  });
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
    const u1: Msg = { role: "user", content: "one" };
    const { answer: a1, token, id } = await askFor(client, [u1]);
    const h = { "X-Session-Token": token! };
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
        `x-session-token: ${token}\r\ncontent-length: ${
          new TextEncoder().encode(body).length
        }\r\n\r\n${body}`,
    ));
    // Gone once the request is in (its sampling takes 300 ms more); the proxy notices when the
    // answer cannot be delivered. Waited for, not timed: a loaded machine takes its time.
    await until(() => proxy.stats.requests === 2);
    conn.close();
    await until(() => proxy.stats.disconnected > 0);
    assert.equal(proxy.stats.disconnected, 1);
    // Turn 0 still got its next state (the request said it); the lost turn is not in the session.
    assert.equal(c.completed.length, 1);
    assert.deepEqual(c.completed[0].turn.nextState, [{ role: "user", content: "two" }]);
    // The client retries: the session goes on from turn 0, and another session is unaffected.
    const [retry, other] = await Promise.all([
      ask(client, [u1, a1, { role: "user", content: "two" }], h),
      ask(client, [{ role: "user", content: "elsewhere" }]),
    ]);
    assert.ok(retry && other);
    assert.equal(c.completed.length, 1, "the retry completes nothing twice");
    assert.equal(c.served.filter((s) => s.sessionId === id).length, 2);
  }, { options: c.options, wrap: slow });
});

Deno.test("sessions: token-exact turns: a turn's prompt continues the previous prompt and sampled tokens (thinking the client drops included); spans name each token's message", async () => {
  const c = collector();
  await withProxy(async ({ client, proxy }) => {
    const u1: Msg = { role: "user", content: "Hi!" };
    const room = { max_tokens: 64 };
    const first = await askFor(client, [u1], {}, room);
    const h = { "X-Session-Token": first.token! };
    // The client replays the answer without its reasoning (OpenAI clients do): re-rendering
    // would drop the sampled <think> block; the prompt keeps the sampled tokens instead.
    const u2: Msg = { role: "user", content: "And?" };
    const a2 = await ask(client, [u1, first.answer, u2], h, room);
    await ask(client, [u1, first.answer, u2, a2, { role: "user", content: "Bye." }], h, room);
    const [t0, t1] = c.completed;
    const prefix = [...t0.turn.observationTokens, ...t0.turn.actionTokens];
    assert.ok(
      renderer.tokenizer.decode(t0.turn.actionTokens).startsWith("<think>"),
      "the sampled thinking",
    );
    assert.deepEqual(t1.turn.observationTokens.slice(0, prefix.length), prefix);
    assert.ok(!t1.historyBreak);
    assert.equal(proxy.stats.historyBreaks, 0);
    // Spans: every prompt token is attributed, in order; the answer's tokens to message 1.
    const spans = t1.spans!;
    assert.equal(spans[0][0], 0);
    assert.equal(spans.at(-1)![1], t1.turn.observationTokens.length);
    for (let k = 1; k < spans.length; k++) assert.equal(spans[k][0], spans[k - 1][1]);
    assert.ok(
      spans.some(([s, e, m]) =>
        m === 1 && s === t0.turn.observationTokens.length && e === prefix.length
      ),
      JSON.stringify(spans),
    );
    assert.equal(t1.messages[spans.at(-2)![2]].content, "And?");
  }, {
    options: c.options,
    wrap: (s) =>
      forced(
        s,
        (p) =>
          p.endsWith("Hi!<|im_end|>\n<|im_start|>assistant\n")
            ? "<think>\nA greeting.\n</think>\n\nHello!"
            : "Sure.",
      ),
  });
});

Deno.test("sessions: an answer cut by the length limit cannot be continued token for token: the next turn is a counted break", async () => {
  const c = collector();
  await withProxy(async ({ client, proxy }) => {
    const u1: Msg = { role: "user", content: "Count." };
    const first = await askFor(client, [u1], {}, { max_tokens: 2 });
    await ask(client, [u1, first.answer, { role: "user", content: "Go on." }], {
      "X-Session-Token": first.token!,
    });
    assert.equal(c.completed.length, 1);
    assert.equal(proxy.stats.historyBreaks, 1);
    assert.equal(proxy.sessions.historyBreaks, 1);
  }, { options: c.options, wrap: (s) => forced(s, () => "one two three four") });
});

Deno.test("sessions: closing the proxy (a run at --max-steps) answers the requests in flight, then stops", async () => {
  const c = collector();
  const slow = (s: SamplingClient): Sampler => ({
    sample: async (args) => {
      await new Promise((r) => setTimeout(r, 400));
      return await s.sample(args);
    },
  });
  let closed: Promise<void> | undefined;
  await withProxy(async ({ client, proxy }) => {
    const inFlight = [
      askFor(client, [{ role: "user", content: "one" }]).then((r) => r.answer.content ? 1 : 0),
      client.chat.completions.create({
        model: "local/tiny",
        messages: [{ role: "user", content: "two" }],
        max_tokens: 4,
        stream: true,
      }).then(async (s) => {
        let n = 0;
        for await (const _ of s) n++;
        return n;
      }),
    ];
    await until(() => proxy.stats.requests === 2); // both in flight (sampling takes 400 ms)
    closed = proxy.close();
    const [a, chunks] = await Promise.all(inFlight);
    assert.equal(a, 1);
    assert.ok((chunks as number) >= 2, "the stream was delivered whole");
    await closed;
    assert.equal(c.served.length, 2);
    assert.equal(c.completed.length, 2, "their turns complete as the sessions close");
    const after = await fetch(`${proxy.url}/models`).catch((e) => e);
    assert.ok(after instanceof TypeError, "then it stops listening");
  }, { options: c.options, wrap: slow });
});

/** Waits until `cond` holds (30 s at most, then the assertion after it fails). */
async function until(cond: () => boolean): Promise<void> {
  for (const end = Date.now() + 30_000; !cond() && Date.now() < end;) {
    await new Promise((r) => setTimeout(r, 10));
  }
}
