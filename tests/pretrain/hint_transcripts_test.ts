import { assert } from "../assert.ts";
import { Rng } from "../../lib/util/random.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";
import type { Message } from "../../lib/renderers/types.ts";
import { appendHintToMessages } from "../../lib/scoring/rules.ts";
import { analyzeGuesses } from "../../lib/envs/guess_the_number.ts";
import { lastBoxedInteger } from "../../lib/envs/types.ts";
import {
  hintedRange,
  isHintEnvId,
  playHintTranscript,
} from "../../lib/pretrain/hint_transcripts.ts";
import {
  HINT_PRETRAIN_MIX,
  transcriptExample,
  TranscriptStream,
} from "../../lib/pretrain/transcripts.ts";

const MARK = "\n\n[user's hint / instruction]\n";

/** The hint of a transcript's last user message, and that message without it. */
function split(messages: Message[]): { hint: string; plain: Message[] } {
  const last = messages.at(-2)!;
  const at = (last.content as string).indexOf(MARK);
  assert.ok(at > 0, "the last user message carries the hint");
  return {
    hint: (last.content as string).slice(at + MARK.length),
    plain: [
      ...messages.slice(0, -2),
      { role: "user", content: (last.content as string).slice(0, at) },
    ],
  };
}

Deno.test("hint transcripts: the hinted move is trained on exactly the teacher's prompt", () => {
  const renderer = new ChatMLRenderer(getTokenizer("local/hint"));
  for (let seed = 0; seed < 20; seed++) {
    const t = playHintTranscript("hint:game:GuessTheNumber-v0-easy", seed, new Rng(100 + seed), {
      renderer,
      bisectShare: 0.3,
    });
    assert.equal(t.messages.at(-1)!.role, "assistant");
    // Only the last user message has a hint: the teacher's context has no other.
    const marks = t.messages.filter((m) => (m.content as string).includes(MARK));
    assert.equal(marks.length, 1);
    const { hint, plain } = split(t.messages);
    // The teacher's prompt, as lib/scoring/judges.ts builds it from the turn's conversation.
    const teacher = renderer.buildGenerationPrompt(appendHintToMessages(plain, hint) as Message[]);
    const ex = transcriptExample(t, renderer);
    assert.deepEqual(ex.tokens.slice(0, teacher.length), teacher);
    assert.ok(ex.weights.slice(teacher.length).some((w) => w > 0), "the hinted move is trained");
  }
});

Deno.test("hint transcripts: the stated range is the feedback's; half the guesses use the hint", () => {
  const stream = new TranscriptStream(
    7,
    HINT_PRETRAIN_MIX.filter((e) => isHintEnvId(e.envId)),
    { bisectShare: 0.3 },
  );
  return stream.next(400).then((ts) => {
    let usesHint = 0, informative = 0;
    for (const t of ts) {
      const { hint, plain } = split(t.messages);
      const rules = plain[0].content as string;
      const moves = [];
      for (let i = 1; i < plain.length; i += 2) {
        moves.push({
          action: plain[i].content as string,
          feedback: plain[i + 1].content as string,
        });
      }
      const move = t.messages.at(-1)!.content as string;
      // The range the feedback so far allows, as the no-hint player states it.
      const stats = analyzeGuesses(rules, [...moves, { action: move, feedback: "" }]);
      assert.ok(stats.consistentAt.at(-1), `${move} after ${JSON.stringify(moves)}`);
      const stated = move.match(/^Above (-?\d+), below (\d+)\. /);
      assert.ok(stated, move);
      const lo = Number(stated[1]) + 1, hi = Number(stated[2]) - 1;
      const possible = hintedRange(hint, [lo, hi]);
      if (possible.length < hi - lo + 1) {
        informative++;
        if (possible.includes(lastBoxedInteger(move)!)) usesHint++;
      }
    }
    // Half use the hint; the other half guess as without it, sometimes inside it by chance.
    const share = usesHint / informative;
    assert.ok(informative > 200 && share > 0.55 && share < 0.85, `${usesHint}/${informative}`);
  });
});

Deno.test("hint transcripts: what a hint leaves possible", () => {
  assert.deepEqual(hintedRange("Correct! The number was 7.", [1, 10]), [7]);
  assert.deepEqual(
    hintedRange("The number is lower than 8. Out of turns: the number was 4.", [2, 10]),
    [4],
  );
  assert.deepEqual(hintedRange("The number is higher than 7. 2 turns left.", [4, 10]), [8, 9, 10]);
  assert.deepEqual(hintedRange("The number is lower than 6. 2 turns left.", [4, 10]), [4, 5]);
  assert.deepEqual(hintedRange("You already guessed 5. 1 turns left.", [4, 6]), [4, 6]);
  assert.deepEqual(hintedRange("11 is out of range: guess between 1 and 10.", [9, 10]), [9, 10]);
  assert.deepEqual(
    hintedRange("No guess found: answer with \\boxed{N}. Game over.", [9, 10]),
    [9, 10],
  );
});
