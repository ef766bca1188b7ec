/**
 * Claude Code (`@anthropic-ai/claude-code`, the Messages API) through `deno task train --source
 * proxy`, with its whole default prompt: one session run twice (`-p`, then `-p --resume`), every
 * request rewarding the turn before it through Claude Code's own `ANTHROPIC_CUSTOM_HEADERS`, and
 * the run trains on them (the flow: ./clis.ts).
 *
 * Each run is bounded by Claude Code's own `--max-turns`: a run that reaches it ends with the
 * result `error_max_turns` (exit 1), its session saved, which is as complete as a run gets here.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, REWARD_HEADER, runCli } from "./clis.ts";

/** One run of Claude Code: sampling its ~36k-token prompt takes 10–20 s here, then tool rounds. */
const CLAUDE_RUN_MS = 300_000;

/** Claude Code's `--max-turns` for each run (model answers, each one a request). */
const MAX_TURNS = 4;

/** A run of `claude -p --output-format json` completed: a success, or stopped by its limit. */
function assertCompleted(run: { code: number; stdout: string; stderr: string }, what: string) {
  const result = JSON.parse(run.stdout || "{}");
  const ok = run.code === 0 ? result.is_error === false : result.subtype === "error_max_turns";
  assert.ok(ok, `claude ${what}: exit ${run.code}: ${run.stderr}\n${run.stdout}`);
  return result as { session_id: string; subtype: string; num_turns: number };
}

await agentTest(
  "claude",
  "Claude Code",
  `agents: Claude Code (Messages API) completes a session with its whole prompt through train --source proxy (${AGENT_MODEL}), which trains on it`,
  { minPromptTokens: 30_000 },
  async (run, url, clis) => {
    const home = join(run.home, "claude-home");
    const work = join(run.home, "work");
    for (const d of [home, work]) await Deno.mkdir(d, { recursive: true });
    // The settings docs/proxy.md gives (Claude Code's own variables), pointed at this run's proxy.
    const env = {
      PATH: `${clis.nodeBin}:/usr/bin:/bin`,
      HOME: home,
      ANTHROPIC_BASE_URL: url.replace(/\/v1$/, ""),
      ANTHROPIC_API_KEY: "none",
      ANTHROPIC_CUSTOM_HEADERS: `${REWARD_HEADER.name}: ${REWARD_HEADER.value}`,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      CLAUDE_CODE_MAX_RETRIES: "0",
    };
    const claude = clis.bin("claude");
    const opts = ["--model", AGENT_MODEL, "--output-format", "json", "--max-turns", `${MAX_TURNS}`];
    const o = { env, cwd: work, timeoutMs: CLAUDE_RUN_MS };
    const first = await runCli(claude, ["-p", "Say hello in one word.", ...opts], o);
    const r1 = assertCompleted(first, "run 1");
    assert.ok(r1.session_id, `claude printed its session id: ${first.stdout}`);
    const second = await runCli(
      claude,
      ["-p", "Now say bye.", "--resume", r1.session_id, ...opts],
      o,
    );
    const r2 = assertCompleted(second, "run 2");
    console.log(
      `claude: runs of ${(first.ms / 1000).toFixed(1)} s (${r1.subtype}, ${r1.num_turns} turns) ` +
        `and ${(second.ms / 1000).toFixed(1)} s (${r2.subtype}, ${r2.num_turns} turns)`,
    );
  },
);
