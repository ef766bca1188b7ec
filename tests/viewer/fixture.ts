/**
 * A small run directory for the viewer's tests: two steps of metrics and rollout records in
 * the store's format, tokens encoded with local/games2's real tokenizer.
 *
 * @module
 */

import { join } from "node:path";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";
import { ROLLOUT_SCHEMA_VERSION } from "../../lib/rl/records.ts";

/** The action text of every fixture episode. */
export const ACTION = "Above 0, below 11. \\boxed{5}";

/** One rollout record of `step`, group `g`, episode `e` with reward `reward`. */
export function record(step: number, g: number, e: number, reward: number, extra = {}) {
  const ids = getTokenizer("local/games2").encode(ACTION);
  const adv = reward - 0.5;
  return {
    schema_version: ROLLOUT_SCHEMA_VERSION,
    step,
    group_id: `s${String(step).padStart(6, "0")}-g${String(g).padStart(3, "0")}`,
    group_kept: true,
    env_id: "game:GuessTheNumber-v0-easy",
    env_seed: 7,
    tags: [],
    episode: e,
    total_reward: reward,
    success: reward >= 1,
    stop_reason: "completed",
    turns: [{
      observation: [{ role: "user", content: "Guess a number." }],
      action: { role: "assistant", content: ACTION },
      next_state: [{ role: "user", content: "Correct!" }],
      reward,
      ob_tokens: 5,
      ac_tokens: ids.length,
      mean_logprob: -0.1,
      stop_reason: "stop",
      sampler_version: step - 1,
      evidence: { errors: [] },
      tokens: { ids, logprobs: ids.map(() => -0.1), advantages: ids.map(() => adv) },
      score: { rl_reward: reward, rl_advantage: adv, dispatch: "rl", trained: true },
    }],
    ...extra,
  };
}

/** Writes step `step` (a metrics row and two groups of two episodes) into run `dir`. */
export async function writeStep(dir: string, step: number): Promise<void> {
  await Deno.mkdir(join(dir, "rollouts"), { recursive: true });
  const recs = [
    record(step, 0, 0, 1),
    record(step, 0, 1, 0),
    record(step, 1, 0, 1),
    record(step, 1, 1, 1),
  ];
  await Deno.writeTextFile(
    join(dir, "rollouts", `iteration_${String(step).padStart(6, "0")}.jsonl`),
    recs.map((r) => JSON.stringify(r) + "\n").join(""),
  );
  await Deno.writeTextFile(
    join(dir, "metrics.jsonl"),
    JSON.stringify({ step, "env/all/reward/total": 0.75, "env/all/success": 0.75 }) + "\n",
    { append: true },
  );
}

/** A run directory with `steps` steps and a config naming local/games2. */
export async function fixtureRun(steps = 2): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "tb-viewer-" });
  await Deno.writeTextFile(
    join(dir, "config.json"),
    JSON.stringify({ policy: { model: "local/games2" }, scoring: { method: "rl" } }),
  );
  for (let s = 1; s <= steps; s++) await writeStep(dir, s);
  return dir;
}
