/**
 * `deno task mcp` driven by the official SDK's own client over stdio, as an MCP agent would.
 */

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { assert } from "../assert.ts";
import { TOOL_NAMES } from "../../lib/runs/mcp.ts";
import { listEnvs } from "../../lib/envs/registry.ts";
import { startRunsServer } from "../../lib/runs/server.ts";
import { HELD_OUT_EVALUATOR } from "./evaluator.ts";
import { TINY_RUN, waitFor } from "./helpers.ts";

const SCRIPT = new URL("../../scripts/mcp.ts", import.meta.url).pathname;

Deno.test("mcp: the SDK's client lists the tools, lists environments and starts (and stops) a run", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-mcp-" });
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", SCRIPT, "--data-dir", dataDir],
    env: { ...Deno.env.toObject(), TINKER_API_KEY: "", NO_COLOR: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Uint8Array) => (stderr += new TextDecoder().decode(d)));
  const client = new Client({ name: "tinkerbench-test", version: "1.0.0" });
  await client.connect(transport);
  // deno-lint-ignore no-explicit-any
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<any> => {
    const res = await client.callTool({ name, arguments: args });
    const text = (res.content as { type: string; text: string }[])[0].text;
    return { ...JSON.parse(text), isError: res.isError ?? false };
  };
  let runId: string | undefined;
  try {
    const tools = (await client.listTools()).tools as {
      name: string;
      inputSchema: { required?: string[] };
    }[];
    assert.deepEqual(tools.map((t) => t.name), [...TOOL_NAMES]);
    const edit = tools.find((t) => t.name === "rl_edit_config")!;
    assert.deepEqual(edit.inputSchema.required, ["field", "value"]);

    const envs = await call("rl_list_environments");
    assert.equal(envs.count, listEnvs().length);
    assert.ok(
      envs.environments.every((e: { file_path: string }) => e.file_path.startsWith("lib/envs/")),
    );

    const noEnv = await call("rl_start_training");
    assert.equal(noEnv.isError, true);
    assert.match(noEnv.error, /no environment selected/);

    const sel = await call("rl_select_environment", { name: "GuessTheNumber-v0-easy" });
    assert.equal(sel.environment, "game:GuessTheNumber-v0-easy");
    for (
      const [field, value] of Object.entries({ ...TINY_RUN, total_steps: 200, eval_episodes: 0 })
    ) {
      const r = await call("rl_edit_config", { field, value: value as string | number });
      assert.equal(r.isError, false, JSON.stringify(r));
    }
    const locked = await call("rl_edit_config", { field: "use_wandb", value: true });
    assert.deepEqual([locked.isError, locked.locked_value], [true, null]);
    const config = await call("rl_get_current_config");
    assert.equal(
      config.configurable_fields.find((f: { name: string }) => f.name === "total_steps")
        .current_value,
      200,
    );

    const started = await call("rl_start_training", { lora_rank: 4 });
    assert.equal(started.isError, false, JSON.stringify(started));
    runId = started.run_id;
    assert.match(runId!, /^[0-9a-f]{8}$/);
    assert.equal(started.state, "running");
    await waitFor(
      "step 1",
      async () => ((await call("rl_check_status", { run_id: runId })).step >= 1 ? true : undefined),
    );
    assert.equal((await call("rl_list_runs")).count, 1);
    assert.match((await call("rl_stop_training", { run_id: runId })).message, /Stopping run/);
    const stopped = await waitFor("the stop", async () => {
      const s = await call("rl_check_status", { run_id: runId });
      return s.state === "running" ? undefined : s;
    });
    assert.equal(stopped.state, "stopped");
    const results = await call("rl_get_results", { run_id: runId });
    assert.match(results.tinker_path, /^tinker:\/\//);
    const unknown = await call("rl_check_status", { run_id: "nope" });
    assert.deepEqual([unknown.isError, unknown.error], [true, 'run "nope" not found']);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nserver stderr:\n${stderr}`);
  } finally {
    await client.close();
  }
});

Deno.test("mcp --url: the tools drive a running runs server over HTTP", async () => {
  const server = await startRunsServer({
    evaluator: HELD_OUT_EVALUATOR,
    dataDir: await Deno.makeTempDir({ prefix: "tb-mcp-url-" }),
    port: 0,
    apiKey: "k",
  });
  const client = new Client({ name: "tinkerbench-test", version: "1.0.0" });
  try {
    await client.connect(
      new StdioClientTransport({
        command: Deno.execPath(),
        args: ["run", "-A", SCRIPT, "--url", server.url, "--api-key", "k"],
        env: { ...Deno.env.toObject(), NO_COLOR: "1" },
        stderr: "ignore",
      }),
    );
    const res = await client.callTool({
      name: "rl_select_environment",
      arguments: { name: "math:Arithmetic-v0-easy" },
    });
    assert.equal(res.isError ?? false, false);
    assert.equal((await server.service.health()).environment, "math:Arithmetic-v0-easy");
  } finally {
    await client.close();
    await server.close();
  }
});
