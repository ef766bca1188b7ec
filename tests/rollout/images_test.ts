/**
 * Images in a rollout: prompts are built by the renderer's one prompt function
 * (`buildGenerationInput`), and an episode whose prompt has an image ends as an error episode
 * with one line saying why (a turn holds its prompt as tokens), before anything is sampled.
 */

import { assert } from "../assert.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import type { Message } from "../../lib/renderers/types.ts";
import type { MessageEnv } from "../../lib/envs/types.ts";
import { runEpisode, type Sampler } from "../../lib/rollout/mod.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const LOOK: Message[] = [{
  role: "user",
  content: "What is this?",
  parts: [{ type: "text", text: "What is this?" }, { type: "image", data: PNG, format: "png" }],
}];

/** A one-turn environment that shows an image. */
const looking: MessageEnv = {
  kind: "message",
  id: "test:look",
  maxTurns: 1,
  reset: () => ({ messages: LOOK, info: {} }),
  step: () => ({ messages: [], reward: 1, terminated: true, truncated: false, info: {} }),
  spawn: () => looking,
};

Deno.test("rollout images: an episode whose prompt has an image is an error episode naming why; nothing is sampled", async () => {
  let sampled = 0;
  const sampler: Sampler = {
    sample() {
      sampled++;
      throw new Error("not reached");
    },
  };
  const tokenizer = loadQwen3Tokenizer();
  const cases = [
    // A vision format places the image; the rollout refuses the prompt.
    [
      getRenderer("Qwen/Qwen3.5-4B", { tokenizer }),
      /^an episode's prompt has an image: a turn holds its prompt as tokens/,
    ],
    // A text format refuses it itself.
    [getRenderer("local/tiny"), /^ChatML takes no images/],
  ] as const;
  for (const [renderer, why] of cases) {
    const episode = await runEpisode(looking, LOOK, sampler, { maxTokensPerTurn: 8, renderer });
    assert.equal(episode.stopReason, "error");
    assert.equal(episode.turns.length, 0);
    assert.match(episode.error ?? "", why);
  }
  assert.equal(sampled, 0);
});
