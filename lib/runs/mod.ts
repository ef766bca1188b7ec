/**
 * The run-management API that agents drive (the Hermes RL tools' server, and the same tools over
 * MCP): environments, a config table mapped onto `deno task train`, runs as training processes
 * in a durable queue, results, held-out evaluation and test inference.
 *
 * @example
 * const server = await startRunsServer({
 *   dataDir: ".tinkerbench/home",
 *   port: 8080,
 *   evaluator: { evaluateHeldOut, heldOutEnvironment }, // lib/trainer/evaluate.ts
 * });
 * const runs = new RunsClient({ baseUrl: server.url });
 * await runs.selectEnvironment("game:GuessTheNumber-v0-easy");
 *
 * @module
 */

export * from "./schemas.ts";
export { RunsClient, type RunsClientOptions } from "./client.ts";
export { RunsService, type RunsServiceOptions } from "./service.ts";
export { type RunsServer, type RunsServerOptions, startRunsServer } from "./server.ts";
export { createRunsApp, type RunsAppOptions } from "./app.ts";
export { createMcpServer, TOOL_NAMES } from "./mcp.ts";
export { FIELDS, type FieldSpec, type RunConfig } from "./fields.ts";
export { listEnvironments } from "./environments.ts";
