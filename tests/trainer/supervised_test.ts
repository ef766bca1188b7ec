import { assert } from "../assert.ts";
import { alphabetExamples } from "../../lib/datasets/alphabet.ts";
import { pretrain } from "../../lib/pretrain/train.ts";
import { ByteTokenizer } from "../../lib/tokenizers/byte.ts";
import {
  supervisedDatum,
  type SupervisedStepMetrics,
  trainSupervised,
} from "../../lib/trainer/supervised.ts";
import { Rng } from "../../lib/util/random.ts";
import { withService } from "./fixtures.ts";

const KEYS = [
  "step",
  "train/loss_per_token",
  "train/trained_tokens",
  "train/tokens",
  "optim/lr",
  "time/step",
];

Deno.test("supervised: sft and pretraining run the one loop, with the same metric keys", async () => {
  await withService(async (service) => {
    const tok = new ByteTokenizer();
    const rng = new Rng(0);
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const seen: SupervisedStepMetrics[] = [];
    const sft = await trainSupervised({
      training,
      steps: 5,
      // Two forward_backward calls a step; a null batch ends the run after step 3.
      batch: (step) => {
        if (step > 3) return null;
        const data = alphabetExamples(rng, 4).map((ex) => supervisedDatum(tok, ex));
        return { calls: [data.slice(0, 2), data.slice(2)], adam: { learning_rate: 1e-3 * step } };
      },
      onStep: (m) => void seen.push(m),
    });
    assert.deepEqual(sft.map((m) => m.step), [1, 2, 3]);
    assert.deepEqual(seen, sft);
    assert.deepEqual(sft.map((m) => m["optim/lr"]), [1e-3, 2e-3, 3e-3]);
    for (const m of sft) {
      assert.deepEqual(Object.keys(m).sort(), [...KEYS].sort());
      assert.ok(m["train/trained_tokens"] > 0 && m["train/trained_tokens"] < m["train/tokens"]);
      assert.ok(Number.isFinite(m["train/loss_per_token"]) && m["train/loss_per_token"] > 0);
    }

    // local/games: transcripts over bytes fit its 1024-token context.
    const games = await service.createLoraTrainingClient({ baseModel: "local/games", rank: 4 });
    const pre = await pretrain(games, {
      steps: 2,
      batchSize: 2,
      learningRate: 1e-3,
      warmupSteps: 1,
      minLearningRateRatio: 0.1,
      seed: 0,
      datumsPerCall: 1,
      mix: [{ envId: "game:GuessTheNumber-v0-easy", weight: 1 }],
    });
    assert.deepEqual(pre.map((m) => m.step), [1, 2]);
    for (const m of pre) assert.deepEqual(Object.keys(m).sort(), [...KEYS].sort());
    assert.equal(pre[0]["optim/lr"], 1e-3, "warmup's end");
  });
});
