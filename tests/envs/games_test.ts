import { assert } from "../assert.ts";
import {
  Arithmetic,
  FifteenPuzzle,
  Hangman,
  lastBoxed,
  listEnvs,
  makeBuiltin,
  Mastermind,
  Minesweeper,
  parseAnswer,
  scoreGuess,
  TowerOfHanoi,
  verify,
  WORDS,
} from "../../lib/envs/mod.ts";

// Subclasses that expose the hidden state, so tests can play perfectly or deliberately badly.
class PeekMastermind extends Mastermind {
  get code(): number[] {
    return this.state!.code;
  }
}
class PeekHangman extends Hangman {
  get word(): string {
    return this.state!.word;
  }
}
class PeekMinesweeper extends Minesweeper {
  get grid(): number[][] {
    return this.state!.grid;
  }
}
class PeekFifteen extends FifteenPuzzle {
  get cells(): number[] {
    return this.state!.cells;
  }
}
class PeekArithmetic extends Arithmetic {
  get answer(): number {
    return this.state!.answer;
  }
}

const boxed = (s: string | number) => `Let me think. \\boxed{${s}}`;

Deno.test("envs: lastBoxed takes the last complete box and matches nested braces", () => {
  assert.equal(lastBoxed("\\boxed{1 2} then \\boxed{3 4}"), "3 4");
  assert.equal(lastBoxed("\\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  assert.equal(lastBoxed("\\boxed{7} and an unclosed \\boxed{8"), "7");
  assert.equal(lastBoxed("no box"), null);
});

Deno.test("envs: every id resets reproducibly, spawns its start state and penalises bad format", () => {
  // The text environments (the registry also holds their tool versions, `tool:*`).
  const ids = listEnvs().filter((id) => /^(game|math):/.test(id));
  assert.equal(ids.length, 20);
  for (const id of ids) {
    const a = makeBuiltin(id), b = makeBuiltin(id);
    assert.equal(a.id, id);
    const first = a.reset(7).observation;
    assert.equal(b.reset(7).observation, first, `${id}: same seed, same start`);
    assert.match(first, /\\boxed\{/, `${id}: the first observation documents the action format`);
    const twin = a.spawn(true);
    const r = a.step("I have no idea.");
    assert.deepEqual([r.reward, r.terminated], [-0.1, true], `${id}: unparseable action`);
    assert.equal(r.info.reason === "format_error" || r.info.reason === "invalid_action", true);
    assert.throws(() => a.step(boxed(1)), /episode is over/, id);
    // The twin is unaffected by a's step and still plays from the start state.
    assert.equal(twin.step("nothing").reward, -0.1, `${id}: twin plays its own episode`);
    assert.throws(() => a.spawn(false).step(boxed(1)), /reset\(\) before step/, id);
  }
  const starts = new Set([1, 2, 3, 4, 5].map((s) => {
    const e = new PeekHangman("hard");
    e.reset(s);
    return e.word;
  }));
  assert.ok(starts.size > 1, "different seeds, different words");
});

Deno.test("envs: spawn(true) mid-episode continues identically", () => {
  for (
    const id of [
      "game:Mastermind-v0-hard",
      "game:Minesweeper-v0-hard",
      "game:FifteenPuzzle-v0-hard",
    ]
  ) {
    const env = makeBuiltin(id);
    env.reset(3);
    const moves = id.includes("Master")
      ? ["\\boxed{1 2 3 4}", "\\boxed{5 6 7 8}"]
      : id.includes("Mine")
      ? ["\\boxed{reveal 4 4}", "\\boxed{flag 0 0}"]
      : ["\\boxed{down}", "\\boxed{right}"];
    env.step(moves[0]);
    const twin = env.spawn(true);
    assert.deepEqual(twin.step(moves[1]), env.step(moves[1]), id);
  }
});

Deno.test("Mastermind: pegs, milestone rewards summing to 1, invalid guesses score 0", () => {
  assert.deepEqual(scoreGuess([1, 2, 3, 4], [1, 3, 2, 5]), [1, 2]);
  assert.deepEqual(scoreGuess([1, 2, 3, 4], [4, 3, 2, 1]), [0, 4]);
  const env = new PeekMastermind("hard");
  assert.match(env.reset(5).observation, /4 distinct digits, each from 1 to 8.*30 turns/s);
  const code = env.code;
  assert.equal(new Set(code).size, 4);
  // Guesses with exactly k leading digits in place, padded with digits not in the code.
  const unused = [1, 2, 3, 4, 5, 6, 7, 8].filter((d) => !code.includes(d));
  const guess = (k: number) => code.map((d, i) => (i < k ? d : unused[i - k])).join(" ");
  let total = 0;
  const r1 = env.step(boxed(guess(1)));
  assert.match(r1.observation, /1 black peg\(s\) and 0 white/);
  assert.equal(r1.reward, 0.25);
  total += r1.reward;
  const again = env.step(boxed(guess(1)));
  assert.deepEqual([again.reward, again.info.reason], [0, "repeated"]);
  assert.deepEqual(env.step(boxed("1 2")).info.reason, "wrong_length");
  const out = env.step(boxed("1 2 3 9"));
  assert.deepEqual([out.reward, out.info.reason], [0, "out_of_range"]);
  const r3 = env.step(boxed(guess(3)));
  assert.equal(r3.reward, 0.5, "two new black pegs beyond the milestone");
  total += r3.reward;
  const win = env.step(boxed(code.join(" ")));
  total += win.reward;
  assert.deepEqual([win.reward, win.terminated, win.info.reason], [0.25, true, "correct"]);
  assert.equal(total, 1);
});

Deno.test("Mastermind: the turn limit truncates", () => {
  const env = new PeekMastermind("easy");
  env.reset(2);
  const bad = [1, 2, 3, 4, 5, 6].filter((d) => !env.code.includes(d));
  let r;
  for (let t = 0; t < 10; t++) {
    r = env.step(boxed(`${bad[t % 4]} ${bad[(t + 1 + Math.floor(t / 4)) % 4]}`));
  }
  assert.deepEqual([r!.terminated, r!.truncated, r!.reward], [false, true, 0]);
  assert.equal(env.maxTurns, 10);
});

Deno.test("Hangman: letter and word rewards, repeats, wrong length, turn limit", () => {
  const env = new PeekHangman("hard");
  // The first seed whose word repeats a letter, so a hit reveals (and pays for) several cells.
  let seed = 0;
  while (env.reset(seed), new Set(env.word).size === 7) seed++;
  assert.match(env.reset(seed).observation, /7-letter word.*20 turns.*_ _ _ _ _ _ _/s);
  const word = env.word;
  assert.ok(WORDS[7].includes(word.toLowerCase()));
  const letter = [...word].find((c, i) => word.indexOf(c) !== i)!;
  const count = [...word].filter((c) => c === letter).length;
  assert.ok(count >= 2);
  const hit = env.step(boxed(letter.toLowerCase()));
  assert.deepEqual([hit.reward, hit.info.reason], [0.5 * count / 7, "hit"]);
  const shown = word.replace(new RegExp(`[^${letter}]`, "g"), "_").split("").join(" ");
  assert.ok(hit.observation.endsWith(`Word: ${shown}`));
  assert.deepEqual(env.step(boxed(letter)).info.reason, "repeated");
  const miss = [..."ZQXJ"].find((c) => !word.includes(c))!;
  const missed = env.step(boxed(miss));
  assert.deepEqual([missed.reward, missed.info.reason], [0, "miss"]);
  const short = env.step(boxed("CAT"));
  assert.deepEqual([short.reward, short.info.reason], [0, "wrong_length"]);
  const win = env.step(boxed(word));
  assert.equal(win.terminated, true);
  assert.equal(win.reward, 0.5 + 0.5 * (7 - count) / 7, "word guess pays for the hidden letters");

  const slow = new PeekHangman("easy");
  slow.reset(4);
  const misses = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZ"].filter((c) => !slow.word.includes(c));
  let r;
  for (let t = 0; t < 10; t++) r = slow.step(boxed(misses[t]));
  assert.deepEqual([r!.reward, r!.terminated, r!.truncated], [0, false, true]);
});

Deno.test("Hangman: revealing every letter by letters pays 0.5 and the word still has to be named", () => {
  const env = new PeekHangman("easy");
  env.reset(9);
  let sum = 0;
  for (const c of new Set(env.word)) sum += env.step(boxed(c)).reward;
  assert.ok(Math.abs(sum - 0.5) < 1e-12);
  const win = env.step(boxed(env.word));
  assert.deepEqual([win.reward, win.terminated], [0.5, true]);
});

Deno.test("TowerofHanoi: the optimal 7 moves win; illegal moves score 0; timeout credit is disks on C", () => {
  const env = new TowerOfHanoi("easy");
  assert.match(env.reset(0).observation, /3 disks.*10 turns.*A: \[3, 2, 1\]/s);
  const blocked = env.step(boxed("B C"));
  assert.deepEqual([blocked.reward, blocked.info.reason], [0, "empty_source"]);
  const solution = ["A C", "A B", "C B", "A C", "B A", "B C", "A,C"];
  const rewards = solution.map((m) => env.step(`move \\boxed{${m.toLowerCase()}}`));
  assert.deepEqual(rewards.map((r) => r.reward), [0, 0, 0, 0, 0, 0, 1]);
  assert.equal(rewards.at(-1)!.terminated, true);

  const slow = new TowerOfHanoi("easy");
  slow.reset(0);
  slow.step(boxed("A C"));
  const bad = slow.step(boxed("A C"));
  assert.deepEqual([bad.reward, bad.info.reason], [0, "larger_on_smaller"]);
  let r;
  for (let t = 2; t < 10; t++) r = slow.step(boxed(t % 2 ? "B C" : "C B"));
  assert.deepEqual([r!.truncated, r!.terminated], [true, false]);
  assert.equal(r!.reward, 1 / 3, "one of three disks on C");
});

Deno.test("Minesweeper: safe first reveal, clearing sums to 1, a mine ends with 0", () => {
  const env = new PeekMinesweeper("easy");
  assert.match(env.reset(1).observation, /5x5 grid with 5 mines.*25 turns/s);
  const first = env.step(boxed("reveal 2 2"));
  // A zero opens its neighbours: the reward counts every cell the reveal uncovered.
  const shown = first.observation.split("\n").slice(2).join(" ").match(/\b\d\b/g)!.length - 5;
  assert.ok(shown > 1);
  assert.equal(first.reward, shown / 20);
  const g = env.grid;
  assert.equal(g.flat().filter((v) => v === -1).length, 5);
  for (let r = 1; r <= 3; r++) for (let c = 1; c <= 3; c++) assert.notEqual(g[r][c], -1);
  assert.deepEqual(env.step(boxed("reveal 9 0")).info.reason, "out_of_bounds");
  assert.deepEqual(env.step(boxed("reveal 2 2")).info.reason, "already_revealed");
  assert.deepEqual(env.step(boxed("poke 0 0")).info.reason, "unknown_verb");
  const mine = g.flat().indexOf(-1);
  const flag = env.step(boxed(`flag ${Math.floor(mine / 5)} ${mine % 5}`));
  assert.deepEqual([flag.reward, flag.info.reason], [0, "flag"]);
  const twin = env.spawn(true);
  let total = first.reward, last;
  for (let r = 0; r < 5; r++) {
    for (let c = 0; c < 5; c++) {
      if (g[r][c] === -1) continue;
      const res = env.step(boxed(`reveal ${r} ${c}`));
      if (res.info.reason === "already_revealed") continue;
      total += res.reward;
      last = res;
    }
  }
  assert.deepEqual([last!.terminated, last!.info.reason], [true, "cleared"]);
  assert.ok(Math.abs(total - 1) < 1e-12);
  // As in GEM, revealing a mine explodes even when it is flagged.
  const hit = twin.step(boxed(`reveal ${Math.floor(mine / 5)} ${mine % 5}`));
  assert.deepEqual([hit.reward, hit.terminated, hit.info.reason], [0, true, "mine"]);
});

Deno.test("Minesweeper: mines are reproducible from the seed and the turn limit truncates", () => {
  const a = new PeekMinesweeper("hard"), b = new PeekMinesweeper("hard");
  a.reset(8);
  b.reset(8);
  a.step(boxed("reveal 0 0"));
  b.step(boxed("reveal 0 0"));
  assert.deepEqual(a.grid, b.grid);
  const c = new PeekMinesweeper("hard");
  c.reset(9);
  c.step(boxed("reveal 0 0"));
  assert.notDeepEqual(a.grid, c.grid);
  const e = new Minesweeper("easy");
  e.reset(1);
  let r;
  for (let t = 0; t < 25; t++) r = e.step(boxed("flag 0 4"));
  assert.deepEqual([r!.truncated, r!.terminated, r!.reward], [true, false, 0]);
});

/** Shortest solution of a 2×2 board by breadth-first search over slides. */
function solve2x2(cells: number[]): string[] {
  const dirs = ["up", "down", "left", "right"] as const;
  const key = (c: number[]) => c.join(",");
  const seen = new Map<string, string[]>([[key(cells), []]]);
  const queue = [cells];
  while (queue.length) {
    const c = queue.shift()!;
    const path = seen.get(key(c))!;
    if (key(c) === "1,2,3,0") return path;
    for (const d of dirs) {
      const gap = c.indexOf(0), r = Math.floor(gap / 2), col = gap % 2;
      const [dr, dc] = { up: [1, 0], down: [-1, 0], left: [0, 1], right: [0, -1] }[d];
      if (r + dr < 0 || r + dr > 1 || col + dc < 0 || col + dc > 1) continue;
      const n = [...c];
      n[gap] = n[(r + dr) * 2 + col + dc];
      n[(r + dr) * 2 + col + dc] = 0;
      if (!seen.has(key(n))) {
        seen.set(key(n), [...path, d]);
        queue.push(n);
      }
    }
  }
  throw new Error("unsolvable");
}

Deno.test("FifteenPuzzle: solvable scrambles, a solve wins 1.0, blocked moves score 0, timeout credit", () => {
  const env = new PeekFifteen("easy");
  assert.match(env.reset(1).observation, /3-Puzzle.*10 turns.*\\boxed\{up\}/s);
  assert.notDeepEqual(env.cells, [1, 2, 3, 0], "never starts solved");
  const path = solve2x2(env.cells);
  const gap = env.cells.indexOf(0);
  const blockedDir = gap < 2 ? "down" : "up";
  const blocked = env.step(boxed(blockedDir));
  assert.deepEqual([blocked.reward, blocked.info.reason], [0, "blocked"]);
  const results = path.map((d) => env.step(boxed(d)));
  assert.deepEqual([results.at(-1)!.reward, results.at(-1)!.terminated], [1, true]);

  const slow = new PeekFifteen("easy");
  slow.reset(1);
  let r;
  for (let t = 0; t < 10; t++) r = slow.step(boxed(blockedDir));
  const inPlace = slow.cells.filter((v, i) => v === (i + 1) % 4).length;
  assert.deepEqual([r!.truncated, r!.reward], [true, inPlace / 4]);
  const hard = new PeekFifteen("hard");
  hard.reset(2);
  assert.deepEqual([...hard.cells].sort((a, b) => a - b), [...Array(16).keys()]);
});

Deno.test("Arithmetic: the verifier accepts equivalent spellings and rejects wrong values", () => {
  assert.equal(parseAnswer("1,234"), 1234);
  assert.equal(parseAnswer("$-12$"), -12);
  assert.equal(parseAnswer("\\frac{3}{4}"), 0.75);
  assert.equal(parseAnswer("6/8"), 0.75);
  assert.equal(parseAnswer("2.50"), 2.5);
  assert.equal(parseAnswer("x = 3"), null);
  assert.equal(parseAnswer("1/0"), null);
  assert.equal(verify("so \\boxed{84}", 84), true);
  assert.equal(verify("\\boxed{84} wait, \\boxed{85}", 84), false);
  assert.equal(verify("84", 84), null);
});

Deno.test("Arithmetic: one step, 1 for correct, 0 for wrong, -0.1 without a boxed number", () => {
  const env = new PeekArithmetic("easy");
  assert.equal(env.reset(1).observation.startsWith("Compute (8 + 4) * 7."), true);
  assert.equal(env.answer, 84);
  const twin = env.spawn(true), twin2 = env.spawn(true);
  const ok = env.step("12 * 7 = \\boxed{84}");
  assert.deepEqual([ok.reward, ok.terminated, ok.truncated], [1, true, false]);
  const wrong = twin.step("\\boxed{83}");
  assert.deepEqual([wrong.reward, wrong.terminated], [0, true]);
  assert.deepEqual([twin2.step("\\boxed{eighty}").reward, env.maxTurns], [-0.1, 1]);
  const hard = new PeekArithmetic("hard");
  assert.match(hard.reset(1).observation, /Compute \(40 \+ 17\) \* 7 - 83 - 25\./);
  assert.equal(hard.answer, (40 + 17) * 7 - 83 - 25);
});

Deno.test("random variants draw their settings per reset", () => {
  const turns = (id: string) =>
    new Set([...Array(30).keys()].map((s) => {
      const e = makeBuiltin(id);
      e.reset(s);
      return e.maxTurns;
    }));
  assert.deepEqual([...turns("game:Mastermind-v0-random")].sort((a, b) => a - b), [10, 20, 30]);
  assert.deepEqual([...turns("game:Hangman-v0-random")].sort((a, b) => a - b), [10, 15, 20]);
  assert.deepEqual([...turns("game:TowerofHanoi-v0-random")].sort((a, b) => a - b), [10, 20, 35]);
  assert.deepEqual([...turns("game:FifteenPuzzle-v0-random")].sort((a, b) => a - b), [10, 20, 50]);
  assert.deepEqual([...turns("game:Minesweeper-v0-random")].sort((a, b) => a - b), [
    25,
    36,
    49,
    64,
  ]);
});
