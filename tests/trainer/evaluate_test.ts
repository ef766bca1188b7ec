import { assert } from "../assert.ts";
import { type HeldOutEvaluation, heldOutLine } from "../../lib/trainer/evaluate.ts";

const score = (success: number, episodes: number) => ({ success, mean_reward: success, episodes });
const mix = (
  environments: HeldOutEvaluation["environments"],
  played: number,
): HeldOutEvaluation => ({
  env_id: "mix:a+b",
  model: "local/tools",
  episodes: 64,
  env_seeds: [1_000_000, 1_000_063],
  sampler_seed: 5_000_000,
  temperature: 1,
  step: 20,
  base: score(played ? 0.25 : 0, played),
  trained: score(played ? 0.5 : 0, played),
  environments,
  seconds: 1,
});

Deno.test("heldOutLine: a mix names each environment's split other than train, and the skipped ones with why", () => {
  const line = heldOutLine(mix({
    a: { base: score(0.25, 64), trained: score(0.5, 64), split: "test" },
    b: { skipped: "trains on every split it has (test): no held-out tasks" },
  }, 64));
  assert.equal(
    line,
    "held-out success: base 0.25 → trained 0.50 (64 episodes per environment); " +
      "a (test split): base 0.25 → trained 0.50; " +
      "b: skipped (trains on every split it has (test): no held-out tasks)",
  );
});

Deno.test("heldOutLine: with every environment skipped there is no overall number, only the reasons", () => {
  const line = heldOutLine(mix({ b: { skipped: "trains on every split it has (train)" } }, 0));
  assert.equal(line, "held-out success: none; b: skipped (trains on every split it has (train))");
});
