/**
 * Codex (`@openai/codex`, the Responses API) through `deno task train --source proxy`: two turns
 * of one session (`exec`, then `exec resume`), the second rewarding the first through Codex's
 * own `env_http_headers` setting, and the run trains on the first turn.
 *
 * Until a local model holds Codex's ~9k-token prompt (`local/long`, see ./clis.ts), the run cuts
 * prompts with the opted-in `proxy.truncate_keep_head`, and the test checks the cut is recorded.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { AGENT_MODEL, agentTest, runCli } from "./clis.ts";

await agentTest(
  "codex",
  "Codex",
  `agents: Codex (Responses API) completes a session through train --source proxy (${AGENT_MODEL}), which trains on it`,
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
env_http_headers = { "X-Turn-Reward" = "TB_TURN_REWARD" }

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
    };
    const codex = [
      clis.bin("codex"),
      "exec",
      "--strict-config",
      "--skip-git-repo-check",
      "--json",
    ];
    const first = await runCli("node", [...codex, "Say hello in one word."], { env, cwd: work });
    assert.equal(first.code, 0, `codex turn 1: ${first.stderr}\n${first.stdout}`);
    const thread = /"thread_id":"([^"]+)"/.exec(first.stdout)?.[1];
    assert.ok(thread, `codex printed its thread id: ${first.stdout}`);
    assert.match(first.stdout, /"type":"turn.completed"/);
    // The second turn's request rewards the first (X-Turn-Reward: 1 from Codex's own setting).
    const second = await runCli("node", [...codex, "resume", thread, "Now say bye."], {
      env: { ...env, TB_TURN_REWARD: "1" },
      cwd: work,
    });
    assert.equal(second.code, 0, `codex turn 2: ${second.stderr}\n${second.stdout}`);
    assert.match(second.stdout, /"type":"turn.completed"/);
  },
);
