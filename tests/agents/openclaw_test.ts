/**
 * OpenClaw (`openclaw`, chat completions, run on Node 24) through `deno task train --source
 * proxy`, with its whole default prompt: one session run twice (`openclaw agent --local
 * --session-id`), every request rewarding the turn before it through the provider's own
 * `headers` setting, and the run trains on them (the flow: ./clis.ts).
 *
 * OpenClaw has no turn limit (`openclaw agent --help`; its config's `tools.loopDetection` only
 * catches a tool called again and again): a run sends one request per model answer until the
 * model answers without a tool call.
 *
 * `local/long` often answers OpenClaw's prompt with `<tool_call>` text whose JSON is broken, so
 * the proxy returns it as text. OpenClaw strips tool-call-shaped text from the visible answer,
 * finds it empty, asks again once ("empty response … retrying 1/1"), and then ends the run with
 * exit 1 and "Agent couldn't generate a response" (an incomplete turn). A reply cut at
 * `--max-tokens` ends the same way (`stopReason=length`). That is the model's answer, not a
 * failure of the proxy or the run: the test accepts that end, from its own log lines, besides
 * exit 0, and says which it was. So is the end where the model's call parses at the proxy but
 * OpenClaw rejects it before running it (an empty name or arguments it cannot finalize: "Provider
 * returned an incomplete or malformed tool call", exit 1; seen once on CI, 2026-11-28).
 *
 * OpenClaw then drops that retry (its internal prompt and the answer to it) from its transcript,
 * so its next run replays the conversation as it was before the retry. That does not extend the
 * last turn the proxy served, and under `history` binding (only an exact extension joins) it
 * opens a new proxy session, with OpenClaw's label. The test accepts several sessions, each with
 * OpenClaw's label (`splitLabel`).
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, REWARD_HEADER, runCli } from "./clis.ts";

/**
 * One run of OpenClaw. Its own start-up before it sends its request (workspace, plugins, its
 * SQLite state) took 56 s of a 106 s turn on this shared, loaded machine; sampling its whole
 * ~50k-token prompt takes 15–30 s more on a quiet machine, minutes beside other jobs.
 */
const OPENCLAW_RUN_MS = 600_000;

/** OpenClaw's session id; its requests carry it as their label (`tb-test:0`). */
const SESSION = "tb-test";

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

/**
 * A run of OpenClaw ended on its own: exit 0, or its incomplete-turn end after an answer it could
 * not use (the model's tool-call-shaped text, or a reply cut at `--max-tokens`; see the module's
 * doc). Returns which.
 */
function assertCompleted(
  run: { code: number; stdout: string; stderr: string; timedOut: boolean },
  what: string,
): string {
  if (run.code === 0) return "exit 0";
  const text = run.stderr + run.stdout;
  const incomplete = text.includes("incomplete turn detected") &&
    text.includes("Agent couldn't generate a response");
  const rejectedCall = text.includes("Provider returned an incomplete or malformed tool call");
  const ownEnd = !run.timedOut && run.code === 1 && (incomplete || rejectedCall);
  assert.ok(ownEnd, `openclaw ${what}: exit ${run.code}: ${run.stderr}\n${run.stdout}`);
  if (!incomplete) return "exit 1: the model's tool call, rejected by OpenClaw before it ran";
  const why = text.includes("Assistant reply looks like a tool call")
    ? "the model's tool-call-shaped text"
    : `stopReason=${text.match(/stopReason=(\w+)/)?.[1] ?? "unknown"}`;
  return `exit 1: an incomplete turn (${why})`;
}

await agentTest(
  "openclaw",
  "OpenClaw",
  `agents: OpenClaw (chat completions) completes a session with its whole prompt through train --source proxy (${AGENT_MODEL}), which trains on it`,
  { minPromptTokens: 40_000, splitLabel: SESSION },
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
      SESSION,
      "--message",
      text,
      "--json",
    ];
    await Deno.writeTextFile(cfg, config(url));
    const o = { env, cwd: work, timeoutMs: OPENCLAW_RUN_MS };
    const first = await runCli(openclaw, turn("Say hello in one word."), o);
    const end1 = assertCompleted(first, "run 1");
    const second = await runCli(openclaw, turn("Now say bye."), o);
    const end2 = assertCompleted(second, "run 2");
    console.log(
      `openclaw: runs of ${(first.ms / 1000).toFixed(1)} s (${end1}) and ` +
        `${(second.ms / 1000).toFixed(1)} s (${end2})`,
    );
  },
);
