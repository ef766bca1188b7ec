import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { collectGroups } from "../../lib/rollout/mod.ts";
import { episodeTurnTokens, trajectoryToDatums } from "../../lib/datums/mod.ts";
import { make, wrapAll } from "../../lib/envs/mod.ts";
import { loadTrainConfig } from "../../lib/config/mod.ts";
import { rendererFor } from "../../lib/trainer/mod.ts";
import {
  GEM_TEMPLATES,
  GemTemplateRenderer,
  getRenderer,
  type Qwen3Renderer,
} from "../../lib/renderers/mod.ts";
import { ByteTokenizer } from "../../lib/tokenizers/byte.ts";

Deno.test("GEM templates: GEM's keys select them (template=qwen3_game env_wrappers=concat)", async () => {
  const cfg = await loadTrainConfig({
    overrides: ["template=qwen3_game", "env_wrappers=concat", "model_name=local/games"],
  });
  assert.equal(cfg.rollout.template, "qwen3_game");
  assert.equal(cfg.rollout.env_wrappers, "concat");
  const r = rendererFor(cfg) as GemTemplateRenderer;
  assert.equal(r.template, "qwen3_game");
  // The proxy serves chat whatever the env template.
  assert.equal(rendererFor(cfg, false).constructor.name, "ChatMLRenderer");
  await assert.rejects(
    () => loadTrainConfig({ overrides: ["template=qwen3_chat"] }),
    /rollout.template/,
  );
  // The GEM seed's own settings reach the Qwen3 Instruct-2507 tokenizer; chat is its renderer.
  const gemSeed = await loadTrainConfig({
    overrides: ["model_name=Qwen/Qwen3-4B-Instruct-2507", "template=qwen3_game"],
  });
  assert.equal(rendererFor(gemSeed).tokenizer.id, "Qwen/Qwen3-4B-Instruct-2507");
  assert.equal((rendererFor(gemSeed, false) as Qwen3Renderer).variant, "instruct");
  const seed = getRenderer("Qwen/Qwen3-4B-Instruct-2507", { template: "qwen3_game" });
  assert.equal(
    seed.tokenizer.decode(seed.buildGenerationPrompt([{ role: "user", content: "Guess." }])),
    "<|im_start|>user\nYou are playing language games. Make valid actions to win.\n" +
      "Observation: Guess.\nPlease reason step by step, and put your final answer within " +
      "\\boxed{}.<|im_end|>\n<|im_start|>assistant\n",
  );
  assert.equal(GEM_TEMPLATES.no("as is"), "as is");
  assert.match(GEM_TEMPLATES.qwen3_general("2+2?"), /^<\|im_start\|>user\nQuestion: 2\+2\?\n/);
});

Deno.test("GEM templates: with concat, each turn is one prompt of the whole history, one datum per turn", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-gem-template-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  const renderer = new GemTemplateRenderer(new ByteTokenizer(), "qwen3_game");
  try {
    const sampler = await service.createSamplingClient({ baseModel: "local/games" });
    const makeEnv = () => wrapAll(make("game:GuessTheNumber-v0-easy"), "concat");
    const { groups } = await collectGroups([{ makeEnv, envSeed: 3 }], sampler, {
      groupSize: 6,
      maxConcurrency: 6,
      maxTokensPerTurn: 40,
      seed: 5,
      renderer,
      failures: { onError: "drop_episode" },
    });
    const episodes = groups[0].episodes;
    const multi = episodes.filter((e) => e.turns.length >= 2);
    assert.ok(multi.length > 0, "some episode has a second turn");
    for (const e of episodes) {
      const prompts = e.turns.map((t) => renderer.tokenizer.decode(t.observationTokens));
      for (const p of prompts) {
        assert.ok(p.startsWith("<|im_start|>user\nYou are playing language games."), p);
        assert.ok(p.endsWith("\\boxed{}.<|im_end|>\n<|im_start|>assistant\n"), p);
      }
      // The observation of turn k holds turn k-1's: the history is in the observation.
      for (let k = 1; k < prompts.length; k++) {
        const prev = prompts[k - 1].split("Observation: ")[1].split("\nPlease reason")[0];
        assert.ok(prompts[k].includes(prev), `turn ${k} carries the history`);
      }
      assert.equal(trajectoryToDatums(episodeTurnTokens(e, 1)).length, e.turns.length);
    }
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
