import { assert } from "../assert.ts";
import { rolloutMetrics } from "../../lib/trainer/metrics.ts";
import { episode, group } from "../rl/fixtures.ts";

Deno.test("rollout metrics: tool calls per episode where the environment declares tools, absent otherwise", () => {
  const calls = (toolCalls: number, invalid: number, failed: number) => ({
    ...episode("<tool_call>", 0, ""),
    toolCalls,
    invalidToolCalls: invalid,
    failedToolCalls: failed,
  });
  const m = rolloutMetrics([group("g0", [calls(3, 1, 2), calls(1, 0, 0)])]);
  assert.equal(m["env/all/tool_calls_per_episode"], 2);
  assert.equal(m["env/all/invalid_tool_calls_per_episode"], 0.5);
  assert.equal(m["env/all/failed_tool_calls_per_episode"], 1);
  const text = rolloutMetrics([group("g0", [episode("7", 1, ""), episode("3", 0, "")])]);
  assert.equal(text["env/all/tool_calls_per_episode"], undefined);
  assert.equal(text["env/all/success"], 0.5);
});
