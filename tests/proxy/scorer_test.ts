/**
 * A proxy RL run that cannot learn says so: the scorer prints one line once its last turns all
 * trained nothing, naming the reason and what to change.
 */

import { assert } from "../assert.ts";
import { TurnScorer } from "../../lib/proxy/scorer.ts";
import { ProxyRecords } from "../../lib/proxy/records.ts";
import { evidencePlan, type MethodSettings } from "../../lib/scoring/mod.ts";
import type { CompletedTurn } from "../../lib/proxy/session_types.ts";

const method: MethodSettings = {
  method: "rl",
  rewardSource: "env",
  hintSource: "next_state",
  evalMode: false,
  advantages: {
    mode: "discounted",
    gamma: 0,
    constantGroups: "keep",
    nonFinalTurnReward: null,
    downsampleTo: null,
  },
  wOpd: 1,
  wRl: 1,
  klCoef: 0,
};

function turn(i: number, reward: number): CompletedTurn {
  return {
    sessionId: `s${i}`,
    index: 0,
    turn: {
      observation: [{ role: "user", content: "guess" }],
      observationTokens: [1, 2, 3],
      action: { role: "assistant", content: "5" },
      actionTokens: [4, 5],
      logprobs: [-1, -1],
      reward,
      nextState: [{ role: "user", content: "lower" }],
      stopReason: "stop",
      samplerVersion: 0,
    },
    messages: [{ role: "user", content: "guess" }],
    rewarded: true,
    end: "next_state",
    spans: null,
    historyBreak: false,
    truncated: 0,
  };
}

Deno.test("scorer: 0/1 rewards with no baseline: after the quiet turns, one line says why nothing trains and what to change", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-scorer-" });
  try {
    const lines: string[] = [];
    const scorer = new TurnScorer({
      plan: evidencePlan(method),
      sources: { judgeSampling: { samples: 1, temperature: 0, maxTokens: 1 } as never },
      method,
      records: await ProxyRecords.open(dir, "rl"),
      quietAfter: 4,
      warn: (l) => lines.push(l),
    });
    for (let i = 0; i < 6; i++) scorer.add(turn(i, 0));
    await scorer.close("done");
    assert.equal(lines.length, 1, "said once");
    assert.match(
      lines[0],
      /^proxy: the last 4 turns trained nothing \(reward 0: 4\); rl trains each proxy turn on its own reward with no baseline, so a reward of 0 carries no signal: send rewards that are not 0/,
    );
    // A trainable turn ends the streak; the next quiet streak is said again.
    scorer.add(turn(9, 1));
    for (let i = 10; i < 14; i++) scorer.add(turn(i, 0));
    await scorer.close("done");
    assert.equal(lines.length, 2);
    assert.equal(scorer.ready, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("scorer: untrained turns make a step of none only while no trainable turn waits (a waiting turn is not aged stale by idle steps)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-scorer-" });
  try {
    const scorer = new TurnScorer({
      plan: evidencePlan(method),
      sources: { judgeSampling: { samples: 1, temperature: 0, maxTokens: 1 } as never },
      method,
      records: await ProxyRecords.open(dir, "rl"),
      warn: () => {},
    });
    const scored = async () => {
      while (scorer.scoring > 0) await new Promise((r) => setTimeout(r, 1));
    };
    scorer.add(turn(0, 1));
    await scored();
    for (let i = 1; i <= 5; i++) scorer.add(turn(i, 0));
    await scored();
    assert.equal(scorer.ready, 1);
    assert.equal(scorer.idle, 5, "untrained turns since the trainable one");
    assert.equal(scorer.idleStep(4), false, "a trainable turn waits: no step of none");
    await scorer.waitFor(1);
    assert.equal(scorer.take(4).length, 1);
    assert.equal(scorer.idleStep(4), true, "nothing waits: the untrained turns are a step of none");
    assert.equal(scorer.takeIdle(4).length, 4);
    await scorer.close("done");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
