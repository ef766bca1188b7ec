import { assert } from "../assert.ts";
import {
  fromOrsToolSpec,
  OrsCapacityError,
  OrsClient,
  OrsError,
  OrsNotFoundError,
  OrsSessionLostError,
  startOrsServer,
} from "../../lib/openreward/mod.ts";
import { wordProblems } from "../../lib/envs/word_problems.ts";
import { probeCalls, probeEnvironment, rejection } from "./fixtures.ts";

const FAST = { baseDelayMs: 5, maxDelayMs: 20 };

async function withServer(
  opts: Partial<Parameters<typeof startOrsServer>[0]>,
  body: (url: string, server: Awaited<ReturnType<typeof startOrsServer>>) => Promise<void>,
) {
  const server = await startOrsServer({
    environments: [probeEnvironment(), wordProblems()],
    pingMs: 20,
    ...opts,
  });
  try {
    await body(server.url, server);
  } finally {
    await server.close();
  }
}

Deno.test("ors client: every stateless endpoint against the project's server", async () => {
  await withServer({}, async (url) => {
    const client = new OrsClient({ baseUrl: url, retry: FAST });
    assert.equal(await client.health(), true);
    assert.deepEqual(await client.listEnvironments(), ["probe", "wordproblems-v0"]);
    const listing = await client.environments();
    assert.deepEqual(listing.map((e) => [e.name, e.tools]), [
      ["probe", ["echo", "slow", "boom", "secrets", "finish"]],
      ["wordproblems-v0", ["answer"]],
    ]);
    const env = client.environment("probe");
    assert.deepEqual(await env.splits(), [
      { name: "train", type: "train" },
      { name: "test", type: "test" },
    ]);
    assert.equal(await env.numTasks("train"), 5);
    assert.equal((await env.tasks("test")).length, 2);
    assert.deepEqual(await env.task("train", 3), { split: "train", index: 3, seed: 3 });
    // Python slice semantics: the last two, and a clipped range.
    assert.deepEqual((await env.taskRange("train", -2)).map((t) => t.index), [3, 4]);
    assert.deepEqual((await env.taskRange("train", 1, 99)).map((t) => t.index), [1, 2, 3, 4]);
    assert.deepEqual((await env.tools()).map((t) => t.name), [
      "echo",
      "slow",
      "boom",
      "secrets",
      "finish",
    ]);
    // A zero-argument tool keeps its (strict) empty object schema.
    assert.deepEqual((await env.tools())[2].parameters, {
      type: "object",
      properties: {},
      additionalProperties: false,
    });
    // A null schema (the reference server's for such tools) reads as an empty object schema.
    assert.deepEqual(
      fromOrsToolSpec({ name: "t", description: "", input_schema: null }).parameters,
      {
        type: "object",
        properties: {},
      },
    );
    // Bad input: one-line errors with the server's detail.
    await rejection(() => env.numTasks("nope"), OrsError, "Invalid split");
    await rejection(() => env.task("train", 5), OrsError, "Invalid index");
  });
});

Deno.test("ors client: a session (create_session SSE, create, prompt, task_tools, call, delete)", async () => {
  await withServer({}, async (url, server) => {
    const client = new OrsClient({ baseUrl: url, retry: FAST });
    const env = client.environment("probe");
    const s = await env.open({ split: "train", index: 2 });
    assert.match(s.sid, /^[0-9a-f-]{36}$/);
    assert.deepEqual(await s.prompt(), [{ type: "text", text: "Task train/2.", detail: null }]);
    assert.equal((await s.tools()).length, 5);
    assert.deepEqual(await s.call("finish", { reward: 0.5 }), {
      ok: true,
      output: {
        blocks: [{ type: "text", text: "bye", detail: null }],
        metadata: { n: 1 },
        reward: 0.5,
        finished: true,
      },
    });
    // Tool-level failures come back as results, in the reference server's words.
    assert.deepEqual(await s.call("nope", {}), { ok: false, error: "'nope' is not a valid tool" });
    const bad = await s.call("echo", { text: 3 });
    assert.ok(
      !bad.ok && bad.error.startsWith("Tool input validation error: text:"),
      JSON.stringify(bad),
    );
    // An exception inside a tool is an `error` event: thrown, not retried.
    await rejection(() => s.call("boom", {}), OrsError, "kaboom");
    assert.equal(server.app.sessions.open, 1);
    await s.close();
    assert.equal(server.app.sessions.open, 0);
    assert.equal(server.app.sessions.stats.ended, 1);
    // A task spec instead of split + index.
    const s2 = await env.session({ taskSpec: { split: "x", index: 9 } });
    assert.deepEqual(await s2.prompt(), [{ type: "text", text: "Task x/9.", detail: null }]);
    await s2.close();
  });
});

Deno.test("ors client: results over 4096 characters arrive in chunks, whitespace at cuts kept", async () => {
  await withServer({}, async (url) => {
    // Spaces right at the first chunk boundary (the result JSON starts with this prefix), and
    // a character outside the BMP (two UTF-16 units) across the second.
    const prefix = '{"ok":true,"output":{"blocks":[{"type":"text","text":"';
    const text = "x".repeat(4096 - prefix.length) + "   spaced " + "y".repeat(4088) + "🎲" +
      "z".repeat(3000);
    const raw = await fetch(`${url}/create_session`, { method: "POST" });
    const sid = (await raw.text()).match(/data: (\S+)/)![1];
    await (await fetch(`${url}/create`, {
      method: "POST",
      headers: { "X-Session-ID": sid, "Content-Type": "application/json" },
      body: JSON.stringify({ env_name: "probe", split: "train", index: 0 }),
    })).text();
    const res = await fetch(`${url}/probe/call`, {
      method: "POST",
      headers: { "X-Session-ID": sid, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "echo", input: { text } }),
    });
    const sse = await res.text();
    const events = [...sse.matchAll(/event: (\w+)\r\ndata: ([^\r]*)\r\n/g)];
    assert.deepEqual(events.map((m) => m[1]), ["task_id", "chunk", "chunk", "end"]);
    assert.equal(events[1][2].length, 4099, "the first cut moved past three spaces");
    assert.equal(events[2][2].length, 4097, "the second cut did not split the surrogate pair");
    // The reference client left-strips data: no chunk may start with whitespace.
    assert.ok(events.every((m) => !/^\s/.test(m[2])));
    const joined = events.slice(1).map((m) => m[2]).join("");
    assert.equal(JSON.parse(joined).output.blocks[0].text, text);
    // And through the client.
    const client = new OrsClient({ baseUrl: url, retry: FAST });
    const s = await client.environment("probe").open({ split: "train", index: 0 });
    const out = await s.call("echo", { text });
    assert.ok(out.ok && out.output.blocks[0].type === "text" && out.output.blocks[0].text === text);
    await s.close();
    await fetch(`${url}/delete`, { method: "POST", headers: { "X-Session-ID": sid } }).then((r) =>
      r.text()
    );
  });
});

Deno.test("ors client: a dropped call stream reattaches with its task_id; the tool runs once", async () => {
  await withServer({ faults: { dropCallStreams: 2 } }, async (url, server) => {
    const client = new OrsClient({ baseUrl: url, retry: FAST });
    const s = await client.environment("probe").open({ split: "train", index: 0 });
    const before = probeCalls.slow ?? 0;
    const out = await s.call("slow", { ms: 30 });
    assert.ok(
      out.ok && out.output.blocks[0].type === "text" && out.output.blocks[0].text === "done",
    );
    assert.equal(probeCalls.slow - before, 1, "the tool ran once");
    assert.equal(client.transport.stats.reattaches, 1);
    assert.equal(server.app.sessions.stats.reattached, 1);
    // The next call's stream drops too (the second fault); a finished task still answers.
    const again = await s.call("echo", { text: "hi" });
    assert.ok(again.ok);
    assert.equal(client.transport.stats.reattaches, 2);
    await s.close();
  });
});

Deno.test("ors client: pings keep a long call's stream alive; a silent stream reattaches", async () => {
  await withServer({ pingMs: 15 }, async (url) => {
    const client = new OrsClient({ baseUrl: url, retry: { ...FAST, heartbeatMs: 2000 } });
    const s = await client.environment("probe").open({ split: "train", index: 0 });
    const out = await s.call("slow", { ms: 120 });
    assert.ok(out.ok);
    assert.ok(client.transport.stats.pings >= 3, `pings: ${client.transport.stats.pings}`);
    await s.close();
  });
  // Pings slower than the client's heartbeat: the client drops and reattaches, then finishes.
  await withServer({ pingMs: 1000 }, async (url) => {
    const client = new OrsClient({ baseUrl: url, retry: { ...FAST, heartbeatMs: 40 } });
    const s = await client.environment("probe").open({ split: "train", index: 0 });
    const out = await s.call("slow", { ms: 150 });
    assert.ok(out.ok);
    assert.ok(client.transport.stats.reattaches >= 1);
    await s.close();
  });
});

Deno.test("ors client: 429 at capacity backs off, then succeeds or fails with one clear line", async () => {
  await withServer({ maxSessions: 1 }, async (url, server) => {
    const client = new OrsClient({ baseUrl: url, retry: { ...FAST, capacityAttempts: 3 } });
    const env = client.environment("probe");
    const first = await env.open({ split: "train", index: 0 });
    const err = await rejection(() => env.open({ split: "train", index: 1 }), OrsCapacityError);
    assert.match(
      err.message,
      /^probe is at maximum capacity: HTTP 429 on \/create_session 3 times/,
    );
    assert.ok(!err.message.includes("\n"));
    assert.equal(server.app.sessions.stats.rejected, 3);
    // Capacity frees up while the client backs off: it gets in.
    const patient = new OrsClient({
      baseUrl: url,
      retry: { baseDelayMs: 20, maxDelayMs: 40, capacityAttempts: 10 },
    });
    const waiting = patient.environment("probe").open({ split: "train", index: 1 });
    setTimeout(() => void first.close(), 50);
    const second = await waiting;
    assert.ok(patient.transport.stats.capacityWaits >= 1);
    await second.close();
  });
});

Deno.test("ors client: a server on this machine that does not answer is named with how to start one", async () => {
  // A port that was just free: nothing listens on it.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const client = new OrsClient({
    baseUrl: `http://127.0.0.1:${port}`,
    retry: { ...FAST, attempts: 1 },
  });
  const e = await rejection(() => client.environment("probe").numTasks("train"), OrsError);
  assert.match(e.message, /^probe: cannot reach http:\/\/127\.0\.0\.1:\d+\/probe\/num_tasks: /);
  assert.ok(
    e.message.endsWith(
      `(nothing answers there: start its server, e.g. this project's with deno task envs serve --port ${port})`,
    ),
    e.message,
  );
});

Deno.test("ors client: 404 names the environment (self-hosted and hosted routing)", async () => {
  await withServer({}, async (url) => {
    const client = new OrsClient({ baseUrl: url, retry: FAST });
    // Unknown first path segments are redirected by the server (as the reference's are).
    const e1 = await rejection(
      () => client.environment("nope").numTasks("train"),
      OrsNotFoundError,
    );
    assert.match(e1.message, /^environment "nope" is not served at http/);
    // create with an unknown env_name: the server's 404.
    const e2 = await rejection(
      () => client.environment("nope").open({ split: "train", index: 0 }),
      OrsNotFoundError,
    );
    assert.match(e2.message, /^environment "nope": unknown environment 'nope'/);
    // Hosted routing: bare paths with X-Deployment; an unknown deployment is a 404 too.
    const hosted = new OrsClient({ baseUrl: url, hosted: true, apiKey: "k", retry: FAST });
    const e3 = await rejection(
      () => hosted.environment("Acme/Nope").numTasks("train"),
      OrsNotFoundError,
    );
    assert.match(e3.message, /^environment "Acme\/Nope" not found \(Deployment not found\.\)/);
  });
});

Deno.test("ors client: hosted-style routing (X-Deployment, throwaway sessions, X-Secrets)", async () => {
  await withServer({}, async (url, server) => {
    const client = new OrsClient({ baseUrl: url, hosted: true, apiKey: "k", retry: FAST });
    const env = client.environment("Acme/Probe", { secrets: { openai_api_key: "sk-1" } });
    assert.equal(await env.numTasks("test"), 2);
    assert.equal(server.app.sessions.open, 0, "throwaway sessions are released");
    const s = await env.open({ split: "test", index: 1 });
    assert.deepEqual(await s.prompt(), [{ type: "text", text: "Task test/1.", detail: null }]);
    // Hosted: secrets go in the X-Secrets header only.
    const out = await s.call("secrets", {});
    assert.ok(out.ok && out.output.blocks[0].type === "text");
    assert.deepEqual(JSON.parse((out.output.blocks[0] as { text: string }).text), {
      openai_api_key: "sk-1",
    });
    await s.close();
  });
});

Deno.test("ors client: a deleted or reaped session is lost (410, and failed pings)", async () => {
  // Generous margins: a loaded CI machine can delay a timer by tens of milliseconds.
  await withServer({ staleMs: 2000, reapEveryMs: 50 }, async (url, server) => {
    const client = new OrsClient({ baseUrl: url, retry: FAST, pingMs: 20_000 });
    const env = client.environment("probe");
    const s = await env.open({ split: "train", index: 0 });
    await server.app.sessions.end(s.sid);
    const e = await rejection(() => s.prompt(), OrsSessionLostError);
    assert.match(e.message, /^probe: session .* was lost \(HTTP 410: Session deleted\)/);
    await s.close();
    // Pings keep a session alive past the reaper's idle limit ...
    const pinged = await new OrsClient({ baseUrl: url, retry: FAST, pingMs: 40 })
      .environment("probe").open({ split: "train", index: 0 });
    // ... and without pings it is reaped.
    const idle = await env.open({ split: "train", index: 1 });
    // Past the idle limit (2 s; pings every 40 ms keep the other one), before the reaped id is
    // forgotten (2 s later: then it is a 404) and the idle client's own first ping (20 s). A
    // 400 ms limit and a 700 ms wait left a loaded machine too little room either side.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.ok((await pinged.prompt()).length === 1);
    await rejection(() => idle.prompt(), OrsSessionLostError, "410");
    await pinged.close();
    await idle.close();
  });
  // A session whose pings fail is marked lost before the next call goes out.
  await withServer({}, async (url, server) => {
    const client = new OrsClient({ baseUrl: url, retry: { ...FAST, attempts: 1 }, pingMs: 10 });
    const s = await client.environment("probe").open({ split: "train", index: 0 });
    await server.app.sessions.end(s.sid);
    await new Promise((r) => setTimeout(r, 300));
    await rejection(() => s.call("echo", { text: "x" }), OrsSessionLostError, "ping failed");
    await s.close();
  });
});

Deno.test("ors server: create without env_name binds at the first /{env}/ request (the reference client)", async () => {
  await withServer({}, async (url, server) => {
    const post = (path: string, sid: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "X-Session-ID": sid, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const sid = (await (await post("/create_session", "")).text()).match(/data: (\S+)/)![1];
    // The reference client's create for split + index: no env_name. Two environments are served.
    assert.deepEqual(await (await post("/create", sid, { split: "train", index: 2 })).json(), {
      sid,
    });
    const prompt = await fetch(`${url}/probe/prompt`, { headers: { "X-Session-ID": sid } });
    assert.deepEqual(await prompt.json(), [{ type: "text", text: "Task train/2.", detail: null }]);
    assert.deepEqual(await (await post("/ping", sid)).json(), { status: "ok" });
    await (await post("/delete", sid)).text();
    assert.equal(server.app.sessions.open, 0);
    // Errors are {"detail"} bodies; a missing session id is a 400.
    const res = await post("/create", "", { split: "train", index: 0 });
    assert.deepEqual([res.status, await res.json()], [400, {
      detail: "X-Session-ID header is required",
    }]);
  });
});
