import { assert } from "../assert.ts";
import {
  appendHintToMessages,
  AtLeastOneRule,
  combinedAdvantages,
  combineDispatch,
  majorityVote,
  opdAdvantages,
  parseHintVote,
  parseVote,
  selectBestHint,
} from "../../lib/scoring/rules.ts";

Deno.test("scoring: the last \\boxed{} wins; anything outside {1,-1,0} is a failed vote", () => {
  assert.equal(parseVote("maybe \\boxed{-1} ... final: \\boxed{1}"), 1);
  assert.equal(parseVote("\\boxed{ -1 }"), -1);
  assert.equal(parseVote("\\boxed{+1}"), 1);
  assert.equal(parseVote("\\boxed{0}"), 0);
  assert.equal(parseVote("\\boxed{2}"), null);
  assert.equal(parseVote("\\boxed{10}"), null, "two digits are not a vote");
  assert.equal(parseVote("no box"), null);
});

Deno.test("scoring: majority drops failed votes; none left or a tie gives 0", () => {
  const r = majorityVote(["a \\boxed{1}", "b \\boxed{-1}", "c \\boxed{1}", "junk"]);
  assert.equal(r.score, 1);
  assert.deepEqual(r.votes, [1, -1, 1, null]);
  assert.equal(r.representative, "a \\boxed{1}");
  assert.equal(majorityVote(["\\boxed{1}", "\\boxed{-1}"]).score, 0);
  assert.equal(majorityVote(["x", "y"]).score, 0);
  assert.equal(majorityVote(["\\boxed{-1}", "\\boxed{0}", "\\boxed{-1}"]).score, -1);
});

Deno.test("scoring: hints come only with decision 1; the longest over 10 characters wins", () => {
  assert.deepEqual(parseHintVote("\\boxed{1} [HINT_START] use the API key [HINT_END]"), {
    decision: 1,
    hint: "use the API key",
  });
  assert.deepEqual(parseHintVote("[HINT_START]ignored hint text[HINT_END] \\boxed{-1}"), {
    decision: -1,
    hint: null,
  });
  const best = selectBestHint([
    "\\boxed{1}[HINT_START]short[HINT_END]",
    "\\boxed{1}[HINT_START]check the unit of the answer[HINT_END]",
    "\\boxed{1}[HINT_START]check the unit[HINT_END]",
    "\\boxed{-1}[HINT_START]a much longer hint that must not count[HINT_END]",
  ]);
  assert.equal(best, "check the unit of the answer");
  assert.equal(selectBestHint(["\\boxed{1}[HINT_START]tiny[HINT_END]", "\\boxed{-1}"]), null);
});

Deno.test("scoring: the hint goes on the last user message (or the last message)", () => {
  const msgs = [
    { role: "system", content: "sys" },
    { role: "user", content: "q1" },
    { role: "assistant", content: "a1" },
    { role: "user", content: "q2" },
    { role: "assistant", content: "a2" },
  ];
  const out = appendHintToMessages(msgs, "be brief");
  assert.equal(out[3].content, "q2\n\n[user's hint / instruction]\nbe brief");
  assert.equal(msgs[3].content, "q2", "the input is not mutated");
  assert.equal(
    appendHintToMessages([{ role: "system", content: "s" }], "h")[0].content,
    "s\n\n[user's hint / instruction]\nh",
  );
});

Deno.test("scoring: at-least-one promotes the first 0-scored turn with a next state, per session", () => {
  const rule = new AtLeastOneRule();
  assert.equal(rule.decide("a", { hasNextState: true, score: 0 }), true, "promoted");
  assert.equal(rule.decide("a", { hasNextState: true, score: 0 }), false, "one kept already");
  assert.equal(rule.decide("a", { hasNextState: true, score: -1 }), true, "−1 always kept");
  assert.equal(
    rule.decide("b", { hasNextState: false, score: 0 }),
    false,
    "no next state: never promoted",
  );
  assert.equal(
    rule.decide("b", { hasNextState: true, score: null }),
    true,
    "unscored counts as 0, promoted",
  );
  rule.endSession("a");
  assert.equal(
    rule.decide("a", { hasNextState: true, score: 0 }),
    true,
    "count cleared at session end",
  );
});

Deno.test("scoring: combine dispatch and OPD advantages", () => {
  assert.equal(combineDispatch(true, 1), "opd+rl");
  assert.equal(combineDispatch(true, -1), "opd+rl");
  assert.equal(combineDispatch(true, 0), "opd");
  assert.equal(combineDispatch(false, -1), "rl");
  assert.equal(combineDispatch(false, 0), null);
  assert.deepEqual(opdAdvantages([-1, -0.5], [-2, -0.25]), [1, -0.25]);
  assert.throws(() => opdAdvantages([-1], [-1, -2]), /1 teacher and 2 student/);
  assert.deepEqual(combinedAdvantages([1, -0.25], -1, { wOpd: 0.5, wRl: 2 }), [-1.5, -2.125]);
});
