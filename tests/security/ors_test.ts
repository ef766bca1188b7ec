/**
 * Attacks on the ORS environment server (`deno task envs serve`): the session cap, sessions
 * reattaching to other sessions' calls, the redirect's Location, bad task specs, and the key
 * kept off the command line.
 */

import { assert } from "../assert.ts";
import { TaskSessions } from "../../lib/openreward/sessions.ts";
import { postJson, send, withProcess } from "./harness.ts";

const ENV = "guessthenumber-v0-easy";

function withOrs(args: string[], fn: (url: string) => Promise<void>, env?: Record<string, string>) {
  return withProcess(
    "envs",
    ["serve", "--port", "0", "--env", ENV, ...args],
    (p) => fn(p.listening),
    {
      env,
    },
  );
}

const sid = (id: string) => ({ "x-session-id": id });

/** The events of an SSE answer, as [event, data] pairs. */
async function events(res: Response): Promise<Array<[string, string]>> {
  const text = await res.text();
  return [...text.matchAll(/event: (\S+)\r?\ndata: ([^\r\n]*)/g)].map((m) => [m[1], m[2]]);
}

Deno.test("security/ors: --max-sessions holds at /create for self-chosen session ids", async () => {
  await withOrs(["--max-sessions", "2"], async (url) => {
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await postJson(
        `${url}/create`,
        { env_name: ENV, split: "train", index: i },
        sid(`mine-${i}`),
      );
      statuses.push(r.status);
    }
    assert.equal(statuses.filter((s) => s === 200).length, 2, statuses.join(","));
    assert.equal(statuses.filter((s) => s === 429).length, 18, statuses.join(","));
  });
});

Deno.test("security/ors: one session cannot reattach to another session's call", async () => {
  await withOrs([], async (url) => {
    for (const id of ["alice", "mallory"]) {
      const r = await postJson(
        `${url}/create`,
        { env_name: ENV, split: "train", index: 0 },
        sid(id),
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const call = await fetch(`${url}/${ENV}/call`, {
      method: "POST",
      headers: { "content-type": "application/json", ...sid("alice") },
      body: JSON.stringify({ name: "guess", input: { number: 5 } }),
    });
    const mine = await events(call);
    const taskId = mine.find(([e]) => e === "task_id")![1];
    assert.ok(mine.some(([e]) => e === "end"), JSON.stringify(mine));
    const stolen = await fetch(`${url}/${ENV}/call`, {
      method: "POST",
      headers: { "content-type": "application/json", ...sid("mallory") },
      body: JSON.stringify({ name: "guess", task_id: taskId }),
    });
    const theirs = await events(stolen);
    assert.deepEqual(theirs, [["error", "unknown task_id"]]);
    // Its own session still reattaches.
    const again = await fetch(`${url}/${ENV}/call`, {
      method: "POST",
      headers: { "content-type": "application/json", ...sid("alice") },
      body: JSON.stringify({ name: "guess", task_id: taskId }),
    });
    assert.ok((await events(again)).some(([e]) => e === "end"));
  });
});

Deno.test("security/ors: the redirect of a bare path does not take its Location from the Host header", async () => {
  await withOrs([], async (url) => {
    const { port } = new URL(url);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    await conn.write(new TextEncoder().encode(
      "GET /tools?x=1 HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    ));
    const answer = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
    assert.match(answer, /^HTTP\/1\.1 308 /);
    assert.match(answer, /\r\nlocation: \/guessthenumber-v0-easy\/tools\?x=1\r\n/i);
    assert.doesNotMatch(answer, /evil\.example/);
  });
});

Deno.test("security/ors: a task_spec the environment cannot open is a 400, not a 500", async () => {
  await withOrs([], async (url) => {
    for (
      const [i, spec] of [["a", "not a task"], ["b", { nonsense: [1, 2] }], ["c", 42]] as const
    ) {
      const created = await postJson(
        `${url}/create`,
        { env_name: ENV, task_spec: spec },
        sid(`s-${i}`),
      );
      const r = created.status === 200
        ? await send(`${url}/${ENV}/prompt`, { headers: sid(`s-${i}`) })
        : created;
      assert.equal(r.status, 400, `${JSON.stringify(spec)}: ${r.status} ${JSON.stringify(r.body)}`);
      assert.match(r.body.detail, /task_spec/);
    }
  });
});

Deno.test("security/ors: the key may come from a file or the environment, off the command line", async () => {
  const file = await Deno.makeTempFile();
  await Deno.writeTextFile(file, "from-a-file\n");
  try {
    await withOrs(["--api-key-file", file], async (url) => {
      assert.equal((await send(`${url}/environments`)).status, 401);
      assert.equal(
        (await send(`${url}/environments`, { headers: { "x-api-key": "from-a-file" } })).status,
        200,
      );
    });
    await withOrs([], async (url) => {
      assert.equal((await send(`${url}/environments`)).status, 401);
      assert.equal(
        (await send(`${url}/environments`, { headers: { "x-api-key": "from-env" } })).status,
        200,
      );
    }, { TINKERBENCH_ORS_API_KEY: "from-env" });
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("security/ors: ended sessions are forgotten after the stale time, and never more than 10,000", async () => {
  const sessions = new TaskSessions({ staleMs: 1000, lingerMs: 1000, maxSessions: Infinity });
  const never = () => Promise.reject(new Error("not opened"));
  for (let i = 0; i < 10_050; i++) {
    sessions.create(`s${i}`, never, null);
    await sessions.end(`s${i}`);
  }
  assert.equal(sessions.ended, 10_000);
  await sessions.reap(performance.now() + 2000);
  assert.equal(sessions.ended, 0);
});
