import { assert } from "../assert.ts";
import {
  analyzeGuesses,
  GuessTheNumber,
  lastBoxedInteger,
  listEnvs,
  makeBuiltin,
  UnknownEnvError,
} from "../../lib/envs/mod.ts";

/** The hidden number of a seeded episode, found by bisection through the env's own feedback. */
function solve(env: GuessTheNumber): number[] {
  let lo = 1, hi = 10;
  const guesses: number[] = [];
  for (;;) {
    const g = Math.floor((lo + hi) / 2);
    guesses.push(g);
    const r = env.step(`I guess \\boxed{${g}}`);
    if (r.reward === 1 || r.terminated || r.truncated) return guesses;
    if (r.observation.includes("higher")) lo = g + 1;
    else hi = g - 1;
  }
}

Deno.test("envs: the last \\boxed integer is the action", () => {
  assert.equal(lastBoxedInteger("\\boxed{3} no wait \\boxed{7}"), 7);
  assert.equal(lastBoxedInteger("\\boxed{-2}"), -2);
  assert.equal(lastBoxedInteger("seven"), null);
});

Deno.test("GuessTheNumber: a correct guess wins 1.0 and ends the episode", () => {
  const env = makeBuiltin("game:GuessTheNumber-v0-easy") as GuessTheNumber;
  const { observation } = env.reset(3);
  assert.match(observation, /between 1 and 10.*4 turns.*\\boxed\{N\}/s);
  const guesses = solve(env.spawn(true));
  const target = guesses.at(-1)!;
  const r = env.step(`\\boxed{${target}}`);
  assert.deepEqual([r.reward, r.terminated, r.truncated], [1, true, false]);
  assert.throws(() => env.step("\\boxed{1}"), /episode is over/);
});

Deno.test("GuessTheNumber: feedback, out-of-range and repeats score 0; turn limit gives partial credit", () => {
  const env = new GuessTheNumber("easy");
  env.reset(11);
  const target = solve(env.spawn(true)).at(-1)!;
  const wrong = target === 1 ? 2 : 1;
  const r1 = env.step(`\\boxed{${wrong}}`);
  assert.equal(r1.reward, 0);
  assert.match(r1.observation, wrong < target ? /higher/ : /lower/);
  const r2 = env.step("\\boxed{99}");
  assert.deepEqual([r2.reward, r2.info.reason], [0, "out_of_range"]);
  const r3 = env.step(`\\boxed{${wrong}}`);
  assert.deepEqual([r3.reward, r3.info.reason], [0, "repeated"]);
  const r4 = env.step(`\\boxed{${wrong}}`);
  assert.equal(r4.truncated, true);
  assert.equal(r4.reward, 1 - Math.abs(wrong - target) / 9, "partial credit for the final guess");
  const late = env.spawn(false);
  late.reset(11);
  for (let i = 0; i < 3; i++) late.step(`\\boxed{${wrong}}`);
  assert.equal(late.step("\\boxed{0}").reward, 0, "an out-of-range final guess earns nothing");
});

Deno.test("GuessTheNumber: an action without a guess ends the episode with -0.1", () => {
  const env = new GuessTheNumber("hard");
  assert.match(env.reset(1).observation, /between 1 and 50.*7 turns/s);
  const r = env.step("I think it is five");
  assert.deepEqual([r.reward, r.terminated, r.info.reason], [-0.1, true, "invalid_action"]);
});

Deno.test("GuessTheNumber: seeds reproduce episodes; spawn(true) shares the start state", () => {
  const a = new GuessTheNumber("easy"), b = new GuessTheNumber("easy");
  a.reset(42);
  b.reset(42);
  assert.deepEqual(solve(a), solve(b));
  const targets = new Set([1, 2, 3, 4, 5, 6, 7, 8].map((s) => {
    const e = new GuessTheNumber("easy");
    e.reset(s);
    return solve(e).at(-1);
  }));
  assert.ok(targets.size > 2, "different seeds give different numbers");
  const parent = new GuessTheNumber("easy");
  parent.reset(5);
  const group = [parent.spawn(true), parent.spawn(true), parent.spawn(true)];
  assert.equal(new Set(group.map((e) => solve(e).at(-1))).size, 1);
  assert.throws(() => parent.spawn(false).step("\\boxed{1}"), /reset\(\) before step/);
});

Deno.test("GuessTheNumber: -random picks the easy or the hard range per reset", () => {
  const ranges = new Set([...Array(20).keys()].map((s) => {
    const env = makeBuiltin("game:GuessTheNumber-v0-random");
    return env.reset(s).info.max;
  }));
  assert.deepEqual([...ranges].sort(), [10, 50]);
});

Deno.test("envs: unknown ids list the known ones, with a hint for GEM's unregistered default", () => {
  assert.ok(listEnvs().includes("game:GuessTheNumber-v0-easy"));
  assert.throws(
    () => makeBuiltin("game:GuessTheNumber-v0"),
    (e) =>
      e instanceof UnknownEnvError && /Did you mean game:GuessTheNumber-v0-easy/.test(e.message),
  );
  assert.throws(() => makeBuiltin("game:Chess-v0"), /Known: game:GuessTheNumber-v0-easy/);
});

Deno.test("analyzeGuesses: counts consistent, bisecting, repeated and out-of-range guesses from the text", () => {
  // A seed whose number is above 5, so the first guess gets "higher" from the real env.
  const env = new GuessTheNumber("easy");
  let seed = 0, observation = "";
  const moves: Array<{ action: string; feedback: string }> = [];
  for (;; seed++) {
    observation = env.reset(seed).observation;
    const feedback = env.step("\\boxed{5}").observation;
    if (feedback.includes("higher")) {
      moves.push({ action: "\\boxed{5}", feedback });
      break;
    }
  }
  for (const action of ["\\boxed{5}", "\\boxed{42}", "no guess"]) {
    const r = env.step(action);
    moves.push({ action, feedback: r.observation });
  }
  assert.match(moves[1].feedback, /already guessed/);
  const s = analyzeGuesses(observation, moves);
  assert.deepEqual(s, {
    guesses: 3,
    consistent: 1,
    bisecting: 1,
    repeated: 1,
    outOfRange: 1,
    consistentAt: [true, false, false, false],
  });
  // After "higher than 5" the range is 6..10: 8 is its middle, 6 is consistent but not.
  const mid = analyzeGuesses(observation, [moves[0], { action: "\\boxed{8}", feedback: "" }]);
  assert.equal(mid.bisecting, 2);
  const low = analyzeGuesses(observation, [moves[0], { action: "\\boxed{6}", feedback: "" }]);
  assert.deepEqual([low.consistent, low.bisecting], [2, 1]);
});
