/**
 * OpenClaw (`openclaw`, chat completions, run on Node 24) through `deno task train --source
 * proxy`, with its whole default prompt: one session run twice (`openclaw agent --local
 * --session-id`), every request rewarding the turn before it through the provider's own
 * `headers` setting, and the run trains on them (the flow: ./clis.ts).
 *
 * OpenClaw has no turn limit (`openclaw agent --help`; its config's `tools.loopDetection` only
 * catches a tool called again and again): a run sends one request per model answer until the
 * model answers without a tool call.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, REWARD_HEADER, runCli } from "./clis.ts";

/**
 * One run of OpenClaw. Its own start-up before it sends its request (workspace, plugins, its
 * SQLite state) took 56 s of a 106 s turn on this shared, loaded machine; sampling its whole
 * ~50k-token prompt takes 15–30 s more.
 */
const OPENCLAW_RUN_MS = 420_000;

/** OpenClaw's config: the proxy as a custom provider (docs/proxy.md), rewarding each turn. */
function config(url: string): string {
  return JSON.stringify({
    models: {
      mode: "replace",
      providers: {
        tinkerbench: {
          baseUrl: url,
          apiKey: "none",
          api: "openai-completions",
          headers: { [REWARD_HEADER.name]: REWARD_HEADER.value },
          models: [{
            id: AGENT_MODEL,
            name: "tinkerbench policy",
            contextWindow: 65_536,
            maxTokens: 128,
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
  `agents: OpenClaw (chat completions) completes a session with its whole prompt through train --source proxy (${AGENT_MODEL}), which trains on it`,
  { minPromptTokens: 40_000 },
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
    await Deno.writeTextFile(cfg, config(url));
    const o = { env, cwd: work, timeoutMs: OPENCLAW_RUN_MS };
    const first = await runCli(openclaw, turn("Say hello in one word."), o);
    assert.equal(first.code, 0, `openclaw run 1: ${first.stderr}\n${first.stdout}`);
    const second = await runCli(openclaw, turn("Now say bye."), o);
    assert.equal(second.code, 0, `openclaw run 2: ${second.stderr}\n${second.stdout}`);
    console.log(
      `openclaw: runs of ${(first.ms / 1000).toFixed(1)} s and ${(second.ms / 1000).toFixed(1)} s`,
    );
  },
);
