/**
 * The runs API as MCP tools, with the Hermes RL toolset's names and arguments, so any MCP agent
 * can run RL experiments: pick an environment, edit its config, start, watch, stop and resume
 * runs, read results and test the policy. Each tool calls a {@link RunsApi}: the service itself
 * (`deno task mcp`) or a running server through {@link RunsClient} (`deno task mcp --url`).
 *
 * @module
 */

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { type RunsApi, RunsError } from "./schemas.ts";

/** The tools' names, in the order they are listed. */
export const TOOL_NAMES = [
  "rl_list_environments",
  "rl_select_environment",
  "rl_get_current_config",
  "rl_edit_config",
  "rl_start_training",
  "rl_check_status",
  "rl_stop_training",
  "rl_get_results",
  "rl_test_inference",
  "rl_list_runs",
  "rl_resume_training",
] as const;

const runId = { run_id: z.string().min(1).describe("The run's id (from rl_start_training).") };

/** Builds an MCP server whose tools call `api`. */
export function createMcpServer(api: RunsApi, version = "1.0.0"): McpServer {
  const server = new McpServer({ name: "tinkerbench-runs", version });
  const tool = <A>(
    name: (typeof TOOL_NAMES)[number],
    description: string,
    inputSchema: z.ZodRawShape | undefined,
    call: (args: A) => Promise<unknown>,
  ) => {
    // The SDK has validated `args` against `inputSchema` before the callback runs.
    const callback = (args: unknown) => answer(() => call(args as A));
    server.registerTool(name, { description, inputSchema }, callback as never);
  };

  tool(
    "rl_list_environments",
    "List the RL environments available for training: name, class, the module that defines " +
      "it and a description. Pick one with rl_select_environment.",
    undefined,
    async () => {
      const environments = await api.listEnvironments();
      return {
        environments,
        count: environments.length,
        tips: [
          "rl_select_environment(name) loads an environment's default config",
          "names may be given without their family prefix, e.g. GuessTheNumber-v0-easy",
        ],
      };
    },
  );
  tool(
    "rl_select_environment",
    "Select the environment to train on; loads its default config (and a fresh run name).",
    { name: z.string().min(1).describe("An environment name from rl_list_environments.") },
    ({ name }: { name: string }) => api.selectEnvironment(name),
  );
  tool(
    "rl_get_current_config",
    "Show the selected environment's config: configurable fields (type, default, allowed " +
      "values, current value) and locked fields.",
    undefined,
    () => api.getConfig(),
  );
  tool(
    "rl_edit_config",
    "Change one configurable field, e.g. total_steps, group_size, batch_size, learning_rate, " +
      "lora_rank, model_name, method. Unknown, locked or out-of-range values are refused with " +
      "what is allowed.",
    {
      field: z.string().min(1).describe("The field's name, as rl_get_current_config lists it."),
      value: z.union([z.string(), z.number(), z.boolean(), z.null()]).describe("Its new value."),
    },
    ({ field, value }: { field: string; value: unknown }) => api.editConfig(field, value),
  );
  tool(
    "rl_start_training",
    "Start a training run with the current config (queued when another run is training). " +
      "Returns the run_id, its state, config and log paths.",
    {
      wandb_project: z.string().optional().describe(
        "The run's W&B project (when the server has WANDB_API_KEY); also kept with the run.",
      ),
      lora_rank: z.number().int().optional().describe("Overrides lora_rank for this run."),
      learning_rate: z.number().optional().describe("Overrides learning_rate for this run."),
    },
    (args: Record<string, unknown>) =>
      api.startRun(Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined))),
  );
  tool(
    "rl_check_status",
    "A run's state (queued, running, finished, stopped, crashed, failed), step of total_steps, " +
      "reward_mean, loss, percent_correct, eval_percent_correct, elapsed and estimated time left.",
    runId,
    ({ run_id }: { run_id: string }) => api.getRun(run_id),
  );
  tool(
    "rl_stop_training",
    "Stop a run: it finishes its current step, saves a checkpoint and exits (resumable).",
    runId,
    ({ run_id }: { run_id: string }) => api.stopRun(run_id),
  );
  tool(
    "rl_get_results",
    "A run's final metrics, a short history, held-out evaluations, the trained weights' " +
      "tinker:// path and the report's path.",
    runId,
    ({ run_id }: { run_id: string }) => api.getResults(run_id),
  );
  tool(
    "rl_test_inference",
    "Sample the policy's answers and score them with the selected environment's verifier. " +
      "Without prompts, the environment's own tasks are the prompts; with run_id, the run's " +
      "trained weights answer instead of the base model.",
    {
      prompts: z.array(z.string()).optional().describe("User messages (default: env tasks)."),
      max_tokens: z.number().int().optional().describe("Tokens per answer (default 256)."),
      temperature: z.number().optional().describe("Sampling temperature (default 1.0)."),
      run_id: z.string().optional().describe("Sample from this run's newest checkpoint."),
    },
    (args: Record<string, unknown>) =>
      api.testInference(
        Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
      ),
  );
  tool(
    "rl_list_runs",
    "List every run (including those from before a server restart) with state and progress.",
    undefined,
    () => api.listRuns(),
  );
  tool(
    "rl_resume_training",
    "Resume a stopped or crashed run from its last checkpoint.",
    runId,
    ({ run_id }: { run_id: string }) => api.resumeRun(run_id),
  );
  return server;
}

/** A tool's answer: the result as JSON text, or the error body with `isError`. */
async function answer(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return { content: [{ type: "text", text: JSON.stringify(await fn(), null, 2) }] };
  } catch (e) {
    const body = e instanceof RunsError ? e.body : { error: (e as Error).message };
    return { content: [{ type: "text", text: JSON.stringify(body, null, 2) }], isError: true };
  }
}
