import { assert, assertClose } from "../assert.ts";
import {
  episodesToFrame,
  metricsFrame,
  tokenAdvantagesFrame,
  turnsToFrame,
} from "../../lib/viz/mod.ts";
import { trajectoryToDatums } from "../../lib/datums/mod.ts";
import { episodeTurnTokens } from "../../lib/datums/mod.ts";
import { renderer, scriptedEpisode } from "./episodes.ts";

const tok = renderer.tokenizer;
// Group 0: a miss then a hit (target 5) and a parse error; group 1: one guess.
const groups = [
  [scriptedEpisode(3, ["\\boxed{1}", "\\boxed{5}"]), scriptedEpisode(3, ["no idea"], -1)],
  [scriptedEpisode(4, ["\\boxed{2}"])],
];

Deno.test("episodesToFrame: a row per episode with group, index, reward and token counts", () => {
  const df = episodesToFrame(groups);
  assert.deepEqual(df.columns, [
    "env_id",
    "group",
    "episode",
    "total_reward",
    "shaped_reward",
    "n_turns",
    "stop_reason",
    "action_tokens",
    "observation_tokens",
    "mean_logprob",
    "error",
  ]);
  assert.equal(df.height, 3);
  const rows = df.toRecords();
  assert.deepEqual(rows.map((r) => [r.group, r.episode]), [[0, 0], [0, 1], [1, 0]]);
  const two = groups[0][0];
  assert.equal(rows[0].n_turns, two.turns.length);
  assert.equal(rows[0].total_reward, 1, "a miss (0) then the hidden 5 (1)");
  assert.equal(rows[1].stop_reason, "parse_error");
  assert.equal(rows[1].total_reward, -0.1);
  assert.deepEqual(rows.map((r) => r.shaped_reward), [null, null, null], "no mix, no shaping");
  const mixed = episodesToFrame([{ ...groups[1][0], shapedReward: 0.5 }]).toRecords();
  assert.equal(mixed[0].shaped_reward, 0.5);
  assertClose([rows[1].mean_logprob as number], [-1]);
  // Turn 2's prompt extends turn 1's prompt + action: only its new tokens count.
  const [t1, t2] = two.turns;
  assert.equal(rows[0].action_tokens, t1.actionTokens.length + t2.actionTokens.length);
  assert.equal(rows[0].observation_tokens, t2.observationTokens.length - t1.actionTokens.length);
  assert.equal(rows[0].error, null);
  // A flat list is one group.
  assert.deepEqual(episodesToFrame(groups[0]).getColumn("group").toArray(), [0, 0]);
  assert.equal(episodesToFrame([]).height, 0);
});

Deno.test("turnsToFrame: a row per turn with the action as given to the env and as sampled", () => {
  const df = turnsToFrame(groups, tok);
  assert.equal(df.height, 2 + 1 + 1);
  assert.ok(df.columns.includes("action_decoded"));
  const rows = df.toRecords();
  assert.deepEqual(rows.map((r) => [r.group, r.episode, r.turn]), [
    [0, 0, 0],
    [0, 0, 1],
    [0, 1, 0],
    [1, 0, 0],
  ]);
  assert.equal(rows[1].action_text, "\\boxed{5}");
  assert.equal(rows[1].action_decoded, "\\boxed{5}<|im_end|>");
  assert.equal(rows[1].reward, groups[0][0].turns[1].reward);
  assert.equal(rows[0].observation, groups[0][0].turns[0].observation[0].content);
  assert.ok(!turnsToFrame(groups).columns.includes("action_decoded"), "no tokenizer, no decode");
});

Deno.test("tokenAdvantagesFrame: a row per target token, action tokens flagged, teacher column", () => {
  const ep = groups[0][0];
  const [datum] = trajectoryToDatums(episodeTurnTokens(ep, 0.25));
  const n = datum.loss_fn_inputs.target_tokens.data.length;
  const df = tokenAdvantagesFrame(datum, tok);
  assert.deepEqual(df.columns, [
    "position",
    "token_id",
    "text",
    "advantage",
    "sampler_logprob",
    "is_action",
  ]);
  assert.equal(df.height, n);
  const rows = df.toRecords();
  const actions = rows.filter((r) => r.is_action);
  assert.equal(actions.length, ep.turns.reduce((a, t) => a + t.actionTokens.length, 0));
  assert.ok(actions.every((r) => r.advantage === 0.25 && r.sampler_logprob === -0.5));
  assert.equal(rows.at(-1)!.text, "<|im_end|>", "the last target is the end of the last action");
  assert.equal(rows[0].token_id, datum.loss_fn_inputs.target_tokens.data[0]);

  const teacher = rows.map((r) => (r.is_action ? -0.2 : null));
  const withTeacher = tokenAdvantagesFrame(datum, tok, { teacherLogprobs: teacher });
  assert.equal(withTeacher.columns.at(-1), "teacher_logprob");
  assert.deepEqual(withTeacher.getColumn("teacher_logprob").toArray(), teacher);
  assert.throws(
    () => tokenAdvantagesFrame(datum, tok, { teacherLogprobs: [-1] }),
    /1 teacher logprobs for \d+ target tokens/,
  );
});

Deno.test("metricsFrame: union of keys in first-seen order, gaps are null, step stays integer", () => {
  const df = metricsFrame([
    { step: 1, "train/loss": 2.5, tag: "a" },
    { step: 2, "train/loss": 2.0, "eval/reward": 0.5, tag: "b" },
    { step: 3, "train/loss": null, extra: { nested: 1 } },
  ]);
  assert.deepEqual(df.columns, ["step", "train/loss", "tag", "eval/reward", "extra"]);
  assert.equal(df.height, 3);
  assert.match(String(df.getColumn("step").dtype), /Int32/);
  assert.deepEqual(df.getColumn("eval/reward").toArray(), [null, 0.5, null]);
  assert.deepEqual(df.getColumn("train/loss").toArray(), [2.5, 2.0, null]);
  assert.deepEqual(df.getColumn("tag").toArray(), ["a", "b", null]);
  assert.deepEqual(df.getColumn("extra").toArray(), [null, null, '{"nested":1}']);
});
