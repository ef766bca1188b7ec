/**
 * Ctrl-C (SIGINT) and SIGTERM stop `deno task train` within 5 s with a checkpoint, in every
 * state a run can be in: mid-rollout, mid-step and during the held-out evaluation (env mode),
 * and waiting for turns (with a request in flight, or after the agents stopped), mid-step and
 * during the evaluation (proxy mode). Each runs the real script as a process; `test:Slow-v0`
 * (./slow_env.ts) marks what the run is doing so the signal lands in the state named.
 */

import { readJsonl } from "../../lib/rundir/mod.ts";
import { join } from "node:path";
import { assert } from "../assert.ts";
import { runAgent } from "../../lib/proxy/agent.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const SLOW_ENV = ["rollout.env_module=tests/train/slow_env.ts"];
/** The promise: the process exits within this long of the signal. */
const LIMIT_S = 5;

interface Train {
  child: Deno.ChildProcess;
  dir: string;
  marks: string;
  /** The proxy's URL once it listens ("" if it never does). */
  url: Promise<string>;
  output: Promise<{ code: number; stdout: string; stderr: string }>;
}

async function start(args: string[], env: Record<string, string> = {}): Promise<Train> {
  const home = await Deno.makeTempDir({ prefix: "tb-signals-" });
  const dir = join(home, "run");
  const marks = join(home, "marks");
  await Deno.writeTextFile(marks, "");
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "scripts/train.ts",
      "--log-path",
      dir,
      ...args,
    ],
    cwd: ROOT,
    env: {
      TINKERBENCH_HOME: home,
      TINKER_API_KEY: "",
      NO_COLOR: "1",
      TB_SIGNAL_MARKS: marks,
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { promise: url, resolve } = Promise.withResolvers<string>();
  let stdout = "";
  const reading = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      stdout += chunk;
      const m = /listening on 127\.0\.0\.1:\d+ \(clients here: (\S+)\)/.exec(stdout);
      if (m) resolve(m[1]);
    }
  })();
  const stderr = new Response(child.stderr).text();
  const output = (async () => {
    const status = await child.status;
    await reading;
    resolve("");
    return { code: status.code, stdout, stderr: await stderr };
  })();
  return { child, dir, marks, url, output };
}

async function until(what: string, cond: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function marks(t: Train): Promise<string[]> {
  return (await Deno.readTextFile(t.marks)).split("\n").filter(Boolean);
}

/** Sends `signal`, then checks the run exits 0 within the limit with a checkpoint of `kind`. */
async function stop(t: Train, signal: Deno.Signal, kind: "interrupted" | "final") {
  const t0 = performance.now();
  t.child.kill(signal);
  const out = await t.output;
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(out.code, 0, out.stderr);
  assert.ok(seconds < LIMIT_S, `exited ${seconds.toFixed(1)} s after ${signal}`);
  assert.match(out.stderr, new RegExp(`${signal}: stopping this step and saving a checkpoint`));
  const ckpts = (await readJsonl(join(t.dir, "checkpoints.jsonl"))) as {
    kind: string;
    step: number;
  }[];
  assert.equal(ckpts.at(-1)?.kind, kind, JSON.stringify(ckpts));
  return { out, seconds, checkpoint: ckpts.at(-1)! };
}

const ENV_RUN = [
  "--model-name",
  "local/tiny",
  "--env-id",
  "test:Slow-v0",
  ...SLOW_ENV,
  "--max-tokens",
  "8",
  "--group-size",
  "2",
  "--batch-size",
  "1",
];

Deno.test("signals, env mode: Ctrl-C mid-rollout saves and exits within 5 s", async () => {
  const t = await start([...ENV_RUN, "--max-steps", "50", "eval.episodes=0"]);
  await until("a rollout", async () => (await marks(t)).includes("rollout"));
  const { out, checkpoint } = await stop(t, "SIGINT", "interrupted");
  assert.match(
    out.stdout,
    new RegExp(`interrupted after step ${checkpoint.step}; rerun to resume`),
  );
  const status = JSON.parse(await Deno.readTextFile(join(t.dir, "status.json")));
  assert.equal(status.state, "interrupted");
});

Deno.test("signals, env mode: SIGTERM mid-step (the step's episodes played) saves and exits within 5 s", async () => {
  const t = await start([...ENV_RUN, "--max-steps", "50", "eval.episodes=0"]);
  // Both episodes of step 2 have ended: its update is training now. (Step 1's first
  // forward_backward also compiles the model on the local backend, seconds on a busy machine.)
  await until(
    "step 2's episodes",
    async () => (await marks(t)).filter((m) => m === "played").length >= 4,
  );
  const { checkpoint } = await stop(t, "SIGTERM", "interrupted");
  assert.ok(checkpoint.step >= 2, "the step in training is finished and saved");
  const rows = await readJsonl(join(t.dir, "metrics.jsonl"));
  assert.equal(rows.length, checkpoint.step);
});

Deno.test("signals, env mode: Ctrl-C during the held-out evaluation exits within 5 s, the run saved", async () => {
  const t = await start([...ENV_RUN, "--max-steps", "1", "eval.episodes=64"]);
  await until("the evaluation", async () => (await marks(t)).includes("eval"));
  const { out } = await stop(t, "SIGINT", "final");
  assert.match(out.stdout, /no held-out evaluation: interrupted/);
  await Deno.stat(join(t.dir, "eval.json")).then(
    () => assert.fail("a partial evaluation is not written"),
    () => {},
  );
});

const PROXY_RUN = ["--source", "proxy", "--proxy-host", "127.0.0.1", "--proxy-port", "0"];

function agent(url: string, signal: AbortSignal, episodes = 40) {
  return runAgent({
    envId: "game:GuessTheNumber-v0-easy",
    baseUrl: url,
    episodes,
    concurrency: 4,
    maxTokens: 48,
    sendRewards: true,
    signal,
  }).catch(() => {});
}

Deno.test({
  name: "signals, proxy mode: SIGTERM waiting for turns, a request in flight, exits within 5 s",
  sanitizeResources: false,
  async fn() {
    const t = await start([...PROXY_RUN, "--method", "opd", "--max-steps", "3"]);
    const url = await t.url;
    assert.ok(url, `the proxy listens: ${url || (await t.output).stderr}`);
    const pending = fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "local/tiny",
        messages: [{ role: "user", content: "Guess a number between 1 and 10." }],
        max_tokens: 8,
      }),
    }).then((r) => r.body?.cancel(), () => {});
    await stop(t, "SIGTERM", "interrupted");
    await pending;
    const status = JSON.parse(await Deno.readTextFile(join(t.dir, "status.json")));
    assert.equal(status.state, "interrupted");
  },
});

Deno.test({
  name: "signals, proxy mode: Ctrl-C waiting for turns after the agents stopped exits within 5 s",
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
    await agent(url, new AbortController().signal, 8);
    await stop(t, "SIGINT", "interrupted");
  },
});

Deno.test({
  name: "signals, proxy mode: Ctrl-C while steps train on live agents exits within 5 s",
  // The report's browser script is built while the run trains: its `deno bundle` took 5 to 8 s
  // after the save at load 25. Beside two CPU burners (load about 7) this state now exits in 1.3
  // to 1.9 s (4 runs). At load 15 to 25 it can still pass 5 s, as the other proxy states can:
  // the save waits behind the step in training and the agents' samples already queued.
  sanitizeResources: false,
  async fn() {
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
    const halt = new AbortController();
    const playing = agent(url, halt.signal, 400);
    await until(
      "a trained step",
      async () => (await readJsonl(join(t.dir, "metrics.jsonl"))).length >= 1,
    );
    // Agents still playing, the next steps training: the signal lands mid-step or mid-turn.
    const { checkpoint } = await stop(t, "SIGINT", "interrupted");
    halt.abort();
    await playing;
    assert.ok(checkpoint.step >= 1);
  },
});

Deno.test({
  name:
    "signals, proxy mode: SIGTERM during the held-out evaluation exits within 5 s, the run saved",
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
    const playing = agent(url, halt.signal, 40);
    await until("the evaluation", async () => (await marks(t)).includes("eval"));
    halt.abort();
    const { out } = await stop(t, "SIGTERM", "final");
    await playing;
    assert.match(out.stdout, /no held-out evaluation: interrupted/);
  },
});
