/**
 * The shared HTTP plumbing on real sockets: key checks on every server that takes a key, a
 * taken port named with its flag on every server (before anything is created), bodies over the
 * limit, malformed JSON and zod failures as one-message 4xx answers, and the open-door warning.
 */

import { Hono } from "hono";
import { z } from "zod";
import { assert } from "../assert.ts";
import {
  ensurePortFree,
  HttpError,
  isLoopback,
  jsonErrors,
  keyAuth,
  openDoorWarning,
  PortInUseError,
  readJson,
  sameSecret,
  serveHttp,
} from "../../lib/http/mod.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { startRunsServer } from "../../lib/runs/server.ts";
import { HELD_OUT_EVALUATOR } from "../runs/evaluator.ts";
import { startOrsServer } from "../../lib/openreward/server.ts";
import { listToolEnvironments } from "../../lib/envs/mod.ts";
import { renderer, withProxy } from "../proxy/harness.ts";
import { startProxy } from "../../lib/proxy/server.ts";

Deno.test("http: sameSecret compares whole keys, whatever their lengths", () => {
  assert.equal(sameSecret("abc", "abc"), true);
  assert.equal(sameSecret("abd", "abc"), false);
  assert.equal(sameSecret("ab", "abc"), false);
  assert.equal(sameSecret("", "abc"), false);
});

/** A small app with the module's errors, auth and bodies, as every server wires them. */
function demoApp(): Hono {
  const app = new Hono();
  jsonErrors(app, {
    body: (e) => ({ error: e.message }),
    internal: (e) => `internal: ${e.message}`,
  });
  app.use("*", keyAuth({ key: "k3y", open: (p) => p === "/health" }));
  app.get("/health", (c) => c.json({ ok: true }));
  app.post(
    "/echo",
    async (c) =>
      c.json(await readJson(c.req.raw, z.object({ n: z.number().int() }), { maxBytes: 64 })),
  );
  app.get("/boom", () => {
    throw new Error("bug");
  });
  app.get("/teapot", () => {
    throw new HttpError(418, "short and stout");
  });
  return app;
}

Deno.test("http: errors are JSON 4xx with one message; only a bug is a 500", async () => {
  const server = await serveHttp(demoApp().fetch, { port: 0, portFlag: "--port" });
  try {
    const call = async (path: string, init: RequestInit = {}, key: string | null = "k3y") => {
      const headers: Record<string, string> = key === null
        ? {}
        : { authorization: `Bearer ${key}` };
      const res = await fetch(server.url + path, { ...init, headers });
      return { status: res.status, body: await res.json() };
    };
    assert.deepEqual(await call("/health", {}, null), { status: 200, body: { ok: true } });
    const post = (body: string) => call("/echo", { method: "POST", body });
    assert.deepEqual(await post('{"n":3}'), { status: 200, body: { n: 3 } });
    const bad = await post('{"n":"three"}');
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /^n: /);
    assert.equal(bad.body.error.includes("\n"), false);
    const notJson = await post("{n:");
    assert.equal(notJson.status, 400);
    assert.match(notJson.body.error, /not valid JSON/);
    const big = await post(JSON.stringify({ n: 1, pad: "x".repeat(100) }));
    assert.equal(big.status, 413);
    assert.match(big.body.error, /over 64 bytes/);
    assert.deepEqual(await call("/teapot"), { status: 418, body: { error: "short and stout" } });
    assert.deepEqual(await call("/nope"), { status: 404, body: { error: "no route GET /nope" } });
    assert.deepEqual(await call("/boom"), { status: 500, body: { error: "internal: bug" } });
    const none = await call("/teapot", {}, null);
    assert.equal(none.status, 401);
    assert.match(none.body.error, /missing API key: send Authorization: Bearer <key>/);
    assert.equal((await call("/teapot", {}, "k3y-not")).status, 401);
  } finally {
    await server.close();
  }
});

Deno.test("http: a taken port is one line naming the port and the flag", async () => {
  const taken = await serveHttp(demoApp().fetch, { port: 0, portFlag: "--port" });
  try {
    assert.equal(taken.address, `127.0.0.1:${taken.port}`);
    assert.throws(
      () => ensurePortFree("127.0.0.1", taken.port, "--proxy-port"),
      PortInUseError,
      `port ${taken.port} on 127.0.0.1 is already in use: stop what listens there or pick ` +
        "another port with --proxy-port",
    );
    await assert.rejects(
      () => serveHttp(demoApp().fetch, { port: taken.port, portFlag: "--port" }),
      PortInUseError,
    );
  } finally {
    await taken.close();
  }
});

Deno.test("http: what a server owns is closed once, when it cannot listen or after it stops", async () => {
  const closed: string[] = [];
  const owned = (name: string) => ({ close: () => void closed.push(name) });
  const server = await serveHttp(demoApp().fetch, {
    port: 0,
    portFlag: "--port",
    owned: owned("served"),
  });
  try {
    await assert.rejects(
      () =>
        serveHttp(demoApp().fetch, {
          port: server.port,
          portFlag: "--port",
          owned: owned("refused"),
        }),
      PortInUseError,
    );
    assert.deepEqual(closed, ["refused"]);
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.close();
  }
  assert.deepEqual(closed, ["refused", "served"]);
});

Deno.test("http: every server refuses a taken port, naming it, before it creates anything", async () => {
  const taken = await serveHttp(demoApp().fetch, { port: 0, portFlag: "--port" });
  const dataDir = `${await Deno.makeTempDir({ prefix: "tb-http-" })}/never`;
  try {
    const named = new RegExp(`port ${taken.port} on 127\\.0\\.0\\.1 is already in use.*--port$`);
    await assert.rejects(() => startLocalServer({ port: taken.port, dataDir }), PortInUseError, "");
    await assert.rejects(
      () => startRunsServer({ evaluator: HELD_OUT_EVALUATOR, port: taken.port, dataDir }),
      (e: Error) => e instanceof PortInUseError && named.test(e.message),
    );
    await assert.rejects(
      () =>
        startOrsServer({ port: taken.port, environments: Object.values(listToolEnvironments()) }),
      (e: Error) => e instanceof PortInUseError && named.test(e.message),
    );
    // Neither the backend nor the run API made its data dir.
    await assert.rejects(() => Deno.stat(dataDir), Deno.errors.NotFound);
  } finally {
    await taken.close();
  }
});

Deno.test("http: the proxy names --proxy-port when its port is taken", async () => {
  await withProxy(async ({ proxy, policy }) => {
    await assert.rejects(
      () =>
        startProxy({
          policy,
          renderer,
          modelName: "local/tiny",
          contextLength: 256,
          hostname: "127.0.0.1",
          port: proxy.port,
        }),
      (e: Error) => e instanceof PortInUseError && /--proxy-port$/.test(e.message),
    );
  });
});

Deno.test("http: the ORS server checks X-API-Key on every route but /health", async () => {
  const server = await startOrsServer({
    port: 0,
    environments: Object.values(listToolEnvironments()).slice(0, 1),
    apiKey: "ors-key",
  });
  try {
    const get = async (path: string, key?: string) => {
      const res = await fetch(server.url + path, { headers: key ? { "x-api-key": key } : {} });
      return { status: res.status, body: await res.json() };
    };
    assert.equal((await get("/health")).status, 200);
    const none = await get("/list_environments");
    assert.equal(none.status, 401);
    assert.match(none.body.detail, /missing API key: send X-API-Key/);
    assert.equal((await get("/list_environments", "wrong")).status, 401);
    assert.equal((await get("/list_environments", "ors-key")).status, 200);
  } finally {
    await server.close();
  }
});

Deno.test("http: the run API checks its bearer key on every route but /health", async () => {
  const server = await startRunsServer({
    evaluator: HELD_OUT_EVALUATOR,
    dataDir: await Deno.makeTempDir({ prefix: "tb-http-runs-" }),
    port: 0,
    apiKey: "runs-key",
  });
  try {
    const get = async (path: string, key?: string) => {
      const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
      const res = await fetch(server.url + path, { headers });
      return { status: res.status, body: await res.json() };
    };
    assert.equal((await get("/health")).status, 200);
    for (const path of ["/environments", "/runs", "/config"]) {
      assert.equal((await get(path)).status, 401, path);
      assert.equal((await get(path, "runs-key-")).status, 401, path);
      assert.notEqual((await get(path, "runs-key")).status, 401, path);
    }
  } finally {
    await server.close();
  }
});

Deno.test("http: the local backend checks its API key (JWT exchange) when started with one", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-http-local-" });
  const server = await startLocalServer({ dataDir, auth: { apiKey: "local-key" } });
  try {
    const post = async (key?: string) => {
      const res = await fetch(`${server.url}/api/v1/auth/token`, {
        method: "POST",
        headers: key ? { "x-api-key": key } : {},
      });
      await res.body?.cancel();
      return res.status;
    };
    assert.equal(await post(), 401);
    assert.equal(await post("local-kez"), 401);
    assert.equal(await post("local-key"), 200);
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("http: a server open beyond loopback without a key gets one warning line", () => {
  assert.equal(isLoopback("127.0.0.1"), true);
  assert.equal(isLoopback("::1"), true);
  assert.equal(isLoopback("0.0.0.0"), false);
  const fixes = "--api-key KEY, or --proxy-host 127.0.0.1";
  assert.equal(openDoorWarning("127.0.0.1", 30000, false, fixes), null);
  assert.equal(openDoorWarning("0.0.0.0", 30000, true, fixes), null);
  assert.equal(
    openDoorWarning("0.0.0.0", 30000, false, fixes),
    "warning: listening on 0.0.0.0:30000 without a key: anyone who can reach it may use it; " +
      "close it with --api-key KEY, or --proxy-host 127.0.0.1",
  );
});

Deno.test("http: every server answers malformed JSON and wrong fields with one-message 4xx, never a 5xx", async () => {
  const post = async (url: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", ...headers },
    });
    const text = await res.text();
    return { status: res.status, text };
  };
  const check = (what: string, r: { status: number; text: string }, message: RegExp) => {
    assert.ok(r.status >= 400 && r.status < 500, `${what}: ${r.status} ${r.text}`);
    assert.match(r.text, message, what);
    assert.doesNotMatch(r.text, /\\n|\n {4}at /, `${what}: one message`);
  };
  const dataDir = await Deno.makeTempDir({ prefix: "tb-http-bad-" });
  const local = await startLocalServer({ dataDir });
  const runs = await startRunsServer({ evaluator: HELD_OUT_EVALUATOR, dataDir, port: 0 });
  const ors = await startOrsServer({
    port: 0,
    environments: Object.values(listToolEnvironments()).slice(0, 1),
  });
  try {
    const api = `${local.url}/api/v1`;
    check("local, not JSON", await post(`${api}/create_session`, "{"), /not valid JSON/);
    check(
      "local, wrong field",
      await post(`${api}/create_session`, '{"tags": 3}'),
      /create_session: tags: /,
    );
    check("runs, not JSON", await post(`${runs.url}/runs`, "{"), /not valid JSON/);
    check(
      "runs, wrong field",
      await post(`${runs.url}/config`, '{"value":1}'),
      /^\{"error":"field: /,
    );
    const env = Object.values(listToolEnvironments())[0].name.toLowerCase();
    check("ors, not JSON", await post(`${ors.url}/${env}/num_tasks`, "{"), /not valid JSON/);
    check(
      "ors, wrong field",
      await post(`${ors.url}/${env}/num_tasks`, '{"split": 3}'),
      /"detail":"split: /,
    );
  } finally {
    await ors.close();
    await runs.close();
    await local.close();
    await Deno.remove(dataDir, { recursive: true });
  }
  await withProxy(async ({ proxy }) => {
    check("proxy, not JSON", await post(`${proxy.url}/chat/completions`, "{"), /not valid JSON/);
    check(
      "proxy, wrong field",
      await post(`${proxy.url}/chat/completions`, '{"messages": 3}'),
      /messages: /,
    );
  });
});
