import { assert, assertClose } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ModelInput, ServiceClient } from "../../lib/tinker/mod.ts";
import type { Episode } from "../../lib/rl/types.ts";
import {
  conversationBefore,
  type EvidencePlan,
  type EvidenceSources,
  gatherEvidence,
  JudgeError,
} from "../../lib/scoring/evidence.ts";
import { composeAdvantages, evidencePlan } from "../../lib/scoring/compose.ts";
import { OpenAIChatSampler } from "../../lib/scoring/judges.ts";
import { episode, group, renderer, RL_SETTINGS } from "../rl/fixtures.ts";

const judgeSampling = { m: 3, temperature: 0.6, maxTokens: 64, seed: 1 };
const sources: EvidenceSources = { judgeSampling };
const prmOnly: EvidencePlan = { prm: true, hint: null, teacher: false, reference: false };
const turnOf = (e: Episode) => e.turns[0];

/** An OpenAI-compatible judge served by a test server. */
const judgeAt = (server: Deno.HttpServer<Deno.NetAddr>) =>
  new OpenAIChatSampler({ baseUrl: `http://127.0.0.1:${server.addr.port}/v1`, model: "judge" });

/** One group: a turn the game confirmed ("Correct!") and one it did not. */
const correctAndLower = () => [
  group("g", [episode("\\boxed{3}", 1, "Correct!"), episode("\\boxed{4}", 0, "Lower.")]),
];

Deno.test("evidence opd: the next state is the hint; the teacher's log-probs see it in the last user message", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-score-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const teacher = await service.createSamplingClient({ baseModel: "local/tiny" });
    const hinted = episode("\\boxed{3}", 0, "The number is higher than 3.");
    const unhinted = episode("\\boxed{4}", 0, "Odd.");
    const plan: EvidencePlan = { prm: false, hint: "next_state", teacher: true, reference: true };
    const ev = await gatherEvidence([group("g", [hinted, unhinted])], plan, {
      ...sources,
      teacher: { sampler: teacher, renderer },
    });
    assert.equal(ev.get(turnOf(hinted))?.hint, "The number is higher than 3.");
    assert.equal(ev.get(turnOf(unhinted))?.hint, null, "10 characters or fewer is no hint");
    assert.equal(ev.get(turnOf(unhinted))?.teacherLogprobs, undefined);

    // The teacher's view, built independently: the hint appended to the last user message.
    const t = turnOf(hinted);
    const prompt = renderer.generationPrompt([{
      role: "user",
      content: "Guess.\n\n[user's hint / instruction]\nThe number is higher than 3.",
    }]);
    const lps = await teacher.computeLogprobs(ModelInput.fromInts([...prompt, ...t.actionTokens]));
    assertClose(ev.get(t)!.teacherLogprobs!, lps.slice(prompt.length) as number[], 1e-5, "teacher");
    // The reference (KL) sees the turn's own prompt.
    const own = await teacher.computeLogprobs(
      ModelInput.fromInts([...t.observationTokens, ...t.actionTokens]),
    );
    assertClose(
      ev.get(t)!.referenceLogprobs!,
      own.slice(t.observationTokens.length) as number[],
      1e-5,
      "reference",
    );
  } finally {
    service.close();
    await server.close();
  }
});
Deno.test("evidence: PRM votes from an OpenAI-compatible judge, every vote recorded", async () => {
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
    const judge = judgeAt(server);
    const groups = correctAndLower();
    const ev = await gatherEvidence(groups, prmOnly, { ...sources, judge });
    assert.equal(seen.length, 6, "M = 3 votes per turn");
    assert.equal((seen[0] as { model: string }).model, "judge");
    const turns = groups[0].episodes.map(turnOf);
    assert.deepEqual(turns.map((t) => ev.get(t)?.prm?.score), [1, 0]);
    assert.equal(ev.get(turns[0])?.prm?.votes.filter((v) => v === 1).length, 2);
    const settings = { ...RL_SETTINGS, rewardSource: "prm" as const };
    assert.deepEqual(evidencePlan(settings), prmOnly);
    const out = composeAdvantages(groups, ev, settings);
    assert.deepEqual(out.groups[0].episodes.map((e) => e.turns[0].score.rlReward), [1, 0]);
    assert.equal(out.metrics["score/prm_eval_score"], 0.5);
  } finally {
    await server.shutdown();
  }
});

Deno.test("judges: a judge's malformed response is an error naming the endpoint and field", async () => {
  const server = Deno.serve({ port: 0, onListen: () => {} }, () => Response.json({ choices: [] }));
  try {
    const judge = new OpenAIChatSampler({
      baseUrl: `http://127.0.0.1:${server.addr.port}/v1/`,
      model: "judge",
    });
    await assert.rejects(
      judge.complete([{ role: "user", content: "hi" }], judgeSampling),
      /judge http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: bad response: choices/,
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("conversationBefore: earlier turns as chat, ending with this turn's observation", () => {
  const e = episode("a", 0, "next");
  e.turns.push({
    ...e.turns[0],
    observation: [{ role: "user", content: "second" }],
    action: { role: "assistant", content: "b" },
  });
  assert.deepEqual(conversationBefore(e, 1), [
    { role: "user", content: "Guess." },
    { role: "assistant", content: "a" },
    { role: "user", content: "second" },
  ]);
});

Deno.test("evidence: a judge that fails on every turn is one error naming it; some failures stay on their turns", async () => {
  let failAll = false;
  // Scores turns whose next state says "Correct"; fails the others (or all, with failAll).
  const server = Deno.serve({ port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    return !failAll && body.messages.at(-1).content.includes("Correct")
      ? Response.json({ choices: [{ message: { content: "\\boxed{1}" } }] })
      : new Response("context too long", { status: 400 });
  });
  try {
    const judge = judgeAt(server);
    const groups = correctAndLower();
    const some = await gatherEvidence(groups, prmOnly, { ...sources, judge });
    const [ok, bad] = groups[0].episodes.map(turnOf);
    assert.equal(some.get(ok)?.prm?.score, 1);
    assert.equal(some.get(bad)?.prm, undefined);
    assert.match(some.get(bad)?.errors[0] ?? "", /HTTP 400: context too long/);
    failAll = true;
    await assert.rejects(
      gatherEvidence(groups, prmOnly, { ...sources, judge }),
      (e: Error) =>
        e instanceof JudgeError &&
        /^the PRM judge \(judge at http:\/\/127\.0\.0\.1:\d+\/v1\) failed on every turn: .*HTTP 400/
          .test(e.message),
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("evidence: the teacher's conversation can be given (the proxy's own request messages)", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-score-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const teacher = await service.createSamplingClient({ baseModel: "local/tiny" });
    const e = episode("\\boxed{3}", 0, "The number is higher than 3.");
    const request = [
      { role: "system" as const, content: "Play." },
      { role: "user" as const, content: "Guess." },
      { role: "user" as const, content: "(context)" },
    ];
    const plan: EvidencePlan = { prm: false, hint: "next_state", teacher: true, reference: false };
    const ev = await gatherEvidence([group("g", [e])], plan, {
      ...sources,
      teacher: { sampler: teacher, renderer },
    }, { conversation: () => request });
    // The hint goes to the last user message of the given conversation.
    const prompt = renderer.generationPrompt([
      request[0],
      request[1],
      {
        role: "user",
        content: "(context)\n\n[user's hint / instruction]\nThe number is higher than 3.",
      },
    ]);
    const t = turnOf(e);
    const lps = await teacher.computeLogprobs(ModelInput.fromInts([...prompt, ...t.actionTokens]));
    assertClose(ev.get(t)!.teacherLogprobs!, lps.slice(prompt.length) as number[], 1e-5, "teacher");
  } finally {
    service.close();
    await server.close();
  }
});
