/**
 * Attacks on a real proxy on loopback (issue 46's findings): rewards that would kill a run,
 * clients writing into sessions that are not theirs, ids probed through `/done`, deeply nested
 * tool parameters, a failed record write silencing the records after it, and sessions without
 * number (proxy.max_sessions).
 */

import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { join } from "node:path";
import { assert } from "../assert.ts";
import { askFor, withProxy } from "./harness.ts";
import type { CompletedTurn } from "../../lib/proxy/session_types.ts";
import { ProxyRecords } from "../../lib/proxy/records.ts";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: { error: { message: string; param: string | null } } }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("proxy attack: rewards that are not finite or beyond proxy.reward_bound are 400s naming the field, and nothing is completed", async () => {
  const completed: CompletedTurn[] = [];
  await withProxy(async ({ client, proxy }) => {
    const u1: Msg = { role: "user", content: "go" };
    const { answer, id, token } = await askFor(client, [u1]);
    const next = [u1, answer, { role: "user", content: "again" }];
    const chat = `${proxy.url}/chat/completions`;
    const h = { "x-session-token": token! };
    for (const raw of ["1e308", "-1e30", "Infinity", "NaN", "abc", "101"]) {
      const r = await post(chat, { messages: next, max_tokens: 2 }, { ...h, "x-turn-reward": raw });
      assert.equal(r.status, 400, raw);
      assert.equal(r.body.error.param, "reward");
      assert.match(r.body.error.message, /^X-Turn-Reward is /, raw);
    }
    for (const reward of [1e308, -1e30, 100.5]) {
      const r = await post(chat, { messages: next, max_tokens: 2, reward }, h);
      assert.equal(r.status, 400, String(reward));
      assert.match(
        r.body.error.message,
        /reward is .*outside \[-100, 100\] \(proxy\.reward_bound\)/,
      );
      const d = await post(`${proxy.url}/sessions/${id}/done`, { reward }, h);
      assert.equal(d.status, 400, `/done ${reward}`);
      assert.equal(d.body.error.param, "reward");
    }
    assert.equal(completed.length, 0, "no bad reward reached a turn");
    // The bound itself is accepted.
    const ok = await post(`${proxy.url}/sessions/${id}/done`, { reward: -100 }, h);
    assert.equal(ok.status, 200);
    assert.equal(completed[0].turn.reward, -100);
  }, { options: { onComplete: (t) => completed.push(t) } });
});

Deno.test("proxy attack: another client cannot add turns, next states or rewards to a session by naming its id or replaying its history", async () => {
  const completed: CompletedTurn[] = [];
  for (const binding of ["token", "history"] as const) {
    completed.length = 0;
    await withProxy(async ({ client, proxy }) => {
      const sys: Msg = { role: "system", content: "Play." };
      const u1: Msg = { role: "user", content: "Guess 1-10." };
      const alice = await askFor(client, [sys, u1], { "X-Session-Id": "alice" });
      const chat = `${proxy.url}/chat/completions`;
      const evil: Msg = { role: "user", content: "You lost." };

      // Naming alice's label (or her proxy id) with a reward: there is no turn to reward. Under
      // token binding it is refused, even for an exact continuation of her history; under
      // history binding the label and the whole transcript (the proxy's answers included) are
      // what a client must hold, so the attacker's own history opens its own session, where the
      // reward rewards nothing (counted: an agent CLI sends its static reward header so).
      const attacks = binding === "token"
        ? [[sys, u1, alice.answer, evil], [sys, u1, evil]]
        : [[sys, u1, evil]];
      for (const messages of attacks) {
        for (const name of ["alice", alice.id!]) {
          const r = await post(chat, { messages, max_tokens: 2 }, {
            "x-session-id": name,
            "x-turn-reward": "-1",
            "session_id": name,
          });
          if (binding === "token") {
            assert.equal(r.status, 400, `${binding}: ${name}`);
            assert.equal(r.body.error.param, "reward");
          } else assert.equal(r.status, 200, `${binding}: ${name}`);
        }
      }
      if (binding === "history") assert.equal(proxy.stats.rewardsWithoutTurn, 2);
      // Naming it without a reward: served in a session of its own.
      const mallory = await askFor(client, [sys, u1, evil], { "X-Session-Id": "alice" });
      assert.notEqual(mallory.id, alice.id);
      // Replaying alice's whole conversation, anonymously: a session of its own, no token back.
      const replay = await askFor(client, [sys, u1, alice.answer, evil]);
      assert.notEqual(replay.id, alice.id);
      assert.ok(replay.token !== null, "the replay opened its own session");
      assert.equal(completed.length, 0, `${binding}: alice's turn has no foreign next state`);

      // Ending her session: without the token a 401; with a wrong one the same 404 as for an
      // unknown id, so ids cannot be probed.
      const done = (sid: string, h: Record<string, string>) =>
        post(`${proxy.url}/sessions/${sid}/done`, { reward: 1 }, h);
      assert.equal((await done(alice.id!, {})).status, 401);
      const foreign = await done(alice.id!, { "x-session-token": mallory.token! });
      const unknown = await done("sess_000000000000000000000000", {
        "x-session-token": mallory.token!,
      });
      assert.equal(foreign.status, 404);
      assert.deepEqual(foreign, unknown);
      assert.equal(completed.length, 0);
      // Alice's, mallory's and the replay's (and under history binding the two rewarded
      // attacks', each a session of its own).
      assert.equal(proxy.sessions.size, binding === "token" ? 3 : 5, "alice's is still open");

      // Alice herself goes on, with her token (or, under history binding, her label and history).
      const aliceNext: Record<string, string> = binding === "token"
        ? { "X-Session-Token": alice.token! }
        : { "X-Session-Id": "alice" };
      await askFor(client, [sys, u1, alice.answer, { role: "user", content: "Higher." }], {
        ...aliceNext,
        "X-Turn-Reward": "0.5",
      });
      assert.equal(completed.length, 1);
      assert.equal(completed[0].sessionId, alice.id);
      assert.equal(completed[0].turn.reward, 0.5);
      assert.deepEqual(completed[0].turn.nextState, [{ role: "user", content: "Higher." }]);
    }, { options: { sessionBinding: binding, onComplete: (t) => completed.push(t) } });
  }
});

Deno.test("proxy attack: deeply nested tool parameters are a 400 naming them, not a 500", async () => {
  await withProxy(async ({ proxy }) => {
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 5000; i++) schema = { type: "object", properties: { x: schema } };
    const r = await post(`${proxy.url}/chat/completions`, {
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "deep", parameters: schema } }],
    });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /^tools\[0\]\.function\.parameters.* nests deeper than 64/);
    assert.equal(proxy.stats.errors["500"], undefined);
    // A prompt over the context (an agent's 40 KB first request on a local model) is refused
    // and opens no session.
    const long = await post(`${proxy.url}/chat/completions`, {
      messages: [{ role: "user", content: "x".repeat(5000) }],
    }, { "x-session-id": "agent" });
    assert.equal(long.status, 400);
    assert.equal(proxy.sessions.size, 0);
  });
});

Deno.test("proxy attack: one failed record write does not break the ones after it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-records-" });
  const errors: string[] = [];
  const error = console.error;
  console.error = (m: string) => errors.push(m);
  try {
    const records = await ProxyRecords.open(dir, "rl");
    // A directory where the file should be: the append fails.
    await Deno.mkdir(records.conversationsPath);
    const row = { session_id: "s" } as never;
    await records.conversation(row);
    assert.equal(records.failures, 1);
    assert.match(errors[0], /^proxy: records: could not append to .*conversations\.jsonl/);
    await Deno.remove(records.conversationsPath);
    await records.conversation(row);
    await records.session({ session_id: "s" } as never);
    await records.flush();
    assert.equal(records.failures, 1);
    assert.equal(await Deno.readTextFile(records.conversationsPath), '{"session_id":"s"}\n');
    assert.equal(await Deno.readTextFile(join(dir, "sessions.jsonl")), '{"session_id":"s"}\n');
  } finally {
    console.error = error;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("proxy attack: at proxy.max_sessions open sessions a new one is a 429 in each API's error shape, opens nothing, and ending one frees a place", async () => {
  await withProxy(async ({ client, proxy }) => {
    const a = await askFor(client, [{ role: "user", content: "a" }]);
    const b = await askFor(client, [{ role: "user", content: "b" }]);
    assert.equal(proxy.sessions.size, 2);
    const opening = (u: string) => ({ messages: [{ role: "user", content: u }], max_tokens: 2 });

    const chat = await post(`${proxy.url}/chat/completions`, opening("c"));
    assert.equal(chat.status, 429);
    assert.deepEqual(Object.keys(chat.body.error).sort(), ["code", "message", "param", "type"]);
    assert.equal((chat.body.error as { code?: string }).code, "rate_limit_exceeded");
    assert.match(chat.body.error.message, /2 open sessions.*proxy\.max_sessions/);
    // The official client raises it as the rate limit it is.
    await assert.rejects(
      () => askFor(client, [{ role: "user", content: "c" }]),
      (e: unknown) => e instanceof OpenAI.RateLimitError && /proxy\.max_sessions/.test(e.message),
    );
    const responses = await post(`${proxy.url}/responses`, {
      model: "local/tiny",
      input: "c",
      max_output_tokens: 2,
    });
    assert.equal(responses.status, 429);
    assert.equal((responses.body.error as { code?: string }).code, "rate_limit_exceeded");
    assert.match(responses.body.error.message, /proxy\.max_sessions/);
    const messages = await post(`${proxy.url}/messages`, {
      model: "local/tiny",
      ...opening("c"),
    }) as unknown as { status: number; body: Record<string, unknown> };
    assert.equal(messages.status, 429);
    const anthropic = messages.body as { type: string; error: { type: string; message: string } };
    assert.equal(anthropic.type, "error");
    assert.equal(anthropic.error.type, "rate_limit_error");
    assert.match(anthropic.error.message, /proxy\.max_sessions/);
    const claude = new Anthropic({
      baseURL: proxy.url.replace(/\/v1$/, ""),
      apiKey: "k",
      maxRetries: 0,
    });
    await assert.rejects(
      () => claude.messages.create({ model: "local/tiny", ...opening("c") } as never),
      (e: unknown) =>
        e instanceof Anthropic.RateLimitError && /proxy\.max_sessions/.test(e.message),
    );
    assert.equal(proxy.sessions.size, 2, "no refused request opened a session");
    // A request holding its session's token is served at the cap.
    await askFor(client, [{ role: "user", content: "a" }, a.answer, {
      role: "user",
      content: "a2",
    }], {
      "X-Session-Token": a.token!,
    });

    // X-Session-Done ends a's session: one place.
    await askFor(
      client,
      [{ role: "user", content: "a" }, a.answer, { role: "user", content: "a3" }],
      { "X-Session-Token": a.token!, "X-Session-Done": "1" },
    );
    assert.equal(proxy.sessions.size, 1);
    const c = await askFor(client, [{ role: "user", content: "c" }]);
    assert.ok(c.token !== null, "c opened a session");
    assert.equal((await post(`${proxy.url}/chat/completions`, opening("d"))).status, 429);
    // /done ends b's: one place again.
    const done = await post(`${proxy.url}/sessions/${b.id}/done`, {}, {
      "x-session-token": b.token!,
    });
    assert.equal(done.status, 200);
    const d = await askFor(client, [{ role: "user", content: "d" }]);
    assert.ok(d.token !== null, "d opened a session");
    assert.equal(proxy.sessions.size, 2);
  }, { options: { maxSessions: 2 } });
});
