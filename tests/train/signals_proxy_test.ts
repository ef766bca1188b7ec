/**
 * Ctrl-C (SIGINT) and SIGTERM stop `deno task train --source proxy` with its steps saved in every
 * state a proxy run can be in: waiting for turns (the agents stopped, or one request in flight),
 * mid-rollout (live agents' turns sampling, no step yet), mid-step (a step training, side
 * turns sampling) and during the held-out evaluation. Each runs the real
 * script as a process on the local backend, with the reference agents playing through it. The
 * environment mode's states are in ./signals_test.ts; the timing rules in ./signal_run.ts.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { agents, marks, rows, SLOW_ENV, start, stop, until } from "./signal_run.ts";

const PROXY_RUN = ["--source", "proxy", "--proxy-host", "127.0.0.1", "--proxy-port", "0"];

Deno.test({
  name:
    "signals, proxy mode: SIGTERM waiting for turns, the first request in flight, saves and exits",
  sanitizeResources: false,
  async fn() {
    const t = await start([...PROXY_RUN, "--method", "opd", "--max-steps", "3"]);
    const url = await t.url;
    assert.ok(url, `the proxy listens: ${url || (await t.output).stderr}`);
    // The run's first request: its sampler is made, then it decodes up to 200 tokens.
    const reply = fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages: [{ role: "user", content: "Guess a number between 1 and 10." }],
        max_tokens: 200,
      }),
    }).then(async (r) => ({ status: r.status, body: await r.text() }));
    // Not a bound: where the signal lands in the request is printed, never asserted.
    await new Promise((r) => setTimeout(r, 200));
    await stop(t, "SIGTERM", "interrupted", {
      mode: "proxy",
      state: "waiting, a request in flight",
    });
    const { status, body } = await reply;
    console.log(`the request in flight: ${status}`);
    // Answered before the signal, or cut with a clean 503; a cut one is no turn of the run.
    if (status !== 200) {
      assert.equal(status, 503, body);
      assert.match(body, /"code":"shutting_down"/);
      const turns = await Deno.readTextFile(join(t.dir, "records", "conversations.jsonl"))
        .catch(() => "");
      assert.equal(turns, "", "a cut request leaves no turn");
    }
    const run = JSON.parse(await Deno.readTextFile(join(t.dir, "status.json")));
    assert.equal(run.state, "interrupted");
  },
});

Deno.test({
  name: "signals, proxy mode: Ctrl-C waiting for turns after the agents stopped saves and exits",
  sanitizeResources: false,
  async fn() {
    // More turns than the agents play: the run waits, with every turn scored or being scored.
    const t = await start([
      ...PROXY_RUN,
      "--method",
      "opd",
      "--max-steps",
      "3",
      "--batch-size",
      "500",
    ]);
    const url = await t.url;
    assert.ok(url, `the proxy listens: ${url || (await t.output).stderr}`);
    await agents(url, new AbortController().signal, { episodes: 8 });
    await stop(t, "SIGINT", "interrupted", { mode: "proxy", state: "waiting, agents stopped" });
  },
});

Deno.test({
  name: "signals, proxy mode: SIGTERM mid-rollout (live agents' turns sampling) saves and exits",
  sanitizeResources: false,
  async fn() {
    // No step comes (500 turns a step): the backend only samples the agents' turns.
    const t = await start([
      ...PROXY_RUN,
      "--method",
      "rl",
      "--max-steps",
      "3",
      "--batch-size",
      "500",
    ]);
    const url = await t.url;
    assert.ok(url, `the proxy listens: ${url || (await t.output).stderr}`);
    const halt = new AbortController();
    let ended = 0;
    const playing = agents(url, halt.signal, { episodes: 400, onEpisode: () => ended++ });
    await until(t, "two episodes played", () => Promise.resolve(ended >= 2));
    await stop(t, "SIGTERM", "interrupted", { mode: "proxy", state: "mid-rollout" });
    halt.abort();
    await playing;
  },
});

Deno.test({
  name:
    "signals, proxy mode: Ctrl-C mid-step, the agents' turns sampling, saves the step and exits",
  sanitizeResources: false,
  async fn() {
    // A step a turn. The test ends each turn itself (a reward through /done), so it knows when
    // the step that trains it starts: the signal lands there, with side turns sampling.
    const t = await start([
      ...PROXY_RUN,
      "--method",
      "rl",
      "--max-steps",
      "200",
      "--batch-size",
      "1",
    ]);
    const url = await t.url;
    assert.ok(url, `the proxy listens: ${url || (await t.output).stderr}`);
    await rewardedTurn(url);
    await until(t, "step 1 (its compiles done)", async () => (await rows(t)) >= 1);
    const sampling = Array.from({ length: 4 }, () => ask(url, { "x-turn-type": "side" }, 48));
    await rewardedTurn(url); // step 2 trains from now
    const { steps } = await stop(t, "SIGINT", "interrupted", {
      mode: "proxy",
      state: "mid-step",
    });
    await Promise.allSettled(sampling);
    assert.equal(steps, 2, "the step in training is finished and saved");
  },
});

/** One chat request through the proxy; its session headers. */
async function ask(url: string, headers: Record<string, string> = {}, maxTokens = 8) {
  const res = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({
      messages: [{ role: "user", content: "Guess a number between 1 and 10." }],
      max_tokens: maxTokens,
    }),
  });
  await res.body?.cancel();
  assert.equal(res.status, 200);
  return { id: res.headers.get("x-session-id")!, token: res.headers.get("x-session-token")! };
}

/** A one-turn session ended with a reward: a trainable turn, complete once /done answers. */
async function rewardedTurn(url: string): Promise<void> {
  const { id, token } = await ask(url);
  const done = await fetch(`${url}/sessions/${id}/done`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-token": token },
    body: JSON.stringify({ reward: 1 }),
  });
  await done.body?.cancel();
  assert.equal(done.status, 200);
}

Deno.test({
  name: "signals, proxy mode: SIGTERM during the held-out evaluation exits, the run saved",
  sanitizeResources: false,
  async fn() {
    const t = await start([
      ...PROXY_RUN,
      ...SLOW_ENV,
      "--method",
      "rl",
      "--max-steps",
      "1",
      "--batch-size",
      "1",
      "eval.env_id=test:Slow-v0",
      "eval.episodes=64",
    ]);
    const url = await t.url;
    assert.ok(url, `the proxy listens: ${url || (await t.output).stderr}`);
    const halt = new AbortController();
    const playing = agents(url, halt.signal, { episodes: 40 });
    await until(t, "the evaluation", async () => (await marks(t)).includes("eval"));
    halt.abort();
    const { out } = await stop(t, "SIGTERM", "final", { mode: "proxy", state: "evaluation" });
    await playing;
    assert.match(out.stdout, /no held-out evaluation: interrupted/);
  },
});
