/**
 * Codex (`@openai/codex`, the Responses API) through `deno task train --source proxy`, with its
 * whole default prompt: one session run twice (`exec`, then `exec resume`), every request
 * rewarding the turn before it through Codex's own `env_http_headers` setting, and the run trains
 * on them (the flow: ./clis.ts).
 *
 * Codex has no turn limit (`codex exec --help`; its config has none): a run of Codex sends one
 * request per model answer until the model answers without a tool call (a call of a tool it does
 * not have is answered "unsupported call" and goes back to the model).
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, REWARD_HEADER, runCli } from "./clis.ts";

/** One run of Codex: sampling its ~29k-token prompt takes 10–20 s here, then tool rounds. */
const CODEX_RUN_MS = 300_000;

await agentTest(
  "codex",
  "Codex",
  `agents: Codex (Responses API) completes a session with its whole prompt through train --source proxy (${AGENT_MODEL}), which trains on it`,
  { minPromptTokens: 25_000 },
  async (run, url, clis) => {
    const home = join(run.home, "codex-home");
    const codexHome = join(run.home, "codex");
    const work = join(run.home, "work");
    for (const d of [home, codexHome, work]) await Deno.mkdir(d, { recursive: true });
    // The settings docs/proxy.md gives (Codex's own config keys), pointed at this run's proxy.
    await Deno.writeTextFile(
      join(codexHome, "config.toml"),
      `model = "${AGENT_MODEL}"
model_provider = "tb"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.tb]
name = "tinkerbench proxy"
base_url = "${url}"
env_key = "TB_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = ${CODEX_RUN_MS}
env_http_headers = { "${REWARD_HEADER.name}" = "TB_TURN_REWARD" }

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`,
    );
    const env = {
      PATH: `${clis.nodeBin}:/usr/bin:/bin`,
      HOME: home,
      CODEX_HOME: codexHome,
      TB_API_KEY: "none",
      TB_TURN_REWARD: REWARD_HEADER.value,
    };
    const codex = [
      clis.bin("codex"),
      "exec",
      "--strict-config",
      "--skip-git-repo-check",
      "--json",
    ];
    const o = { env, cwd: work, timeoutMs: CODEX_RUN_MS };
    const first = await runCli("node", [...codex, "Say hello in one word."], o);
    assert.equal(first.code, 0, `codex run 1: ${first.stderr}\n${first.stdout}`);
    const thread = /"thread_id":"([^"]+)"/.exec(first.stdout)?.[1];
    assert.ok(thread, `codex printed its thread id: ${first.stdout}`);
    assert.match(first.stdout, /"type":"turn.completed"/);
    const second = await runCli("node", [...codex, "resume", thread, "Now say bye."], o);
    assert.equal(second.code, 0, `codex run 2: ${second.stderr}\n${second.stdout}`);
    assert.match(second.stdout, /"type":"turn.completed"/);
    console.log(
      `codex: runs of ${(first.ms / 1000).toFixed(1)} s and ${(second.ms / 1000).toFixed(1)} s`,
    );
  },
);
