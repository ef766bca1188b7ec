import { assert } from "../assert.ts";
import { make } from "../../lib/envs/registry.ts";
import { NO_TOOL_CALL_MESSAGE } from "../../lib/envs/tool_task_env.ts";
import type { MessageEnv } from "../../lib/envs/types.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { collectGroups, runEpisode } from "../../lib/rollout/mod.ts";
import { composeAdvantages } from "../../lib/scoring/compose.ts";
import { scoredGroupsToDatums } from "../../lib/datums/mod.ts";
import { ModelInput } from "../../lib/tinker/types.ts";
import { RL_SETTINGS } from "../rl/fixtures.ts";
import { scriptedPolicy, toolCallText } from "../openreward/fixtures.ts";

const renderer = new ChatMLRenderer();
const EOS = renderer.tokenizer.eosTokenId;

/** Binary search over GuessTheNumber's feedback, written after a tool call's end as well. */
function bisect(prompt: string): string {
  let lo = 1, hi = 10;
  for (const m of prompt.matchAll(/The number is (higher|lower) than (\d+)/g)) {
    if (m[1] === "higher") lo = Math.max(lo, Number(m[2]) + 1);
    else hi = Math.min(hi, Number(m[2]) - 1);
  }
  const guess = Math.floor((lo + hi) / 2);
  return `Let me guess.\n${
    toolCallText("guess", { number: guess })
  }\nand text after the call<|im_end|>`;
}

async function play(
  policy: ReturnType<typeof scriptedPolicy>,
  opts: Parameters<typeof runEpisode>[3] = { maxTokensPerTurn: 200 },
  seed = 5,
) {
  const env = make("tool:GuessTheNumber-v0-easy") as MessageEnv;
  const { messages } = await env.reset(seed);
  return await runEpisode(env, messages, policy, opts);
}

Deno.test("tool rollout: sampling stops at </tool_call>; the message is closed in the next prompt", async () => {
  const policy = scriptedPolicy(bisect);
  const ep = await play(policy);
  // The byte tokenizer has `</tool_call>` as one token: the stops are token ids.
  assert.deepEqual(policy.params[0]!.stop, [EOS, ...renderer.tokenizer.encode("</tool_call>")]);
  assert.equal(renderer.tokenizer.encode("</tool_call>").length, 1);
  assert.equal(ep.stopReason, "completed");
  assert.equal(ep.totalReward, 1);
  assert.deepEqual([ep.toolCalls, ep.failedToolCalls, ep.invalidToolCalls], [
    ep.turns.length,
    0,
    0,
  ]);
  for (const [k, t] of ep.turns.entries()) {
    const text = renderer.tokenizer.decode(t.actionTokens);
    assert.ok(text.endsWith("</tool_call>"), text);
    assert.equal(t.action.toolCalls?.[0].name, "guess");
    assert.equal(t.stopReason, "stop");
    const next = ep.turns[k + 1];
    if (!next) continue;
    // prompt + action + the closing end token (not sampled) + the tool's answer as a tool turn.
    assert.deepEqual(next.observationTokens, [
      ...t.observationTokens,
      ...t.actionTokens,
      EOS,
      ...renderer.continuation(t.nextState),
    ]);
    assert.equal(t.nextState[0].role, "tool");
  }
  // The tools are declared in the system message, in Qwen3's format.
  assert.ok(policy.prompts[0].startsWith("<|im_start|>system\n# Tools\n"));
  assert.ok(policy.prompts[0].includes('"name": "guess"'));
});

Deno.test("tool rollout: datums train the sampled tokens only (tool, user and closing tokens get 0)", async () => {
  // A game that takes the bisecting policy at least three guesses.
  let ep = await play(scriptedPolicy(bisect), undefined, 0);
  for (let seed = 1; ep.turns.length < 3 && seed < 50; seed++) {
    ep = await play(scriptedPolicy(bisect), undefined, seed);
  }
  assert.ok(ep.turns.length >= 3, "a multi-turn episode");
  const group = { id: "g", envId: ep.envId, envSeed: 5, tags: [], episodes: [ep] };
  const { groups } = composeAdvantages([group], new Map(), {
    ...RL_SETTINGS,
    advantages: { mode: "raw" },
  });
  const [datum] = scoredGroupsToDatums(groups);
  const adv = datum.loss_fn_inputs.advantages.data;
  const seq = [
    ...ModelInput.toInts(datum.model_input),
    datum.loss_fn_inputs.target_tokens.data.at(-1)!,
  ];
  // Positions (in the full sequence) of every sampled token.
  const sampled = new Set<number>();
  for (const t of ep.turns) {
    t.actionTokens.forEach((_, i) => sampled.add(t.observationTokens.length + i));
  }
  for (let pos = 1; pos < seq.length; pos++) {
    assert.equal(adv[pos - 1], sampled.has(pos) ? 1 : 0, `position ${pos}`);
  }
  // OpenReward's build_datum marks the last len(response) positions instead: that span holds
  // tool-response tokens (and misses early actions) in a multi-turn rollout.
  const responseLen = ep.turns.reduce((n, t) => n + t.actionTokens.length, 0);
  const cookbook = new Set(Array.from({ length: responseLen }, (_, i) => seq.length - 1 - i));
  assert.ok([...cookbook].some((p) => !sampled.has(p)), "their span covers non-sampled tokens");
});

Deno.test("tool rollout: a call that does not parse gets a corrective message, counted, optional penalty", async () => {
  const policy = scriptedPolicy((prompt, i) =>
    i === 0
      ? `<tool_call>\n{"name": "guess", "arguments": {number: 5}}\n</tool_call><|im_end|>`
      : bisect(prompt)
  );
  const ep = await play(policy, { maxTokensPerTurn: 200, toolUse: { invalidCallReward: -0.1 } });
  const [bad, first] = ep.turns;
  assert.equal(bad.nextState.length, 1);
  assert.equal(bad.nextState[0].role, "user");
  assert.match(
    bad.nextState[0].content,
    /^Tool call parse error: malformed tool call .*valid JSON\.$/,
  );
  assert.deepEqual([bad.reward, bad.rewardParts], [-0.1, [-0.1]]);
  assert.deepEqual([ep.invalidToolCalls, ep.failedToolCalls], [1, 1]);
  assert.equal(ep.toolCalls, ep.turns.length);
  // The environment never saw the bad call: the first real guess is the game's first turn.
  assert.match(first.nextState[0].content, /^The number is (higher|lower) than 5\.|^Correct/);
  assert.ok(policy.prompts[1].includes("<|im_start|>user\nTool call parse error:"));
  assert.equal(ep.stopReason, "completed");
});

Deno.test("tool rollout: with endOnInvalidCall a call that does not parse ends the episode (parse_error), its penalty kept", async () => {
  const policy = scriptedPolicy((prompt, i) =>
    i === 1
      ? `<tool_call>\n{"name": "guess", "arguments": {number: 5}}\n</tool_call><|im_end|>`
      : bisect(prompt)
  );
  const ep = await play(policy, {
    maxTokensPerTurn: 200,
    toolUse: { invalidCallReward: -0.5, endOnInvalidCall: true },
  }, 11);
  assert.equal(ep.turns.length, 2);
  assert.equal(ep.stopReason, "parse_error");
  assert.deepEqual([ep.invalidToolCalls, ep.turns[1].reward], [1, -0.5]);
  assert.match(ep.turns[1].nextState[0].content, /^Tool call parse error/);
  // Without it the same script goes on to the answer.
  const on = await play(
    scriptedPolicy((prompt, i) =>
      i === 1
        ? `<tool_call>\n{"name": "guess", "arguments": {number: 5}}\n</tool_call><|im_end|>`
        : bisect(prompt)
    ),
    { maxTokensPerTurn: 200 },
    11,
  );
  assert.equal(on.stopReason, "completed");
  assert.ok(on.turns.length > 2);
});

Deno.test("tool rollout: no tool call, unknown tools and bad input are answered, not fatal", async () => {
  let i = 0;
  const script = [
    "I think it is five.<|im_end|>",
    toolCallText("shout", {}) + "<|im_end|>",
    toolCallText("guess", { number: "five" }) + "<|im_end|>",
  ];
  const policy = scriptedPolicy(() => script[i++ % script.length]);
  const ep = await play(policy, { maxTokensPerTurn: 200, maxTurns: 3 });
  assert.equal(ep.stopReason, "max_turns");
  assert.deepEqual(ep.turns.map((t) => t.nextState[0].content), [
    NO_TOOL_CALL_MESSAGE,
    "Error: 'shout' is not a valid tool",
    "Error: Tool input validation error: number: Invalid input: expected number, received string",
  ]);
  assert.deepEqual([ep.toolCalls, ep.failedToolCalls, ep.invalidToolCalls], [2, 2, 0]);
});

Deno.test("tool rollout: max_total_tokens bounds the conversation; max_response_tokens each turn", async () => {
  const policy = scriptedPolicy(bisect);
  const env = make("tool:GuessTheNumber-v0-easy") as MessageEnv;
  const { messages } = await env.reset(5);
  const ep = await runEpisode(env, messages, policy, {
    maxTokensPerTurn: 300,
    maxTotalTokens: 1,
  });
  assert.equal(ep.stopReason, "max_tokens");
  assert.equal(ep.turns.length, 0, "the prompt alone is over the limit");
  assert.equal(policy.prompts.length, 0, "nothing was sampled");
  // A budget for one and a half turns: the second turn samples only what is left, then stops.
  const probe = scriptedPolicy(bisect);
  await play(probe, { maxTokensPerTurn: 300, maxTurns: 1 });
  const p0 = renderer.tokenizer.encode(probe.prompts[0]).length;
  const policy2 = scriptedPolicy(bisect);
  const ep2 = await play(policy2, { maxTokensPerTurn: 300, maxTotalTokens: p0 + 200 });
  assert.equal(policy2.params[0]!.maxTokens, 200);
  const p1 = renderer.tokenizer.encode(policy2.prompts[1]).length;
  assert.equal(policy2.params[1]!.maxTokens, Math.min(300, p0 + 200 - p1));
  assert.equal(ep2.stopReason, "max_tokens");
  assert.ok(
    ep2.turns.every((t) => t.observationTokens.length + t.actionTokens.length <= p0 + 200),
  );
});

Deno.test("tool rollout: stopAtToolCall off stops only at the end of the message", async () => {
  const policy = scriptedPolicy(bisect);
  const ep = await play(policy, { maxTokensPerTurn: 200, toolUse: { stopAtToolCall: false } });
  assert.deepEqual(policy.params[0]!.stop, [EOS]);
  assert.ok(renderer.tokenizer.decode(ep.turns[0].actionTokens).endsWith("call<|im_end|>"));
  assert.equal(ep.totalReward, 1);
});

Deno.test("tool rollout: per-group sampling settings (per-environment temperature, top_p, top_k)", async () => {
  const policy = scriptedPolicy(bisect);
  const res = await collectGroups(
    [
      { makeEnv: () => make("tool:GuessTheNumber-v0-easy"), envSeed: 1, sampling: { topP: 0.9 } },
      {
        makeEnv: () => make("tool:Arithmetic-v0-easy"),
        envSeed: 2,
        sampling: { temperature: 0.5, topK: 20 },
      },
    ],
    policy,
    { groupSize: 2, maxTokensPerTurn: 200, temperature: 1, maxConcurrency: 1 },
  );
  assert.equal(res.groups.length, 2);
  const byTool = (name: string) =>
    policy.params.filter((_, i) => policy.prompts[i].includes(`"name": "${name}"`));
  assert.ok(byTool("guess").every((p) => p!.topP === 0.9 && p!.temperature === 1));
  assert.ok(byTool("answer").every((p) => p!.topK === 20 && p!.temperature === 0.5));
});
