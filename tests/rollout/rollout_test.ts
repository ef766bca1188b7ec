import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Renderer } from "../../lib/renderers/types.ts";
import { collectGroups } from "../../lib/rollout/mod.ts";
import { episodeTurnTokens } from "../../lib/datums/mod.ts";
import { make } from "../../lib/envs/mod.ts";
import { trajectoryToDatums } from "../../lib/datums/mod.ts";

const renderer = new ChatMLRenderer();

Deno.test("renderer: a turn's prompt + action + continuation is the next turn's prompt", () => {
  const user1 = { role: "user" as const, content: "Guess a number." };
  const action = renderer.tokenizer.encode("\\boxed{5}<|im_end|>");
  const next = [
    ...renderer.generationPrompt([user1]),
    ...action,
    ...renderer.continuation([{ role: "user", content: "Higher." }]),
  ];
  const direct = renderer.generationPrompt([user1, { role: "assistant", content: "\\boxed{5}" }, {
    role: "user",
    content: "Higher.",
  }]);
  assert.deepEqual(next, direct);
  assert.deepEqual(renderer.parseResponse(action), {
    message: { role: "assistant", content: "\\boxed{5}" },
    ok: true,
  });
  assert.equal(renderer.parseResponse(renderer.tokenizer.encode("\\boxed{5")).ok, false);
});

Deno.test("rollout: a group on the local backend, token-aligned, from one start state", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-rollout-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const sampler = await service.createSamplingClient({ baseModel: "local/tiny" });
    const { groups } = await collectGroups(
      [{ makeEnv: () => make("game:GuessTheNumber-v0-easy"), envSeed: 7 }],
      sampler,
      { groupSize: 4, maxTokensPerTurn: 12, seed: 1 },
    );
    const episodes = groups[0].episodes;
    assert.equal(episodes.length, 4);
    const firstPrompts = new Set(episodes.map((e) => JSON.stringify(e.turns[0].observationTokens)));
    assert.equal(firstPrompts.size, 1, "one start state for the group");
    for (const ep of episodes) {
      assert.ok(ep.turns.length >= 1);
      assert.ok(
        ["completed", "max_turns", "max_tokens", "parse_error"].includes(ep.stopReason),
        ep.stopReason,
      );
      for (const t of ep.turns) {
        assert.equal(t.logprobs.length, t.actionTokens.length, "a logprob per action token");
        assert.equal(
          renderer.parseResponse(t.actionTokens).message.content,
          t.action.content,
          "text given to the env",
        );
      }
      const datums = trajectoryToDatums(episodeTurnTokens(ep, 1));
      assert.equal(
        datums.length,
        1,
        "an episode is one datum (each turn extends the last; see the renderer test)",
      );
    }
    // An untrained model rarely writes \boxed{N}: its episodes end as parse errors with GEM's −0.1.
    const parseErrors = episodes.filter((e) => e.stopReason === "parse_error");
    for (const e of parseErrors) assert.equal(e.totalReward, -0.1);
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("rollout: a renderer without `continuation` re-renders the conversation each turn (Qwen3's path), same tokens as ChatML's on local/games", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-rollout-rerender-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  // The ChatML format without `continuation`, so the rollout rebuilds each prompt from the
  // messages, as it does for Qwen3.
  const chatml = new ChatMLRenderer();
  const rerendering: Renderer = {
    tokenizer: chatml.tokenizer,
    buildGenerationPrompt: (m) => chatml.buildGenerationPrompt(m),
    buildGenerationInput: (m) => chatml.buildGenerationInput(m),
    buildSupervisedExample: (m, o) => chatml.buildSupervisedExample(m, o),
    stopSequences: () => chatml.stopSequences(),
    parseResponse: (t) => chatml.parseResponse(t),
    declareTools: (m, t) => chatml.declareTools(m, t),
  };
  try {
    const sampler = await service.createSamplingClient({ baseModel: "local/games" });
    const play = async (r: Renderer) =>
      (await collectGroups(
        [{ makeEnv: () => make("game:GuessTheNumber-v0-easy"), envSeed: 3 }],
        sampler,
        { groupSize: 6, maxTokensPerTurn: 40, seed: 11, renderer: r },
      )).groups[0].episodes;
    const [extended, rerendered] = [await play(chatml), await play(rerendering)];
    assert.ok(rerendered.some((e) => e.turns.length >= 2), "some episode has a second turn");
    for (const [a, b] of extended.map((e, i) => [e, rerendered[i]])) {
      assert.deepEqual(
        b.turns.map((t) => [t.observationTokens, t.actionTokens]),
        a.turns.map((t) => [t.observationTokens, t.actionTokens]),
      );
      assert.equal(trajectoryToDatums(episodeTurnTokens(b, 1)).length, 1);
    }
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
