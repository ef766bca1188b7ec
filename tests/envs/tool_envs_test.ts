import { assert } from "../assert.ts";
import {
  generateCase,
  generateWordProblem,
  listToolEnvironments,
  localTasks,
  make,
  makeBuiltin,
  type MessageEnv,
  normaliseAnswer,
  scoreAnswer,
  ToolTaskEnv,
  verifyNumericAnswer,
  WORD_PROBLEM_KINDS,
  wordProblems,
} from "../../lib/envs/mod.ts";
import { runEpisode } from "../../lib/rollout/mod.ts";
import { scriptedPolicy } from "../openreward/fixtures.ts";
import { detective } from "../../lib/envs/whodunit_detective.ts";

Deno.test("tool envs: every registered one opens, declares schemas, validates input", async () => {
  const all = listToolEnvironments();
  assert.ok(Object.keys(all).length >= 22, Object.keys(all).join(", "));
  const names = new Set<string>();
  for (const [id, def] of Object.entries(all)) {
    assert.match(def.name, /^[a-z0-9-]+$/, `${id}: URL-safe ORS name`);
    assert.ok(!names.has(def.name), `${def.name} twice`);
    names.add(def.name);
    assert.deepEqual(def.splits.map((s) => s.name), ["train", "test"]);
    assert.throws(() => def.getTask("train", -1), RangeError);
    for (const t of def.tools) assert.equal((t.parameters as { type: string }).type, "object");
    const env = make(id) as MessageEnv;
    const { messages } = await env.reset(3);
    assert.ok(messages[0].content.length > 20, id);
    assert.deepEqual(env.tools?.map((t) => t.name), def.tools.map((t) => t.name));
    // Input that does not match the schema is a tool-level error, not a move.
    const name = def.tools[0].name;
    const bad = await env.step({
      role: "assistant",
      content: "",
      toolCalls: [{ name, arguments: { nonsense: [1] } }],
    });
    assert.equal(bad.failedToolCalls, 1, id);
    assert.match(bad.messages[0].content, /^Error: Tool input validation error/, id);
    assert.equal(bad.terminated, false);
    await env.close?.();
  }
});

Deno.test("tool envs: a game through its tool plays exactly as the text game", async () => {
  const text = makeBuiltin("game:GuessTheNumber-v0-easy");
  const tool = make("tool:GuessTheNumber-v0-easy") as MessageEnv;
  const t0 = text.reset(11);
  const m0 = await tool.reset(11);
  assert.ok(m0.messages[0].content.startsWith(t0.observation));
  for (const n of [5, 8, 9, 10]) {
    const a = text.step(`\\boxed{${n}}`);
    const b = await tool.step({
      role: "assistant",
      content: "",
      toolCalls: [{ name: "guess", arguments: { number: n } }],
    });
    assert.equal(b.messages[0].content, a.observation);
    assert.equal(b.reward, a.reward);
    assert.equal(b.terminated, a.terminated || a.truncated);
    if (a.terminated || a.truncated) break;
  }
});

Deno.test("whodunit: cases are seeded, and exactly one answer survives the evidence", () => {
  assert.deepEqual(generateCase(42, "hard"), generateCase(42, "hard"));
  assert.notDeepEqual(generateCase(42, "easy"), generateCase(43, "easy"));
  for (const level of ["easy", "hard"] as const) {
    for (let seed = 0; seed < 200; seed++) {
      const c = generateCase(seed, level);
      const facts = [...c.clues, ...c.statements, ...c.exhibits.map((e) => e.text)].join("\n");
      const survivors = (xs: string[]) => xs.filter((x) => !facts.includes(x));
      assert.deepEqual(survivors(c.suspects.map((s) => s.name)), [c.solution.suspect]);
      assert.deepEqual(survivors(c.weapons), [c.solution.weapon]);
      assert.deepEqual(survivors(c.locations), [c.solution.location]);
      if (level === "hard") assert.deepEqual(survivors(c.motives), [c.solution.motive]);
      assert.ok(c.clues.length && c.statements.length && c.exhibits.length, "every source used");
    }
  }
});

Deno.test("whodunit: partial credit by case-insensitive exact match; one submission", async () => {
  const c = generateCase(5, "easy");
  const s = c.solution;
  assert.equal(scoreAnswer(c, { ...s, suspect: s.suspect.toUpperCase() }).reward, 1);
  assert.equal(normaliseAnswer("  The  Library "), "library");
  const two = scoreAnswer(c, { ...s, weapon: "banana" });
  assert.deepEqual([two.reward, two.wrong], [2 / 3, ["weapon"]]);
  const env = make("tool:WhoDunIt-v0-hard") as MessageEnv;
  await env.reset(5);
  const hard = generateCase(5, "hard").solution;
  const submit = (args: unknown) =>
    env.step({
      role: "assistant",
      content: "",
      toolCalls: [{ name: "submit_answer", arguments: args }],
    });
  const r = await submit({ ...hard, motive: "boredom" });
  assert.deepEqual([r.reward, r.terminated], [0.75, true]);
  assert.match(r.messages[0].content, /3 of 4 parts right \(wrong: motive\)/);
});

Deno.test("whodunit: a scripted detective solves cases by reading every source", async () => {
  for (const level of ["easy", "hard"] as const) {
    for (const seed of [0, 1, 2, 3]) {
      const env = make(`tool:WhoDunIt-v0-${level}`) as MessageEnv;
      const { messages } = await env.reset(seed);
      const ep = await runEpisode(env, messages, scriptedPolicy(detective), {
        maxTokensPerTurn: 400,
      });
      assert.equal(ep.stopReason, "completed", `${level} ${seed}: ${ep.error ?? ""}`);
      assert.equal(ep.totalReward, 1, `${level} ${seed}`);
      assert.ok(ep.turns.length >= 8 && ep.turns.length <= env.maxTurns);
    }
  }
});

Deno.test("word problems: seeded, exact answers, every template, a verifier that reads numbers", () => {
  const kinds = new Set<string>();
  for (let seed = 0; seed < 1000; seed++) {
    const p = generateWordProblem(seed);
    kinds.add(p.kind);
    assert.ok(Number.isInteger(p.answer) && p.answer > 0, `${p.kind}: ${p.question} = ${p.answer}`);
    assert.ok(verifyNumericAnswer(String(p.answer), p.answer));
  }
  assert.deepEqual([...kinds].sort(), [...WORD_PROBLEM_KINDS].sort());
  assert.deepEqual(generateWordProblem(9), generateWordProblem(9));
  for (
    const [text, ok] of [
      ["$1,250", true],
      ["1250.0", true],
      ["The answer is 1250 dollars.", true],
      ["\\boxed{1250}", true],
      ["first 3, then 1250", true],
      ["1251", false],
      ["twelve fifty", false],
    ] as const
  ) {
    assert.equal(verifyNumericAnswer(text, 1250), ok, text);
  }
  assert.ok(verifyNumericAnswer("3/4", 0.75));
  assert.ok(verifyNumericAnswer(7.5, 7.5));
});

Deno.test("word problems: the answer tool ends the episode with 1 or 0", async () => {
  const env = new ToolTaskEnv(localTasks(wordProblems()), { split: "test" });
  const { messages, info } = await env.reset(4);
  const task = await wordProblems().getTask("test", info.index as number);
  const p = generateWordProblem(task.seed as number);
  assert.ok(messages[0].content.startsWith(p.question));
  const copy = env.spawn(true);
  const right = await env.step({
    role: "assistant",
    content: "",
    toolCalls: [{ name: "answer", arguments: { answer: `${p.answer} in total` } }],
  });
  assert.deepEqual([right.reward, right.terminated, right.messages[0].content], [
    1,
    true,
    "Correct!",
  ]);
  const wrong = await copy.step({
    role: "assistant",
    content: "",
    toolCalls: [{ name: "answer", arguments: { answer: p.answer + 1 } }],
  });
  assert.deepEqual([wrong.reward, wrong.terminated, wrong.messages[0].content], [
    0,
    true,
    "Wrong!",
  ]);
});
