import { assert } from "../assert.ts";
import { Rng } from "../../lib/util/random.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";
import type { Message } from "../../lib/renderers/types.ts";
import { appendHintToMessages } from "../../lib/scoring/rules.ts";
import { lastBoxedInteger } from "../../lib/envs/types.ts";
import {
  ANSWER_HINTED_ID,
  ANSWER_PLAIN_ID,
  playAnswerTranscript,
} from "../../lib/pretrain/answer_transcripts.ts";
import { transcriptExample, TranscriptStream } from "../../lib/pretrain/transcripts.ts";

const MARK = "\n\n[user's hint / instruction]\n";

Deno.test("answer transcripts: the hinted move is trained on exactly the teacher's prompt", () => {
  const renderer = new ChatMLRenderer(getTokenizer("local/hint"));
  for (let seed = 0; seed < 20; seed++) {
    const t = playAnswerTranscript(ANSWER_HINTED_ID, seed, new Rng(seed), { renderer });
    const task = t.messages[0].content as string;
    const at = task.indexOf(MARK);
    assert.ok(at > 0, "the task carries the hint");
    const plain: Message[] = [{ role: "user", content: task.slice(0, at) }];
    // The teacher's prompt, as lib/scoring/judges.ts builds it from the turn's conversation.
    const teacher = renderer.buildGenerationPrompt(
      appendHintToMessages(plain, task.slice(at + MARK.length)) as Message[],
    );
    const ex = transcriptExample(t, renderer);
    assert.deepEqual(ex.tokens.slice(0, teacher.length), teacher);
    assert.ok(ex.weights.slice(teacher.length).every((w) => w > 0), "the move is trained");
    assert.ok(ex.weights.slice(0, teacher.length).every((w) => w === 0), "the prompt is not");
  }
});

Deno.test("answer transcripts: hinted moves copy the named number; plain ones guess in range", async () => {
  const stream = new TranscriptStream(3, [
    { envId: ANSWER_HINTED_ID, weight: 1 },
    { envId: ANSWER_PLAIN_ID, weight: 1 },
  ]);
  let hinted = 0, copied = 0, plain = 0, plainRight = 0;
  for (const t of await stream.next(600)) {
    const task = t.messages[0].content as string;
    const range = task.match(/(?:between|from) (\d+) (?:and|to) (\d+)/)!;
    const move = lastBoxedInteger(t.messages[1].content as string)!;
    assert.ok(move >= Number(range[1]) && move <= Number(range[2]), `${move} in ${range[0]}`);
    if (t.envId === ANSWER_HINTED_ID) {
      hinted++;
      const named = Number(task.slice(task.indexOf(MARK)).match(/(\d+)\.$/)![1]);
      if (move === named) copied++;
    } else {
      assert.ok(!task.includes(MARK));
      plain++;
      if (t.rewards[0] === 1) plainRight++;
    }
  }
  // 90 % copy, and the other 10 % guess, sometimes right by chance; without the hint, chance.
  assert.ok(copied / hinted > 0.88 && copied / hinted < 0.97, `${copied}/${hinted}`);
  assert.ok(plainRight / plain < 0.2, `${plainRight}/${plain}`);
});
