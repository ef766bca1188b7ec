import { assert } from "../assert.ts";
import {
  chatml,
  type Env,
  makeBuiltin,
  ObservationWrapper,
  type StepResult,
  TowerOfHanoi,
  UnknownEnvError,
  wrap,
} from "../../lib/envs/mod.ts";

/** A scripted env: observations o0, o1, …; optional prefix/suffix and parsed actions in info. */
class Script implements Env {
  readonly id = "test:Script";
  readonly maxTurns = 3;
  #t = 0;
  constructor(readonly extra: Record<string, unknown> = {}) {}
  reset() {
    this.#t = 0;
    return { observation: "o0", info: { ...this.extra } };
  }
  step(action: string): StepResult {
    this.#t++;
    return {
      observation: `o${this.#t}`,
      reward: 0,
      terminated: false,
      truncated: false,
      info: {
        ...this.extra,
        ...(action.startsWith("!") ? { parsed_action: action.slice(1) } : {}),
      },
    };
  }
  spawn(): Env {
    return new Script(this.extra);
  }
}

Deno.test("wrappers: concat is the observation history without actions", async () => {
  const env = wrap(new Script(), "concat");
  assert.equal((await env.reset()).observation, "o0\n");
  await env.step("a1");
  assert.equal((await env.step("a2")).observation, "o0\no1\no2\n");
});

Deno.test("wrappers: concat_with_action interleaves actions, preferring info.parsed_action", async () => {
  const env = wrap(new Script(), "concat_with_action");
  await env.reset();
  await env.step("a1\n");
  assert.equal((await env.step("!raw text")).observation, "o0\na1\no1\nraw text\no2\n");
});

Deno.test("wrappers: concat_chat renders chat messages with a template and returns them in info", async () => {
  const env = wrap(new Script(), "concat_chat");
  assert.equal(
    (await env.reset()).observation,
    "<|im_start|>user\no0<|im_end|>\n<|im_start|>assistant\n",
  );
  const r = await env.step("a1");
  assert.deepEqual(r.info.messages, [
    { role: "user", content: "o0" },
    { role: "assistant", content: "a1" },
    { role: "user", content: "o1" },
  ]);
  assert.equal(r.observation, chatml(r.info.messages as never));
  const custom = wrap(
    new Script(),
    "concat_chat",
    (m) => m.map((x) => `${x.role}:${x.content}`).join("|"),
  );
  await custom.reset();
  assert.equal((await custom.step("a1")).observation, "user:o0|assistant:a1|user:o1");
});

Deno.test("wrappers: info.prefix and info.suffix go around the history, as in GEM", async () => {
  const env = wrap(new Script({ prefix: "P:", suffix: "[board]" }), "concat");
  await env.reset();
  assert.equal((await env.step("a")).observation, "P:o0\no1\n[board]");
});

Deno.test("wrappers: a wrapped game keeps its rewards, and spawn(true) keeps the history", async () => {
  const env = new ObservationWrapper(
    makeBuiltin("game:TowerofHanoi-v0-easy"),
    "concat_with_action",
  );
  assert.equal(env.maxTurns, new TowerOfHanoi("easy").maxTurns);
  const start = (await env.reset(0)).observation;
  const r = await env.step("\\boxed{A C}");
  assert.equal(r.reward, 0);
  assert.ok(r.observation.startsWith(start + "\\boxed{A C}\nTurn 1: moved disk 1 from A to C."));
  const twin = env.spawn(true);
  assert.deepEqual(await twin.step("\\boxed{A B}"), await env.step("\\boxed{A B}"));
  assert.throws(() => wrap(env, "concat_chat_on_reset"), /unknown wrapper.*Known: concat, /);
});

Deno.test("registry: every family is registered under GEM's ids; unknown ids list them", () => {
  for (
    const id of [
      "game:GuessTheNumber-v0-hard",
      "game:Mastermind-v0-easy",
      "game:Hangman-v0-random",
      "game:TowerofHanoi-v0-hard",
      "game:Minesweeper-v0-easy",
      "game:FifteenPuzzle-v0-random",
      "math:Arithmetic-v0-easy",
    ]
  ) assert.equal(makeBuiltin(id).id, id);
  assert.throws(
    () => makeBuiltin("game:Wordle-v0-easy"),
    (e) =>
      e instanceof UnknownEnvError && /Known: .*game:Mastermind-v0-easy/.test(e.message) &&
      e.message.includes("math:Arithmetic-v0-hard"),
  );
  assert.throws(() => makeBuiltin("game:Mastermind-v0"), /Did you mean game:Mastermind-v0-easy or/);
});
