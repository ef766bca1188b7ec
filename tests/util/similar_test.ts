import { assert } from "../assert.ts";
import { closest, editDistance } from "../../lib/util/similar.ts";

Deno.test("similar: edit distance and the nearest names to a typo", () => {
  assert.equal(editDistance("kitten", "sitting"), 3);
  assert.equal(editDistance("", "abc"), 3);
  const ids = ["game:Hangman-v0-easy", "game:Hangman-v0-hard", "game:Mastermind-v0-easy"];
  assert.deepEqual(closest("game:Hangman-v0-esy", ids), [
    "game:Hangman-v0-easy",
    "game:Hangman-v0-hard",
  ]);
  assert.deepEqual(closest("game:hangman", ids), ["game:Hangman-v0-easy", "game:Hangman-v0-hard"]);
  assert.deepEqual(closest("game:Chess-v0", ids), []);
});
