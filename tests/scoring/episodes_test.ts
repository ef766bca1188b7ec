import { assert, assertClose } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ModelInput, ServiceClient } from "../../lib/tinker/mod.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Episode } from "../../lib/rollout/mod.ts";
import {
  JudgeError,
  messagesBefore,
  scoreEpisodes,
  type ScoringOptions,
} from "../../lib/scoring/episodes.ts";
import { OpenAIChatSampler } from "../../lib/scoring/judges.ts";

const renderer = new ChatMLRenderer();
const enc = (s: string) => renderer.tokenizer.encode(s);

/** A one-turn episode in the renderer's layout, with made-up sampler log-probs. */
function episode(action: string, reward: number, nextObservation: string): Episode {
  const actionTokens = enc(`${action}<|im_end|>`);
  return {
    envId: "test",
    totalReward: reward,
    stopReason: "completed",
    turns: [{
      observationTokens: renderer.generationPrompt([{ role: "user", content: "Guess." }]),
      actionTokens,
      logprobs: actionTokens.map((_, i) => -1 - i / 10),
      actionText: action,
      reward,
      observation: "Guess.",
      nextObservation,
    }],
  };
}

const base: ScoringOptions = {
  method: "rl",
  rewardSource: "env",
  hintSource: "next_observation",
  evalMode: false,
  advantages: {},
  wOpd: 1,
  wRl: 1,
  klCoef: 0,
  judgeSampling: { m: 3, temperature: 0.6, maxTokens: 64, seed: 1 },
};

Deno.test("scoring rl: group-centred advantages; constant groups teach nothing and are skipped", async () => {
  const mixed = [episode("\\boxed{3}", 1, "Correct!"), episode("\\boxed{4}", 0, "Lower.")];
  const constant = [episode("\\boxed{5}", 0, "Lower."), episode("\\boxed{6}", 0, "Lower.")];
  const s = await scoreEpisodes([mixed, constant], base);
  assert.deepEqual(s.origins, [[0, 0], [0, 1]]);
  assert.deepEqual(s.trajectories.map((t) => t[0].advantage[0 as never]), [0.5, -0.5]);
  assert.deepEqual(s.turns.map((t) => t.trained), [true, true, false, false]);
  assert.equal(s.advantageStats?.fracMixed, 0.5);
  assert.equal(s.advantageStats?.fracAllBad, 0.5);
});

Deno.test("scoring opd: per-token teacher − student with the next state as the hint", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-score-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const teacher = await service.createSamplingClient({ baseModel: "local/tiny" });
    const hinted = episode("\\boxed{3}", 0, "The number is higher than 3.");
    const unhinted = episode("\\boxed{4}", 0, "Odd.");
    const opts = {
      ...base,
      method: "opd" as const,
      wOpd: 2,
      teacher: { sampler: teacher, renderer },
    };
    const s = await scoreEpisodes([[hinted, unhinted]], opts);
    assert.equal(s.trajectories.length, 1, "the turn without a hint is not trained");
    assert.equal(s.turns[0].hint, "The number is higher than 3.");
    assert.equal(s.turns[1].hint, null);

    // The teacher's view, built independently: the hint appended to the last user message.
    const t = hinted.turns[0];
    const prompt = renderer.generationPrompt([{
      role: "user",
      content: "Guess.\n\n[user's hint / instruction]\nThe number is higher than 3.",
    }]);
    const lps = await teacher.computeLogprobs(ModelInput.fromInts([...prompt, ...t.actionTokens]));
    const expected = lps.slice(prompt.length).map((lp, i) => 2 * (lp! - t.logprobs[i]));
    assertClose(s.trajectories[0][0].advantage as number[], expected, 1e-5, "OPD advantages");
    assert.equal(s.metrics["score/hint_accepted_frac"], 0.5);
    assert.equal(s.metrics["score/opd_samples"], 1);

    // combine: the unhinted turn trains on its RL term alone; a turn with neither is dropped.
    const c = await scoreEpisodes(
      [[hinted, episode("\\boxed{4}", 1, "Odd.")], [unhinted, episode("\\boxed{5}", 0, "Odd.")]],
      { ...opts, method: "combine", wRl: 0.5 },
    );
    assert.deepEqual(c.turns.map((x) => x.dispatch), ["opd+rl", "rl", null, null]);
    const rlOnly = c.trajectories[1][0].advantage as number[];
    assert.ok(rlOnly.every((a) => a === 0.5 * 0.5), "w_rl × group-centred advantage");
  } finally {
    service.close();
    await server.close();
  }
});

Deno.test("scoring: PRM rewards from an OpenAI-compatible judge, every vote recorded", async () => {
  const seen: unknown[] = [];
  // The judge endpoint: votes 1 twice and −1 once when the next state says "Correct", else 0.
  let calls = 0;
  const server = Deno.serve({ port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    seen.push(body);
    const text = body.messages.at(-1).content.includes("Correct")
      ? (calls++ % 3 === 2 ? "wrong \\boxed{-1}" : "(a) progress. \\boxed{1}")
      : "unclear \\boxed{0}";
    return Response.json({ choices: [{ message: { content: text } }] });
  });
  try {
    const judge = new OpenAIChatSampler({
      baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
      model: "judge",
    });
    const s = await scoreEpisodes(
      [[episode("\\boxed{3}", 1, "Correct!"), episode("\\boxed{4}", 0, "Lower.")]],
      { ...base, rewardSource: "prm", judge },
    );
    assert.equal(seen.length, 6, "M = 3 votes per turn");
    assert.equal((seen[0] as { model: string }).model, "judge");
    assert.deepEqual(s.turns.map((t) => t.prm?.score), [1, 0]);
    assert.equal(s.turns[0].prm?.votes.filter((v) => v === 1).length, 2);
    assert.deepEqual(s.turns.map((t) => t.reward), [1, 0]);
    assert.equal(s.metrics["score/prm_eval_score"], 0.5);
  } finally {
    await server.shutdown();
  }
});

Deno.test("scoring: a judge's malformed response is an error naming the endpoint and field", async () => {
  const server = Deno.serve({ port: 0, onListen: () => {} }, () => Response.json({ choices: [] }));
  try {
    const judge = new OpenAIChatSampler({
      baseUrl: `http://127.0.0.1:${server.addr.port}/v1/`,
      model: "judge",
    });
    await assert.rejects(
      judge.complete([{ role: "user", content: "hi" }], base.judgeSampling),
      /judge http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: bad response at choices/,
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("messagesBefore: earlier turns as chat, ending with this turn's observation", () => {
  const e = episode("a", 0, "next");
  e.turns.push({ ...e.turns[0], observation: "second", actionText: "b" });
  assert.deepEqual(messagesBefore(e, 1), [
    { role: "user", content: "Guess." },
    { role: "assistant", content: "a" },
    { role: "user", content: "second" },
  ]);
});

Deno.test("scoring: a judge that fails on every turn is one error naming it; some failures score 0", async () => {
  let failAll = false;
  // Scores turns whose next state says "Correct"; fails the others (or all, with failAll).
  const server = Deno.serve({ port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    return !failAll && body.messages.at(-1).content.includes("Correct")
      ? Response.json({ choices: [{ message: { content: "\\boxed{1}" } }] })
      : new Response("context too long", { status: 400 });
  });
  try {
    const judge = new OpenAIChatSampler({
      baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
      model: "judge",
    });
    const opts = {
      ...base,
      rewardSource: "prm" as const,
      judge,
      judgeSampling: { ...base.judgeSampling, m: 3 },
    };
    const group = [episode("\\boxed{3}", 1, "Correct!"), episode("\\boxed{4}", 0, "Lower.")];
    const some = await scoreEpisodes([group], opts);
    assert.deepEqual(some.turns.map((t) => t.reward), [1, 0]);
    assert.match(some.turns[1].error ?? "", /HTTP 400: context too long/);
    assert.equal(some.metrics["score/errors"], 1);
    failAll = true;
    await assert.rejects(
      scoreEpisodes([group], opts),
      (e: Error) =>
        e instanceof JudgeError &&
        /^the PRM judge \(judge at http:\/\/127\.0\.0\.1:\d+\/v1\) failed on every turn: .*HTTP 400/
          .test(e.message),
    );
  } finally {
    await server.shutdown();
  }
});
