import { assert } from "../assert.ts";
import { type LocalServer, startLocalServer } from "../../lib/local/server/mod.ts";
import type { LocalAuthOptions } from "../../lib/local/server/auth.ts";
import { datum, ServiceClient } from "../../lib/tinker/mod.ts";
import { jwtExpiry, TinkerAuthenticationError } from "../../lib/tinker/http.ts";

const KEY = "tml-secret-key";

async function withAuthServer(
  auth: LocalAuthOptions,
  fn: (server: LocalServer) => Promise<void>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-auth-test-" });
  const server = await startLocalServer({ dataDir, longPollMs: 2_000, auth });
  try {
    await fn(server);
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

/** A fetch that records the status and X-API-Key of every request it passes on. */
function recordingFetch() {
  const calls: { path: string; key: string; status: number }[] = [];
  const f: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    calls.push({
      path: new URL(String(input)).pathname,
      key: new Headers(init?.headers).get("x-api-key") ?? "",
      status: res.status,
    });
    return res;
  };
  return { calls, fetch: f };
}

async function post(server: LocalServer, path: string, key?: string, body: unknown = {}) {
  const res = await fetch(`${server.url}/api/v1/${path}`, {
    method: path === "get_server_capabilities" ? "GET" : "POST",
    headers: { "content-type": "application/json", ...(key ? { "X-API-Key": key } : {}) },
    body: path === "get_server_capabilities" ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("auth: the client exchanges its key for a JWT and sends the JWT", async () => {
  await withAuthServer({ apiKey: KEY, jwtTtlSeconds: 60 }, async (server) => {
    const rec = recordingFetch();
    const service = await ServiceClient.connect({
      baseUrl: server.url,
      apiKey: KEY,
      fetch: rec.fetch,
    });
    try {
      const jwt = service.http.jwt!;
      assert.match(jwt, /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
      const exp = jwtExpiry(jwt)!;
      assert.ok(Math.abs(exp - (Date.now() / 1000 + 60)) < 5, `exp ${exp}`);
      const sampler = await service.createSamplingClient({ baseModel: "local/tiny" });
      const res = await sampler.sample({
        prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
        samplingParams: { maxTokens: 4, seed: 1 },
      });
      assert.equal(res.sequences[0].tokens.length, 4);
      // The key went only to client/config and auth/token; everything else carried the JWT.
      assert.deepEqual(rec.calls.slice(0, 2).map((c) => [c.path, c.key]), [
        ["/api/v1/client/config", KEY],
        ["/api/v1/auth/token", KEY],
      ]);
      const rest = rec.calls.slice(2);
      assert.ok(rest.length >= 3);
      for (const c of rest) assert.equal(c.key, jwt, c.path);
      assert.ok(rec.calls.every((c) => c.status === 200));
      assert.equal(server.auth!.issued, 1);
    } finally {
      service.close();
    }
  });
});

Deno.test("auth: a 2 s JWT is renewed in the background while training runs", async () => {
  await withAuthServer({ apiKey: KEY, jwtTtlSeconds: 2 }, async (server) => {
    const rec = recordingFetch();
    const service = await ServiceClient.connect({
      baseUrl: server.url,
      apiKey: KEY,
      fetch: rec.fetch,
      backoffBaseMs: 5,
    });
    try {
      const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
      const seq = [5, 9, 12, 40, 41, 42];
      const batch = [
        datum(seq.slice(0, -1), { target_tokens: seq.slice(1), weights: [1, 1, 1, 1, 1] }),
      ];
      const t0 = Date.now();
      let steps = 0;
      const jwtsSent = () =>
        new Set(rec.calls.filter((c) => c.key.startsWith("eyJ")).map((c) => c.key));
      // Train for at least 5 s and two steps (on a loaded machine the first step alone, with
      // its compiles, can take longer than 5 s), and until three tokens were used or 30 s passed.
      while (
        steps < 2 || Date.now() - t0 < 5_000 ||
        ((server.auth!.issued < 4 || jwtsSent().size < 3) && Date.now() - t0 < 30_000)
      ) {
        const fb = training.forwardBackward(batch, "cross_entropy");
        const step = training.optimStep({ learning_rate: 1e-3 });
        await fb;
        await step;
        steps++;
      }
      assert.ok(steps >= 2, `${steps} steps`);
      const jwts = jwtsSent();
      // 2 s tokens renewed at 80 %: at least 3 more tokens, all used, no request refused.
      assert.ok(server.auth!.issued >= 4, `issued ${server.auth!.issued}`);
      assert.ok(jwts.size >= 3, `${jwts.size} distinct JWTs sent`);
      assert.deepEqual(rec.calls.filter((c) => c.status === 401), [], "no request was refused");
      const tokenCalls = rec.calls.filter((c) => c.path === "/api/v1/auth/token");
      assert.ok(tokenCalls.every((c) => c.key === KEY), "renewal exchanges the API key");
      // Idle, with no request to trigger it, the background timer still renews the token.
      // (Due 1.6 s after the last token; a loaded machine can run its timer and exchange late.)
      const before = server.auth!.issued;
      for (const end = Date.now() + 20_000; server.auth!.issued === before && Date.now() < end;) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(server.auth!.issued > before, "renewed in the background");
    } finally {
      service.close();
    }
    // After close, no more renewals.
    const issued = server.auth!.issued;
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(server.auth!.issued, issued);
  });
});

Deno.test("auth: wrong, missing, forged and expired credentials are 401s with a reason", async () => {
  // The JWT lives 2 s: the request right after its issue must land before it expires, and a
  // 0.5 s life left a machine with both cores busy too little room for that one round trip.
  await withAuthServer({ apiKey: KEY, jwtTtlSeconds: 2 }, async (server) => {
    const err = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-wrong" }).then(
      () => null,
      (e) => e,
    );
    assert.ok(err instanceof TinkerAuthenticationError, String(err));
    assert.equal(err.status, 401);
    assert.equal(
      err.message,
      "client/config: authentication failed (HTTP 401): invalid API key. " +
        "Check the API key (apiKey, TINKER_API_KEY or TINKER_CREDENTIAL_CMD).",
    );

    assert.deepEqual(await post(server, "create_session"), {
      status: 401,
      body: { detail: "missing X-API-Key header" },
    });
    assert.deepEqual(await post(server, "get_server_capabilities", KEY), {
      status: 401,
      body: { detail: "this server takes a JWT from POST /api/v1/auth/token as X-API-Key" },
    });
    const { body: { jwt } } = await post(server, "auth/token", KEY);
    assert.equal((await post(server, "get_server_capabilities", jwt)).status, 200);
    const [h, p, s] = jwt.split(".");
    const forged = `${h}.${p}.${s.slice(0, -2)}${s.endsWith("AA") ? "BB" : "AA"}`;
    assert.deepEqual(await post(server, "get_server_capabilities", forged), {
      status: 401,
      body: { detail: "invalid JWT (bad signature)" },
    });
    assert.equal((await post(server, "auth/token", "tml-wrong")).status, 401);
    await new Promise((r) => setTimeout(r, 2_200));
    assert.deepEqual(await post(server, "get_server_capabilities", jwt), {
      status: 401,
      body: { detail: "JWT expired: exchange the API key at /api/v1/auth/token again" },
    });
    const health = await fetch(`${server.url}/api/v1/healthz`);
    assert.equal(health.status, 200, "health checks need no credential");
    await health.body?.cancel();
  });
});

Deno.test("auth: TINKER_CREDENTIAL_CMD supplies the key; a failing command is a one-line error", async () => {
  const saved = {
    key: Deno.env.get("TINKER_API_KEY"),
    cmd: Deno.env.get("TINKER_CREDENTIAL_CMD"),
  };
  Deno.env.delete("TINKER_API_KEY");
  try {
    await withAuthServer({ apiKey: KEY }, async (server) => {
      Deno.env.set("TINKER_CREDENTIAL_CMD", `printf '%s\\n' ${KEY}`);
      const service = await ServiceClient.connect({ baseUrl: server.url });
      try {
        assert.ok(service.http.jwt?.startsWith("eyJ"));
        await service.getServerCapabilities();
      } finally {
        service.close();
      }
      Deno.env.set("TINKER_CREDENTIAL_CMD", "echo 'vault is sealed' >&2; exit 3");
      await assert.rejects(
        ServiceClient.connect({ baseUrl: server.url }),
        (e: Error) => e.message === "TINKER_CREDENTIAL_CMD failed (exit 3): vault is sealed",
      );
    });
  } finally {
    for (const [name, v] of [["TINKER_API_KEY", saved.key], ["TINKER_CREDENTIAL_CMD", saved.cmd]]) {
      if (v === undefined) Deno.env.delete(name!);
      else Deno.env.set(name!, v);
    }
  }
});

Deno.test("auth: a server started without auth keeps answering pjwt_auth_enabled false", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-auth-test-" });
  const server = await startLocalServer({ dataDir });
  try {
    const res = await post(server, "client/config", "anything");
    assert.equal(res.body.pjwt_auth_enabled, false);
    assert.equal((await post(server, "auth/token", "anything")).status, 404);
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    assert.equal(service.http.jwt, undefined);
    service.close();
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
