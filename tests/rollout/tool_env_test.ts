import { assert } from "../assert.ts";
import { collectGroups, type Sampler } from "../../lib/rollout/mod.ts";
import type { MessageEnv, MessageStepResult } from "../../lib/envs/types.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Message, ToolSpec } from "../../lib/renderers/types.ts";
import { scoredGroupsToDatums } from "../../lib/datums/mod.ts";
import { composeAdvantages } from "../../lib/scoring/compose.ts";
import type { SampleResponse } from "../../lib/protocol/mod.ts";
import { ModelInput } from "../../lib/tinker/types.ts";
import { RL_SETTINGS } from "../rl/fixtures.ts";

const renderer = new ChatMLRenderer();

const LOOKUP: ToolSpec = {
  name: "lookup",
  description: "Look up a key in the store.",
  parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
};
const ANSWER: ToolSpec = {
  name: "answer",
  description: "Give the final answer.",
  parameters: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
};

/**
 * A tool-using environment whose every reset and step is asynchronous (as a network call is):
 * find the value stored under a key with `lookup`, then `answer` it.
 */
class KeyStore implements MessageEnv {
  readonly kind = "message";
  readonly id = "test:KeyStore-v0";
  readonly maxTurns = 3;
  readonly tools = [LOOKUP, ANSWER];
  readonly calls: string[] = [];
  #value = "";

  async reset(seed = 0) {
    await new Promise((r) => setTimeout(r, 5));
    this.#value = `v${seed}`;
    return {
      messages: [{ role: "user" as const, content: "What is stored under 'k'?" }],
      info: {},
    };
  }

  async step(action: Message): Promise<MessageStepResult> {
    await new Promise((r) => setTimeout(r, 5));
    const call = action.toolCalls?.[0];
    this.calls.push(call ? `${call.name}(${JSON.stringify(call.arguments)})` : "none");
    const end = (reward: number, content: string): MessageStepResult => ({
      messages: [{ role: "user", content }],
      reward,
      terminated: true,
      truncated: false,
      info: {},
    });
    if (!call) return end(-0.1, "No tool call.");
    if (call.name === "lookup") {
      return {
        messages: [{ role: "tool", content: this.#value }],
        reward: 0,
        terminated: false,
        truncated: false,
        info: {},
      };
    }
    const value = (call.arguments as { value?: string }).value;
    return end(value === this.#value ? 1 : 0, value === this.#value ? "Correct." : "Wrong.");
  }

  spawn(sameState = false): KeyStore {
    const env = new KeyStore();
    if (sameState) env.#value = this.#value;
    return env;
  }
}

/**
 * A sampler that plays a fixed script of replies (as a policy would sample them), with
 * log-probs, and records every prompt it was given.
 */
function scripted(replies: (prompt: string, i: number) => string): Sampler & { prompts: string[] } {
  const prompts: string[] = [];
  return {
    prompts,
    sample(args) {
      const prompt = ModelInput.toInts(args.prompt as never);
      const text = renderer.tokenizer.decode(prompt);
      prompts.push(text);
      // A group's first turn asks for one sample per episode.
      const sequences = Array.from({ length: args.numSamples ?? 1 }, () => {
        const tokens = renderer.tokenizer.encode(replies(text, prompts.length) + "<|im_end|>");
        return { tokens, logprobs: tokens.map(() => -0.5), stop_reason: "stop" };
      });
      return Promise.resolve({ sequences } as unknown as SampleResponse);
    },
  };
}

const call = (name: string, args: unknown) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

Deno.test("tool env: an async, tool-using environment through collectGroups, tools in the prompt, tool results as turns", async () => {
  const envs: KeyStore[] = [];
  // Looks up first; then answers right in even-numbered episodes, wrong otherwise.
  let answered = 0;
  const sampler = scripted((prompt) => {
    if (!prompt.includes("<tool_response>")) return call("lookup", { key: "k" });
    return call("answer", { value: answered++ % 2 === 0 ? "v7" : "nope" });
  });
  const res = await collectGroups(
    [{
      makeEnv: () => {
        const e = new KeyStore();
        envs.push(e);
        return e;
      },
      envSeed: 7,
      id: "keys-7",
      tags: ["keys"],
    }],
    sampler,
    { groupSize: 2, maxTokensPerTurn: 64, maxConcurrency: 1, samplerVersion: 3 },
  );
  assert.equal(res.groups.length, 1);
  const [g] = res.groups;
  assert.deepEqual([g.id, g.envId, g.envSeed, g.tags], ["keys-7", "test:KeyStore-v0", 7, ["keys"]]);
  // Every prompt declares both tools in the system message, as Qwen3's template does.
  for (const p of sampler.prompts) {
    assert.ok(p.startsWith("<|im_start|>system\n# Tools\n"), p.slice(0, 40));
    assert.ok(p.includes('"name": "lookup"') && p.includes('"name": "answer"'));
  }
  for (const ep of g.episodes) {
    assert.equal(ep.turns.length, 2);
    const [lookup, answer] = ep.turns;
    assert.deepEqual(lookup.action.toolCalls, [{ name: "lookup", arguments: { key: "k" } }]);
    assert.deepEqual(lookup.nextState, [{ role: "tool", content: "v7" }]);
    assert.deepEqual(answer.observation, [{ role: "tool", content: "v7" }]);
    assert.equal(answer.samplerVersion, 3);
    // The tool result's tokens come between the two actions, in the second turn's prompt.
    assert.deepEqual(
      answer.observationTokens.slice(
        0,
        lookup.observationTokens.length + lookup.actionTokens.length,
      ),
      [...lookup.observationTokens, ...lookup.actionTokens],
    );
  }
  assert.deepEqual(g.episodes.map((e) => e.totalReward).sort(), [0, 1]);

  // Scored and turned into datums: one datum per episode; tool tokens get advantage 0.
  const { groups } = composeAdvantages(res.groups, new Map(), RL_SETTINGS);
  const datums = scoredGroupsToDatums(groups);
  assert.equal(datums.length, 2);
  for (const [i, d] of datums.entries()) {
    const ep = g.episodes[i];
    const adv = d.loss_fn_inputs.advantages.data;
    const [lookup, answer] = ep.turns;
    const toolStart = lookup.observationTokens.length + lookup.actionTokens.length;
    const toolTokens = adv.slice(toolStart - 1, answer.observationTokens.length - 1);
    assert.ok(toolTokens.length > 0 && toolTokens.every((a) => a === 0), "tool tokens not trained");
    const expected = ep.totalReward === 1 ? 0.5 : -0.5;
    assert.ok(adv.slice(answer.observationTokens.length - 1).every((a) => a === expected));
  }
});
