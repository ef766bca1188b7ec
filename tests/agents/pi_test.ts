/**
 * pi (`@mariozechner/pi-coding-agent`) through `deno task train --source proxy`, on chat
 * completions (`api: "openai-completions"`, the API of its docs' minimal custom-provider example),
 * with its whole default prompt: one session run twice (`-p`, then `-p -c`), every request
 * rewarding the turn before it through the provider's own `headers` setting, and the run trains
 * on them (the flow: ./clis.ts).
 *
 * pi has no turn limit (`pi --help`, docs/settings.md: only retries): a run of pi sends one
 * request per model answer until the model answers without a tool call.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, REWARD_HEADER, runCli } from "./clis.ts";

/** pi's `models.json`: the proxy as a custom provider (docs/proxy.md), rewarding each turn. */
function modelsJson(url: string): string {
  return JSON.stringify({
    providers: {
      tinkerbench: {
        baseUrl: url,
        api: "openai-completions",
        apiKey: "none",
        headers: { [REWARD_HEADER.name]: REWARD_HEADER.value },
        models: [{ id: AGENT_MODEL, contextWindow: 65_536, maxTokens: 128 }],
      },
    },
  });
}

/** One run of pi: its prompt's sampling and a few tool-call rounds, on a loaded machine. */
const PI_RUN_MS = 240_000;

await agentTest(
  "pi",
  "pi",
  `agents: pi (chat completions) completes a session with its whole prompt through train --source proxy (${AGENT_MODEL}), which trains on it`,
  { minPromptTokens: 3_500 },
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
    await Deno.writeTextFile(join(agentDir, "models.json"), modelsJson(url));
    const o = { env, cwd: work, timeoutMs: PI_RUN_MS };
    const first = await runCli(pi, ["-p", "Say hello in one word.", ...opts], o);
    assert.equal(first.code, 0, `pi run 1: ${first.stderr}\n${first.stdout}`);
    const second = await runCli(pi, ["-p", "Now say bye.", "-c", ...opts], o);
    assert.equal(second.code, 0, `pi run 2: ${second.stderr}\n${second.stdout}`);
    console.log(
      `pi: runs of ${(first.ms / 1000).toFixed(1)} s and ${(second.ms / 1000).toFixed(1)} s`,
    );
  },
);
