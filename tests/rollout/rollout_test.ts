import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { episodeTurnTokens, runGroup } from "../../lib/rollout/mod.ts";
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
    const episodes = await runGroup(() => make("game:GuessTheNumber-v0-easy"), 7, 4, sampler, {
      maxTokensPerTurn: 12,
      seed: 1,
    });
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
          t.actionText,
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
