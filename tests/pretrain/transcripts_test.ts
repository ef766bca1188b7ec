import { assert } from "../assert.ts";
import { Rng } from "../../lib/util/random.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { loadGamesTokenizer } from "../../lib/tokenizers/games.ts";
import { makeBuiltin } from "../../lib/envs/registry.ts";
import type { Tokenizer } from "../../lib/tokenizers/types.ts";
import { lastBoxedInteger } from "../../lib/envs/types.ts";
import { ModelInput } from "../../lib/tinker/mod.ts";
import {
  ConsistentGuesser,
  envFamily,
  formatPlayer,
  LEGAL_REASONS,
  revealedWord,
  solveArithmetic,
} from "../../lib/pretrain/players.ts";
import {
  exampleDatum,
  parseMix,
  playTranscript,
  PRETRAIN_MIX,
  sampleEnvId,
  type Transcript,
  transcriptExample,
  TranscriptStream,
} from "../../lib/pretrain/transcripts.ts";
import {
  batchCalls,
  fitSteps,
  learningRateAt,
  type PretrainOptions,
} from "../../lib/pretrain/train.ts";

const renderer = new ChatMLRenderer();
const tok = renderer.tokenizer;

/** The tokens a rollout (lib/rollout runEpisode) builds for these moves and observations. */
function rolloutLayout(
  t: Transcript,
  turns: number,
  renderer: ChatMLRenderer<Tokenizer>,
): { tokens: number[]; actionMask: number[] } {
  const tokens: number[] = [], actionMask: number[] = [];
  const put = (ids: number[], isAction: number) => {
    tokens.push(...ids);
    actionMask.push(...ids.map(() => isAction));
  };
  put(renderer.generationPrompt([t.messages[0]]), 0);
  for (let k = 0; k < turns; k++) {
    // what the sampler emits
    put(renderer.tokenizer.encode(`${t.messages[2 * k + 1].content}<|im_end|>`), 1);
    if (k + 1 < turns) put(renderer.continuation([t.messages[2 * k + 2]]), 0);
  }
  return { tokens, actionMask };
}

Deno.test("transcripts: a 3-turn example is token for token the rollout's prompt + actions + continuations (bytes and games tokenizer)", () => {
  let checked = 0;
  const renderers = [renderer, new ChatMLRenderer<Tokenizer>(loadGamesTokenizer())];
  for (const { envId } of PRETRAIN_MIX) {
    for (const renderer of renderers) {
      for (let seed = 0; seed < 20; seed++) {
        const t = playTranscript(envId, seed, new Rng(100 + seed));
        if (t.messages.length < 6) continue; // fewer than 3 turns
        const three = { ...t, messages: t.messages.slice(0, 6) };
        const ex = transcriptExample(three, renderer);
        const { tokens, actionMask } = rolloutLayout(three, 3, renderer);
        assert.deepEqual(
          ex.tokens,
          tokens,
          `${envId} seed ${seed}: tokens differ from the rollout's`,
        );
        assert.deepEqual(
          ex.weights,
          actionMask,
          `${envId} seed ${seed}: weights are not the actions`,
        );
        assert.equal(ex.tokens.at(-1), renderer.tokenizer.eosTokenId);
        checked++;
        break;
      }
    }
  }
  // Every game has 3-turn episodes; arithmetic is single-turn.
  assert.equal(checked, 2 * (PRETRAIN_MIX.length - 2));
});

Deno.test("transcripts: a datum is the example shifted by one, weights on the targets", () => {
  const t = playTranscript("game:GuessTheNumber-v0-hard", 3, new Rng(103));
  const ex = transcriptExample(t);
  const d = exampleDatum(ex);
  assert.deepEqual(ModelInput.toInts(d.model_input), ex.tokens.slice(0, -1));
  assert.deepEqual([...d.loss_fn_inputs.target_tokens.data], ex.tokens.slice(1));
  assert.deepEqual([...d.loss_fn_inputs.weights.data], ex.weights.slice(1));
  // The first target of each move is the first byte after "<|im_start|>assistant\n".
  const firstWeighted = d.loss_fn_inputs.weights.data.indexOf(1);
  const opening = "<|im_start|>assistant\n";
  assert.equal(tok.decode(ex.tokens.slice(firstWeighted - 10, firstWeighted + 1)), opening);
});

Deno.test("transcripts: every generated move is legal, fits the context, and is a boxed answer (GuessTheNumber: after its range)", async () => {
  const transcripts = await new TranscriptStream(11).next(300);
  for (const t of transcripts) {
    const legal = LEGAL_REASONS[envFamily(t.envId)];
    t.reasons.forEach((r, i) =>
      assert.ok(legal.includes(r), `${t.envId} seed ${t.envSeed} move ${i}: ${r} is not legal`)
    );
    assert.ok(transcriptExample(t).tokens.length <= 1025, `${t.envId}: longer than the context`);
    const move = envFamily(t.envId) === "GuessTheNumber"
      ? /^Above -?\d+, below -?\d+\. \\boxed\{\d+\}$/
      : /^\\boxed\{[^{}]+\}$/;
    for (const m of t.messages.filter((m) => m.role === "assistant")) assert.match(m.content, move);
    // Replaying the moves on a fresh env gives the same reasons: the transcript is the episode.
    const env = makeBuiltin(t.envId);
    env.reset(t.envSeed);
    const replay = t.messages.filter((m) => m.role === "assistant").map((m) =>
      String(env.step(m.content).info.reason)
    );
    assert.deepEqual(replay, t.reasons);
    if (envFamily(t.envId) === "Arithmetic") assert.deepEqual(t.rewards, [1]);
  }
});

Deno.test("transcripts: GuessTheNumber guesses are uniform over what the feedback allows, not bisection", () => {
  const firstGuesses = new Map<number, number>();
  for (let seed = 0; seed < 400; seed++) {
    const t = playTranscript("game:GuessTheNumber-v0-easy", seed, new Rng(1000 + seed));
    let lo = 1, hi = 10;
    for (let i = 1; i < t.messages.length; i += 2) {
      const g = lastBoxedInteger(t.messages[i].content)!;
      // The stated range is the consistent one, with exclusive bounds.
      assert.ok(t.messages[i].content.startsWith(`Above ${lo - 1}, below ${hi + 1}. `));
      assert.ok(
        g >= lo && g <= hi,
        `seed ${seed}: guess ${g} outside the consistent [${lo}, ${hi}]`,
      );
      if (i === 1) firstGuesses.set(g, (firstGuesses.get(g) ?? 0) + 1);
      const fb = t.messages[i + 1]?.content.match(/The number is (higher|lower) than/);
      if (fb?.[1] === "higher") lo = g + 1;
      if (fb?.[1] === "lower") hi = g - 1;
    }
  }
  // All ten first guesses occur, each near 40 of 400 (a bisector would always open with 5 or 6).
  assert.equal(firstGuesses.size, 10);
  for (const [g, n] of firstGuesses) assert.ok(n > 15 && n < 70, `first guess ${g}: ${n} of 400`);
});

Deno.test("transcripts: with bisectShare, that share of GuessTheNumber episodes bisects on every move; share 0 keeps earlier transcripts", () => {
  let bisected = 0;
  const episodes = 400;
  for (let seed = 0; seed < episodes; seed++) {
    const t = playTranscript("game:GuessTheNumber-v0-easy", seed, new Rng(1000 + seed), {
      bisectShare: 0.3,
    });
    let lo = 1, hi = 10, always = true;
    for (let i = 1; i < t.messages.length; i += 2) {
      const g = lastBoxedInteger(t.messages[i].content)!;
      always &&= g === Math.floor((lo + hi) / 2);
      const fb = t.messages[i + 1]?.content.match(/The number is (higher|lower) than/);
      if (fb?.[1] === "higher") lo = g + 1;
      if (fb?.[1] === "lower") hi = g - 1;
    }
    // A bisecting episode never runs out of turns on 1-10 (4 guesses cover 15 numbers).
    if (always) assert.equal(t.rewards.at(-1), 1, `seed ${seed}: a bisecting episode failed`);
    if (always) bisected++;
  }
  // ~30 % bisect by style (±2.3 points of sampling error), plus a few uniform episodes by chance.
  assert.ok(bisected > 0.22 * episodes && bisected < 0.42 * episodes, `${bisected} bisected`);
  const plain = playTranscript("game:GuessTheNumber-v0-easy", 7, new Rng(7007));
  const zero = playTranscript("game:GuessTheNumber-v0-easy", 7, new Rng(7007), { bisectShare: 0 });
  assert.deepEqual(zero.messages, plain.messages);
  assert.throws(() => new ConsistentGuesser(1.5), /bisectShare must be in \[0, 1\]/);
});

Deno.test("transcripts: the same seed gives the same transcripts, another seed others", async () => {
  const a = await new TranscriptStream(7).next(40);
  const b = await new TranscriptStream(7).next(40);
  const c = await new TranscriptStream(8).next(40);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a.map((t) => t.messages), c.map((t) => t.messages));
});

Deno.test("transcripts: the mix is ~60% GuessTheNumber and covers every environment", () => {
  const rng = new Rng(0);
  const counts = new Map<string, number>();
  for (let i = 0; i < 5000; i++) {
    const id = sampleEnvId(rng);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const gtn = [...counts].filter(([id]) => id.includes("GuessTheNumber")).reduce(
    (a, [, n]) => a + n,
    0,
  );
  assert.ok(Math.abs(gtn / 5000 - 0.6) < 0.03, `GuessTheNumber share ${gtn / 5000}`);
  assert.equal(counts.size, PRETRAIN_MIX.length);
});

Deno.test("players: arithmetic answers equal the verifier's; Hangman names a revealed word", () => {
  for (let seed = 0; seed < 50; seed++) {
    for (const id of ["math:Arithmetic-v0-easy", "math:Arithmetic-v0-hard"]) {
      const env = makeBuiltin(id);
      const { observation } = env.reset(seed);
      assert.equal(env.step(`\\boxed{${solveArithmetic(observation)}}`).reward, 1);
    }
  }
  assert.equal(solveArithmetic("Compute (17 - 4) * 6 + 9. Think"), 87);
  assert.equal(revealedWord("Turn 3: T is in the word.\nWord: C A T"), "CAT");
  assert.equal(revealedWord("Turn 3: T is in the word.\nWord: C _ T"), null);
  // Hangman easy played until the board is full ends with the word named.
  const solved = Array.from(
    { length: 400 },
    (_, s) => playTranscript("game:Hangman-v0-easy", s, new Rng(100 + s)),
  ).filter((t) => t.reasons.at(-1) === "correct");
  assert.ok(solved.length > 0);
  for (const t of solved) assert.match(t.messages.at(-1)!.content, /^\\boxed\{[A-Z]{3}\}$/);
  assert.throws(() => formatPlayer("game:Nope-v0-easy"), /no format player/);
});

Deno.test("train: batches sort by length into small calls; the schedule warms up and decays", async () => {
  const calls = batchCalls(await new TranscriptStream(1).next(10), 4);
  assert.deepEqual(calls.map((c) => c.length), [4, 4, 2]);
  const lens = calls.flat().map((d) => d.loss_fn_inputs.weights.data.length);
  assert.deepEqual(lens, [...lens].sort((a, b) => b - a));
  const o: PretrainOptions = {
    steps: 100,
    batchSize: 8,
    learningRate: 1e-3,
    warmupSteps: 10,
    minLearningRateRatio: 0.1,
    seed: 0,
    datumsPerCall: 4,
  };
  assert.equal(learningRateAt(5, o), 5e-4);
  assert.equal(learningRateAt(10, o), 1e-3);
  assert.ok(Math.abs(learningRateAt(100, o) - 1e-4) < 1e-12);
  assert.ok(learningRateAt(50, o) < learningRateAt(20, o));
});

Deno.test("parseMix: named weights, others shared equally, one-line errors", () => {
  const mix = parseMix(
    "game:GuessTheNumber-v0-easy=0.5, game:GuessTheNumber-v0-hard=0.2,others=0.3",
  );
  assert.equal(mix.length, PRETRAIN_MIX.length);
  assert.deepEqual(mix[0], { envId: "game:GuessTheNumber-v0-easy", weight: 0.5 });
  const others = mix.filter((e) => !e.envId.includes("GuessTheNumber"));
  assert.ok(others.every((e) => Math.abs(e.weight - 0.3 / 12) < 1e-12));
  // Without "others", the unnamed environments are left out.
  assert.deepEqual(parseMix("game:GuessTheNumber-v0-easy=1"), [
    { envId: "game:GuessTheNumber-v0-easy", weight: 1 },
  ]);
  assert.throws(() => parseMix("game:Nope-v0=1"), /unknown environment/);
  assert.throws(() => parseMix("game:GuessTheNumber-v0-easy=-1"), /weight >= 0/);
  assert.throws(() => parseMix("game:GuessTheNumber-v0-easy"), /id=weight/);
  assert.throws(() => parseMix("others=0"), /weight 0/);
  assert.throws(
    () => parseMix("game:GuessTheNumber-v0-easy=1,game:GuessTheNumber-v0-easy=0.5"),
    /named twice/,
  );
  assert.throws(() => parseMix("others=0.1,others=0.2"), /named twice/);
});

Deno.test("fitSteps: the plan shrinks to what the time budget holds, never grows", () => {
  assert.equal(fitSteps(400, 3, 30, 1440), 400, "too few steps measured");
  assert.equal(fitSteps(400, 20, 160, 1440), 180, "8 s a step in 24 minutes");
  assert.equal(fitSteps(400, 10, 80, 1440), 400, "a tenth of the budget not yet measured");
  // Slow first steps (a busy minute) do not cut a 75-minute plan of 5,000 steps for good.
  assert.equal(fitSteps(5000, 5, 6.5, 4500), 5000, "5 steps at 1.3 s");
  assert.equal(fitSteps(5000, 1500, 600, 4500), 5000, "0.4 s a step over ten minutes: it fits");
  assert.equal(fitSteps(100, 10, 20, 1440), 100, "fits: unchanged");
  assert.equal(fitSteps(180, 170, 1430, 1440), 171, "never before the next step");
  assert.equal(fitSteps(171, 171, 1439, 1440), 171, "never above the plan: the run ends");
});
