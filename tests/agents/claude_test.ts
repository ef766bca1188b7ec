/**
 * Claude Code (`@anthropic-ai/claude-code`, the Messages API) through `deno task train --source
 * proxy`: two turns of one session (`-p`, then `-p --resume`), the second rewarding the first
 * through Claude Code's own `ANTHROPIC_CUSTOM_HEADERS`, and the run trains on the first turn.
 *
 * Until a local model holds Claude Code's ~12k-token prompt (`local/long`, see ./clis.ts), the run
 * cuts prompts with the opted-in `proxy.truncate_keep_head`, and the test checks the cut is
 * recorded.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, runCli } from "./clis.ts";

await agentTest(
  "claude",
  "Claude Code",
  `agents: Claude Code (Messages API) completes a session through train --source proxy (${AGENT_MODEL}), which trains on it`,
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
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      CLAUDE_CODE_MAX_RETRIES: "0",
    };
    const claude = clis.bin("claude");
    const opts = ["--model", AGENT_MODEL, "--output-format", "json"];
    const first = await runCli(claude, ["-p", "Say hello in one word.", ...opts], {
      env,
      cwd: work,
    });
    assert.equal(first.code, 0, `claude turn 1: ${first.stderr}\n${first.stdout}`);
    const session = JSON.parse(first.stdout).session_id as string;
    assert.ok(session, `claude printed its session id: ${first.stdout}`);
    // The second turn's request rewards the first (X-Turn-Reward: 1, Claude Code's own setting).
    const second = await runCli(claude, ["-p", "Now say bye.", "--resume", session, ...opts], {
      env: { ...env, ANTHROPIC_CUSTOM_HEADERS: "X-Turn-Reward: 1" },
      cwd: work,
    });
    assert.equal(second.code, 0, `claude turn 2: ${second.stderr}\n${second.stdout}`);
    assert.equal(JSON.parse(second.stdout).is_error, false, second.stdout);
  },
);
