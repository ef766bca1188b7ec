/**
 * OpenClaw (`openclaw`, chat completions, run on Node 24) through `deno task train --source
 * proxy`: two turns of one session (`openclaw agent --local --session-id`), the second rewarding
 * the first through the provider's own `headers` setting, and the run trains on the first turn.
 *
 * Until a local model holds OpenClaw's ~55k-token prompt (`local/long`, see ./clis.ts), the run
 * cuts prompts with the opted-in `proxy.truncate_keep_head`, and the test checks the cut is
 * recorded.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, runCli } from "./clis.ts";

/**
 * OpenClaw's own start-up before it sends its request (workspace, plugins, its SQLite state) took
 * 56 s of a 106 s turn on this shared, loaded machine; the model's answer took 8 s.
 */
const OPENCLAW_TURN_MS = 240_000;

/** OpenClaw's config: the proxy as a custom provider (docs/proxy.md), with extra headers. */
function config(url: string, headers: Record<string, string>): string {
  return JSON.stringify({
    models: {
      mode: "replace",
      providers: {
        tinkerbench: {
          baseUrl: url,
          apiKey: "none",
          api: "openai-completions",
          headers,
          models: [{
            id: AGENT_MODEL,
            name: "tinkerbench policy",
            contextWindow: 1_000_000,
            maxTokens: 256,
            compat: { sendSessionAffinityHeaders: true },
          }],
        },
      },
    },
    agents: { defaults: { model: { primary: `tinkerbench/${AGENT_MODEL}` } } },
  });
}

await agentTest(
  "openclaw",
  "OpenClaw",
  `agents: OpenClaw (chat completions) completes a session through train --source proxy (${AGENT_MODEL}), which trains on it`,
  async (run, url, clis) => {
    const home = join(run.home, "openclaw-home");
    const work = join(run.home, "work");
    for (const d of [home, work]) await Deno.mkdir(d, { recursive: true });
    const cfg = join(run.home, "openclaw.json5");
    const env = {
      PATH: `${clis.nodeBin}:/usr/bin:/bin`,
      HOME: home,
      OPENCLAW_CONFIG_PATH: cfg,
    };
    const openclaw = clis.bin("openclaw");
    const turn = (text: string) => [
      "agent",
      "--local",
      "--session-id",
      "tb-test",
      "--message",
      text,
      "--json",
    ];
    await Deno.writeTextFile(cfg, config(url, {}));
    const first = await runCli(openclaw, turn("Say hello in one word."), {
      env,
      cwd: work,
      timeoutMs: OPENCLAW_TURN_MS,
    });
    assert.equal(first.code, 0, `openclaw turn 1: ${first.stderr}\n${first.stdout}`);
    // The second turn's request rewards the first (X-Turn-Reward: 1, the provider's headers).
    await Deno.writeTextFile(cfg, config(url, { "X-Turn-Reward": "1" }));
    const second = await runCli(openclaw, turn("Now say bye."), {
      env,
      cwd: work,
      timeoutMs: OPENCLAW_TURN_MS,
    });
    assert.equal(second.code, 0, `openclaw turn 2: ${second.stderr}\n${second.stdout}`);
  },
);
