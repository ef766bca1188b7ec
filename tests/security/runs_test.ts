/**
 * Attacks on the run API (`deno task runs`): web pages driving it (cross-site POSTs, DNS
 * rebinding), no key by default, and unbounded queues and test calls.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { RunsClient } from "../../lib/runs/client.ts";
import { postJson, send, withProcess } from "./harness.ts";

const ENV = "game:GuessTheNumber-v0-easy";
const TINY = {
  model_name: "local/tiny",
  batch_size: 1,
  group_size: 2,
  max_token_length: 8,
  lora_rank: 4,
  eval_episodes: 4,
  max_steps_without_datums: 1000,
};

async function withRuns(
  args: string[],
  fn: (url: string, dataDir: string, out: () => string) => Promise<void>,
) {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-sec-runs-" });
  await withProcess(
    "runs",
    ["--port", "0", "--data-dir", dataDir, ...args],
    (p) => fn(p.listening, dataDir, p.output),
    { dirs: [dataDir], env: { TINKER_API_KEY: "" } },
  );
}

Deno.test("security/runs: a key is made on first start, printed once, kept 0600, and needed on every route but /health", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-sec-runs-key-" });
  try {
    let key = "";
    await withProcess("runs", ["--port", "0", "--data-dir", dataDir], async (p) => {
      const file = join(dataDir, "runs-api", "api-key");
      key = (await Deno.readTextFile(file)).trim();
      assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
      assert.match(p.output(), new RegExp(`API key \\(shown this once.*\\): ${key}\\n`));
      assert.equal((await send(`${p.listening}/health`)).status, 200);
      assert.equal((await send(`${p.listening}/runs`)).status, 401);
      assert.equal((await postJson(`${p.listening}/environments/${ENV}/select`, {})).status, 401);
      // `bearer` is as good as `Bearer`.
      const lower = await send(`${p.listening}/runs`, {
        headers: { authorization: `bearer ${key}` },
      });
      assert.equal(lower.status, 200, JSON.stringify(lower.body));
      // The tools' client finds the key in the data dir by itself.
      const client = new RunsClient({ baseUrl: p.listening, dataDir });
      assert.ok((await client.listEnvironments()).length > 0);
    });
    await withProcess("runs", ["--port", "0", "--data-dir", dataDir], (p) => {
      assert.doesNotMatch(p.output(), new RegExp(key), "the key is printed only when made");
      assert.match(p.output(), /API key: the one in .*api-key/);
      return Promise.resolve();
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("security/runs: a web page cannot drive it: foreign Origin, rebound Host and text/plain bodies are refused, and no run starts", async () => {
  await withRuns(["--no-auth"], async (url) => {
    const evil = { origin: "https://evil.example" };
    const select = await send(`${url}/environments/${ENV}/select`, {
      method: "POST",
      headers: evil,
    });
    assert.equal(select.status, 403, JSON.stringify(select.body));
    assert.match(
      select.body.error,
      /cross-site request from Origin https:\/\/evil\.example refused/,
    );
    // Selected properly, then the page's "simple" POST that needs no preflight.
    assert.equal((await postJson(`${url}/environments/${ENV}/select`, {})).status, 200);
    const big = JSON.stringify({ total_steps: 2 ** 53 - 1, group_size: 2 ** 53 - 1 });
    for (
      const headers of [{ "content-type": "text/plain", ...evil }, { "content-type": "text/plain" }]
    ) {
      const r = await send(`${url}/runs`, { method: "POST", headers, body: big });
      assert.ok(r.status === 403 || r.status === 415, `${JSON.stringify(headers)}: ${r.status}`);
    }
    // DNS rebinding: the page's own name resolving to 127.0.0.1.
    const { port } = new URL(url);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    await conn.write(new TextEncoder().encode(
      `GET /runs HTTP/1.1\r\nHost: evil.example:${port}\r\nConnection: close\r\n\r\n`,
    ));
    const answer = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
    assert.match(answer, /^HTTP\/1\.1 403 /);
    assert.match(answer, /Host \\?"evil\.example:\d+\\?" is not this server.s/);
    const runs = await send(`${url}/runs`);
    assert.equal(runs.body.count, 0, "no run was started");
  });
});

Deno.test("security/runs: --no-auth beyond loopback is refused", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-sec-runs-open-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "scripts/runs.ts",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--no-auth",
        "--data-dir",
        dataDir,
      ],
      cwd: new URL("../..", import.meta.url).pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 2);
    assert.match(new TextDecoder().decode(out.stderr), /--no-auth is for loopback only/);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("security/runs: queued runs and concurrent test inference calls are capped with 429s", async () => {
  await withRuns(
    ["--no-auth", "--max-concurrent", "1", "--max-queued", "0", "--max-inference", "1"],
    async (url) => {
      assert.equal((await postJson(`${url}/environments/${ENV}/select`, {})).status, 200);
      for (const [field, value] of Object.entries(TINY)) {
        assert.equal((await postJson(`${url}/config`, { field, value })).status, 200, field);
      }
      const calls = await Promise.all(
        [0, 1].map(() => postJson(`${url}/test/inference`, { count: 1, max_tokens: 4 })),
      );
      assert.deepEqual(
        calls.map((c) => c.status).sort(),
        [200, 429],
        JSON.stringify(calls.map((c) => c.body)),
      );
      assert.match(
        calls.find((c) => c.status === 429)!.body.error,
        /at most 1 at once, --max-inference/,
      );
      const first = await postJson(`${url}/runs`, { total_steps: 1000 });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      try {
        const second = await postJson(`${url}/runs`, {});
        assert.equal(second.status, 429, JSON.stringify(second.body));
        assert.match(second.body.error, /at most 0, --max-queued/);
      } finally {
        await postJson(`${url}/runs/${first.body.run_id}/stop`, {});
      }
    },
  );
});
