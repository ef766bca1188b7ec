/**
 * pi (`@mariozechner/pi-coding-agent`) through `deno task train --source proxy`, on chat
 * completions (`api: "openai-completions"`, the API of its docs' minimal custom-provider example):
 * two turns of one session (`-p`, then `-p -c`), the second rewarding the first through the
 * provider's own `headers` setting, and the run trains on the first turn.
 *
 * Until a local model holds pi's prompt (`local/long`, see ./clis.ts), the run cuts prompts with
 * the opted-in `proxy.truncate_keep_head`, and the test checks the cut is recorded.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, runCli } from "./clis.ts";

/** pi's `models.json`: the proxy as a custom provider (docs/proxy.md), with extra headers. */
function modelsJson(url: string, headers: Record<string, string>): string {
  return JSON.stringify({
    providers: {
      tinkerbench: {
        baseUrl: url,
        api: "openai-completions",
        apiKey: "none",
        headers,
        models: [{ id: AGENT_MODEL, contextWindow: 1_000_000, maxTokens: 256 }],
      },
    },
  });
}

await agentTest(
  "pi",
  "pi",
  `agents: pi (chat completions) completes a session through train --source proxy (${AGENT_MODEL}), which trains on it`,
  async (run, url, clis) => {
    const home = join(run.home, "pi-home");
    const agentDir = join(run.home, "pi-agent");
    const sessions = join(run.home, "pi-sessions");
    const work = join(run.home, "work");
    for (const d of [home, agentDir, sessions, work]) await Deno.mkdir(d, { recursive: true });
    const env = {
      PATH: `${clis.nodeBin}:/usr/bin:/bin`,
      HOME: home,
      PI_CODING_AGENT_DIR: agentDir,
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
    };
    const pi = clis.bin("pi");
    const opts = ["--provider", "tinkerbench", "--model", AGENT_MODEL, "--session-dir", sessions];
    await Deno.writeTextFile(join(agentDir, "models.json"), modelsJson(url, {}));
    const first = await runCli(pi, ["-p", "Say hello in one word.", ...opts], { env, cwd: work });
    assert.equal(first.code, 0, `pi turn 1: ${first.stderr}\n${first.stdout}`);
    // The second turn's request rewards the first (X-Turn-Reward: 1, pi's provider headers).
    await Deno.writeTextFile(
      join(agentDir, "models.json"),
      modelsJson(url, { "X-Turn-Reward": "1" }),
    );
    const second = await runCli(pi, ["-p", "Now say bye.", "-c", ...opts], { env, cwd: work });
    assert.equal(second.code, 0, `pi turn 2: ${second.stderr}\n${second.stdout}`);
  },
);
