/**
 * Every shipped example, run as a user runs it: each is `deno task train` (its own process, its
 * own embedded backend) with the command the README or the example's header gives, cut to a
 * fixed step budget, with what it needs beside it (`deno task envs serve` for the ORS
 * environments of `configs/openreward-multi.yaml`, the reference agent `deno task agent` for
 * `--source proxy`). From each run directory it reads what the run recorded: datums trained per
 * step (`metrics.jsonl`), the held-out line's base and trained success on the same episodes
 * (`eval.json`, per environment for a mix) or why there is none (`events.jsonl`), and the exit
 * code with the run's `error:` line when it failed. Nothing is scored here that the run did not
 * write.
 *
 * Run: `deno task bench examples` (writes bench/results/examples.json);
 * `TB_BENCH_EXAMPLES=lucky deno task bench examples` runs only the rows whose name contains
 * "lucky" and keeps the others.
 *
 * @module
 */

import { join } from "node:path";
import { z } from "zod";
import { METRIC, readEvaluation, readJsonl, runPath } from "../lib/rundir/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** One shipped example: the train command's arguments and what must run beside it. */
export interface ExampleCase {
  name: string;
  /** `deno task train` arguments (the run directory is added). */
  train: string[];
  /** `deno task envs serve` on this port while the run trains. */
  orsPort?: number;
  /** `deno task agent` arguments, started once the proxy answers (with `--base-url`). */
  agent?: string[];
}

/**
 * A run past this is stopped (Ctrl-C: it saves and exits; its evaluation is then skipped). Each
 * example trains for the steps its own command or config gives, chosen to fit inside this on
 * this machine: the point is what a user who runs it sees.
 */
export const EXAMPLE_BUDGET_MINUTES = 15;
const PROXY_PORT = 30_917;

/**
 * The `deno task train` arguments of the README's first command, read from its first lines so
 * the benchmark runs what a newcomer runs.
 */
export function readmeFirstCommand(readme: string): string[] {
  const m = /deno task train ([^#\n]*)/.exec(readme);
  if (!m) throw new Error("README.md: no `deno task train` command in its first lines");
  return m[1].trim().split(/\s+/);
}

/** The README's command for the tutorial's environment, examples/lucky_number.ts. */
const LUCKY_NUMBER = [
  "--env-module",
  "examples/lucky_number.ts",
  "--env-id",
  "my:LuckyNumber-v0",
  "--group-size",
  "8",
  "--max-steps",
  "30",
];

/** The examples the README and the shipped files offer, in the README's order. */
export const EXAMPLES: ExampleCase[] = [
  {
    name: "README first command",
    train: readmeFirstCommand(Deno.readTextFileSync(join(ROOT, "README.md"))),
  },
  {
    name: "examples/lucky_number.ts",
    // The README's command for the tutorial's environment (rl on local/games2).
    train: LUCKY_NUMBER,
  },
  ...(["opd", "combine"] as const).map((method) => ({
    name: `--method ${method}`,
    // The command of docs/faq.md ("When do opd and combine help"): the tutorial's Lucky Number,
    // whose reply names the number, with the local model taught to copy a number its hint names
    // (local/hint) as its own teacher.
    train: [
      ...LUCKY_NUMBER,
      "--method",
      method,
      "--model-name",
      "local/hint",
      "--eval.episodes",
      "256",
    ],
  })),
  {
    name: "examples/my_env.ts",
    // The command in the example's header.
    train: [
      "--env-module",
      "examples/my_env.ts",
      "--env-id",
      "my:Echo-v0",
      "--model-name",
      "local/tools",
      "--group-size",
      "8",
      "--max-steps",
      "100",
    ],
  },
  {
    name: "tool:GuessTheNumber-v0-easy",
    // The local model that calls tools; a call is about 30 tokens, and with the default 256 a
    // turn the tools' declarations leave too little of the local context. An episode ends at a
    // malformed call, which scores -1; each group samples 16 and trains on the 4 whose rewards
    // vary most; 80 steps, held out on 256 episodes (models/README.md, "RL on the tool
    // GuessTheNumber").
    train: [
      "--env-id",
      "tool:GuessTheNumber-v0-easy",
      "--model-name",
      "local/tools",
      "--max-tokens",
      "96",
      "--terminate-on-parse-error",
      "true",
      "--rollout.invalid-tool-call-reward",
      "-1",
      "--group-size",
      "16",
      "--advantages.downsample-to",
      "4",
      "--reward-source",
      "success",
      "--eval.episodes",
      "256",
      "--max-steps",
      "80",
    ],
  },
  {
    // The config's own max_steps (80).
    name: "configs/openreward-single.yaml",
    train: ["--config_path", "configs/openreward-single.yaml"],
  },
  {
    // The config's own max_steps (60), with its ORS game's server beside it.
    name: "configs/openreward-multi.yaml",
    train: ["--config_path", "configs/openreward-multi.yaml"],
    orsPort: 8080,
  },
  {
    name: "--source proxy + reference agent",
    train: [
      "--source",
      "proxy",
      "--method",
      "rl",
      "--batch-size",
      "8",
      "--max-steps",
      "80",
      "--proxy-port",
      `${PROXY_PORT}`,
      // The agent plays GuessTheNumber: the held-out line plays it too.
      "--eval.env-id",
      "game:GuessTheNumber-v0-easy",
      "--eval.episodes",
      "256",
    ],
    agent: ["--episodes", "1600", "--concurrency", "8"],
  },
];

/** What one example's run recorded. */
export interface ExampleResult {
  name: string;
  /** When this row was run. */
  date?: string;
  command: string;
  exit_code: number;
  /** The run's `error:` line when it failed. */
  error?: string;
  wall_s: number;
  steps: number;
  datums_per_step: number[];
  held_out: {
    episodes: number;
    base: number;
    trained: number;
    environments?: Record<string, { base: number; trained: number; episodes: number }>;
  } | null;
  /** Why there is no held-out evaluation, from the run's events. */
  held_out_skipped?: string;
}

function deno(args: string[], env: Record<string, string>, piped = true): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { TINKER_API_KEY: "", NO_COLOR: "1", ...env },
    stdout: piped ? "piped" : "null",
    stderr: piped ? "piped" : "null",
  }).spawn();
}

async function waitFor(url: string, seconds: number): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    try {
      const res = await fetch(url);
      await res.body?.cancel();
      if (res.ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${url} did not answer within ${seconds} s`);
}

function stop(p: Deno.ChildProcess | undefined, signal: Deno.Signal = "SIGTERM"): void {
  try {
    p?.kill(signal);
  } catch { /* already exited */ }
}

/** Runs one example and reads its run directory. */
export async function runExample(c: ExampleCase, log: (m: string) => void): Promise<ExampleResult> {
  const home = await Deno.makeTempDir({ prefix: "tb-bench-example-" });
  const runDir = join(home, "run");
  const env = { TINKERBENCH_HOME: home };
  let server: Deno.ChildProcess | undefined;
  let agent: Deno.ChildProcess | undefined;
  let train: Deno.ChildProcess | undefined;
  let budget: ReturnType<typeof setTimeout> | undefined;
  const t0 = performance.now();
  try {
    if (c.orsPort) {
      server = deno(["task", "envs", "serve", "--port", `${c.orsPort}`], env, false);
      await waitFor(`http://127.0.0.1:${c.orsPort}/health`, 60);
    }
    const args = ["task", "train", ...c.train, "--log-path", runDir];
    const run = train = deno(args, env);
    budget = setTimeout(() => stop(run, "SIGINT"), EXAMPLE_BUDGET_MINUTES * 60_000);
    if (c.agent) {
      await waitFor(`http://127.0.0.1:${PROXY_PORT}/healthz`, 120);
      agent = deno(
        [
          "task",
          "agent",
          ...c.agent,
          "--base-url",
          `http://127.0.0.1:${PROXY_PORT}/v1`,
        ],
        env,
        false,
      );
    }
    const out = await run.output();
    train = undefined;
    const wall = (performance.now() - t0) / 1000;
    const stderr = new TextDecoder().decode(out.stderr);
    const error = stderr.split("\n").find((l) => l.startsWith("error:"));
    // A run that failed before its first step leaves no metrics or events; anything else it
    // wrote is read as is, and a file that does not parse fails the benchmark.
    const metrics = await readJsonl(runPath(runDir, "metrics"));
    const datums = metrics.map((m) => Number((m as Record<string, unknown>)[METRIC.datums]));
    const evaluation = await readEvaluation(runDir);
    const events = await readJsonl(runPath(runDir, "events"));
    const skipped = events.map((e) => e as Record<string, unknown>)
      .find((e) => e.event === "evaluation_skipped");
    const result: ExampleResult = {
      name: c.name,
      date: new Date().toISOString(),
      command: `deno task train ${c.train.join(" ")}`,
      exit_code: out.code,
      ...(error ? { error } : {}),
      wall_s: Math.round(wall),
      steps: metrics.length,
      datums_per_step: datums,
      held_out: evaluation
        ? {
          episodes: evaluation.trained.episodes,
          base: evaluation.base.success,
          trained: evaluation.trained.success,
          ...(evaluation.environments
            ? {
              environments: Object.fromEntries(
                Object.entries(evaluation.environments).flatMap(([id, e]) =>
                  "base" in e
                    ? [[id, {
                      base: e.base.success,
                      trained: e.trained.success,
                      episodes: e.trained.episodes,
                    }]]
                    : []
                ),
              ),
            }
            : {}),
        }
        : null,
      ...(skipped ? { held_out_skipped: String(skipped.detail) } : {}),
    };
    log(
      `${c.name}: exit ${out.code}, ${metrics.length} steps, datums ${datums.join(" ")}, ` +
        (evaluation
          ? `held-out ${evaluation.base.success.toFixed(2)} → ${
            evaluation.trained.success.toFixed(2)
          }`
          : `no held-out (${result.held_out_skipped ?? error ?? "none written"})`) +
        ` (${wall.toFixed(0)} s)`,
    );
    return result;
  } finally {
    clearTimeout(budget);
    stop(train);
    stop(agent);
    stop(server);
    await train?.status;
    await agent?.status;
    await server?.status;
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

/**
 * `TB_BENCH_EXAMPLES=<text>`: run only the examples whose name contains it, and keep the other
 * rows of the existing bench/results/examples.json (each row carries its own date).
 */
const OnlyEnv = z.object({ TB_BENCH_EXAMPLES: z.string().min(1).optional() });

/**
 * Runs every example in turn (or those whose name contains `only`, default
 * `TB_BENCH_EXAMPLES`); the record for the JSON. With `only`, the rows of `previous` (the
 * existing record) that were not run are kept, in {@link EXAMPLES}' order.
 */
export async function benchExamples(
  log: (m: string) => void,
  only: string | undefined = OnlyEnv.parse(Deno.env.toObject()).TB_BENCH_EXAMPLES,
  previous: Record<string, unknown> | null = readPrevious(),
): Promise<Record<string, unknown>> {
  const rows = new Map<string, ExampleResult>();
  if (only && previous) {
    for (const r of (previous.examples ?? []) as ExampleResult[]) rows.set(r.name, r);
  }
  for (const c of EXAMPLES.filter((e) => !only || e.name.includes(only))) {
    // What a run records replaces the old row's; notes kept beside it (measured_by_hand) stay.
    const notes = Object.fromEntries(
      Object.entries(rows.get(c.name) ?? {}).filter(([k]) => !RESULT_KEYS.includes(k)),
    );
    rows.set(c.name, { ...notes, ...await runExample(c, log) });
  }
  const order = EXAMPLES.map((e) => e.name);
  return {
    ...(only && previous ? previous : {}),
    benchmark: "examples",
    date: new Date().toISOString(),
    budget_minutes: EXAMPLE_BUDGET_MINUTES,
    load_average_end: Deno.loadavg(),
    examples: [...rows.values()].filter((r) => order.includes(r.name))
      .sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name)),
  };
}

/** The fields a run writes into its row (anything else in a row is a note kept across runs). */
const RESULT_KEYS = [
  "name",
  "date",
  "command",
  "exit_code",
  "error",
  "wall_s",
  "steps",
  "datums_per_step",
  "held_out",
  "held_out_skipped",
];

function readPrevious(): Record<string, unknown> | null {
  try {
    return JSON.parse(Deno.readTextFileSync(join(ROOT, "bench/results/examples.json")));
  } catch {
    return null;
  }
}
