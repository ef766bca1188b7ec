import { join } from "node:path";
import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { RolloutRecord } from "../../lib/rl/records.ts";
import { stepSeeds } from "../../lib/rollout/mod.ts";
import { playGroups } from "../../notebooks/setup.ts";
import { train } from "../../lib/train/mod.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { isHeldOutEnvSeed } from "../../lib/util/random.ts";
import { tinyConfig, withService } from "../trainer/fixtures.ts";

type Played = { env_seed: number | null; episode: number; actions: string[] };
const order = (a: Played, b: Played) => (a.env_seed! - b.env_seed!) || (a.episode - b.episode);

Deno.test("stepSeeds: the notebooks' runner plays the trainer's episodes for one seed", async () => {
  await withService(async (service) => {
    const cfg = await tinyConfig({ max_steps: 1, "eval.episodes": 0 });
    const dir = await Deno.makeTempDir({ prefix: "tb-seeds-" });
    await train(cfg, { service, logDir: dir });
    const records =
      (await readJsonl(join(dir, "rollouts", "iteration_000001.jsonl"))) as RolloutRecord[];
    const trainer: Played[] = records.map((r) => ({
      env_seed: r.env_seed,
      episode: r.episode,
      actions: r.turns.map((t) => t.action.content),
    })).sort(order);

    // The notebooks' call (notebooks/setup.ts): a fresh LoRA client's sampler, the groups of step
    // 1 of seed `cfg.seed`.
    const training = await service.createLoraTrainingClient({
      baseModel: cfg.policy.model,
      rank: cfg.policy.lora_rank,
      seed: cfg.seed,
    });
    const sampler = await training.saveWeightsAndGetSamplingClient();
    const groups = await playGroups(
      sampler,
      Array.from({ length: cfg.rollout.groups_per_batch }, (_, g) => g),
      {
        groupSize: cfg.rollout.group_size,
        seed: cfg.seed,
        envId: cfg.rollout.env_id,
        renderer: getRenderer(cfg.policy.model),
        maxTokensPerTurn: cfg.rollout.max_tokens_per_turn,
        temperature: cfg.rollout.temperature,
      },
    );
    const envSeeds = stepSeeds(cfg.seed, 1);
    const notebook: Played[] = groups.flatMap((episodes, g) =>
      episodes.map((e, i) => ({
        env_seed: envSeeds.envSeed(g),
        episode: i,
        actions: e.turns.map((t) => t.action.content),
      }))
    ).sort(order);

    assert.equal(notebook.length, cfg.rollout.groups_per_batch * cfg.rollout.group_size);
    assert.deepEqual(notebook, trainer);
    // Sampled at temperature 1 from an untrained model: the episodes differ from each other, so
    // equal lists say the seeds matched, not that every episode is the same.
    assert.ok(new Set(notebook.map((p) => JSON.stringify(p.actions))).size > 4);
    assert.ok(notebook.every((p) => !isHeldOutEnvSeed(p.env_seed!)));
  });
});
