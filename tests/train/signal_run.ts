/**
 * What the signal tests share: `deno task train` as a real process on the local backend, the
 * marks `test:Slow-v0` (./slow_env.ts) leaves so a signal lands in a known state, and
 * {@link stop}, which sends the signal, times the exit and checks the checkpoint.
 *
 * The promise is 5 s from the signal to the exit (docs/security.md). A unit test on a shared
 * 2-core machine cannot hold a wall-clock bound that tight, so a test fails only past
 * {@link HANG_S} (a run that waits for something it should not: the bug was 120 s), and each
 * prints what it measured; with `TB_SIGNAL_TIMES=FILE` it also appends it there as a JSON line.
 * Those lines, from passes beside two CPU burners, are what bench/results/signals.json records.
 */

import { join } from "node:path";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { runAgent } from "../../lib/proxy/agent.ts";
import { assert } from "../assert.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
/** The environment module the runs load (`test:Slow-v0`). */
export const SLOW_ENV = ["rollout.env_module=tests/train/slow_env.ts"];
/** The goal: the process exits within this long of the signal. */
export const GOAL_S = 5;
/** What a test fails past: a hang, whatever the machine's load. */
export const HANG_S = 30;

/** A `deno task train` process. */
export interface Train {
  child: Deno.ChildProcess;
  dir: string;
  marks: string;
  /** The proxy's URL once it listens ("" if it never does). */
  url: Promise<string>;
  output: Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts `deno task train` in a run directory of its own, with `args`. */
export async function start(args: string[], env: Record<string, string> = {}): Promise<Train> {
  const home = await Deno.makeTempDir({ prefix: "tb-signals-" });
  const dir = join(home, "run");
  const marks = join(home, "marks");
  await Deno.writeTextFile(marks, "");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/train.ts", "--log-path", dir, ...args],
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

/** Waits until `cond` holds; a run that never gets there fails after `ms` (or exits first). */
export async function until(
  t: Train,
  what: string,
  cond: () => Promise<boolean>,
  ms = 180_000,
): Promise<void> {
  let exited = false;
  t.output.then(() => exited = true);
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (exited) throw new Error(`the run exited before ${what}: ${(await t.output).stderr}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The marks the run's environment left so far. */
export async function marks(t: Train): Promise<string[]> {
  return (await Deno.readTextFile(t.marks)).split("\n").filter(Boolean);
}

/** How many of `what` the run's environment marked. */
export async function count(t: Train, what: string): Promise<number> {
  return (await marks(t)).filter((m) => m === what).length;
}

/** The run's metrics rows so far. */
export async function rows(t: Train): Promise<number> {
  return (await readJsonl(join(t.dir, "metrics.jsonl"))).length;
}

/** A checkpoint as `checkpoints.jsonl` records it. */
export interface Checkpoint {
  kind: string;
  step: number;
}

/**
 * Sends `signal` to the run in the state named `state`, then checks it exits 0 (within
 * {@link HANG_S}) with the steps it recorded saved: a checkpoint of `kind` whose step is that of
 * the last metrics row, or, when no step trained, none (the run starts over exactly; the event
 * says so). Prints (and records) the seconds it took.
 */
export async function stop(
  t: Train,
  signal: Deno.Signal,
  kind: "interrupted" | "final",
  state: { mode: "env" | "proxy"; state: string },
) {
  const load = Deno.loadavg()[0];
  const recorded = await rows(t);
  const t0 = performance.now();
  t.child.kill(signal);
  const out = await t.output;
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stderr, new RegExp(`${signal}: stopping this step and saving a checkpoint`));
  const ckpts = (await readJsonl(join(t.dir, "checkpoints.jsonl"))) as Checkpoint[];
  const steps = await rows(t);
  const checkpoint = ckpts.at(-1) ?? null;
  if (steps === 0) {
    assert.deepEqual(ckpts, [], "no step trained: nothing to save");
    const events = await readJsonl(join(t.dir, "events.jsonl")) as { event: string }[];
    assert.ok(events.some((e) => e.event === "nothing_to_save"), JSON.stringify(events));
    assert.match(out.stdout, /no step trained since the start, so no new checkpoint/);
  } else {
    assert.equal(checkpoint?.kind, kind, JSON.stringify(ckpts));
    assert.equal(checkpoint?.step, steps, "the checkpoint holds the steps recorded");
  }
  // Steps the run finished after the signal: 1 when it landed mid-step.
  const finished = steps - recorded;
  const line = { ...state, signal, seconds: round(seconds), load: round(load), finished };
  console.log(`signal to exit: ${JSON.stringify(line)}`);
  const record = Deno.env.get("TB_SIGNAL_TIMES");
  if (record) await Deno.writeTextFile(record, JSON.stringify(line) + "\n", { append: true });
  assert.ok(seconds < HANG_S, `exited ${seconds.toFixed(1)} s after ${signal}`);
  return { out, seconds, checkpoint, steps };
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Reference agents playing GuessTheNumber through the proxy at `url`, until `signal`. */
export function agents(
  url: string,
  signal: AbortSignal,
  o: { episodes?: number; onEpisode?: () => void } = {},
): Promise<void> {
  return runAgent({
    envId: "game:GuessTheNumber-v0-easy",
    baseUrl: url,
    episodes: o.episodes ?? 40,
    concurrency: 4,
    maxTokens: 48,
    sendRewards: true,
    onEpisode: o.onEpisode,
    signal,
  }).then(() => {}, () => {});
}
