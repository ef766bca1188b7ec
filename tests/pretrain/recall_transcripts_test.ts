import { assert } from "../assert.ts";
import {
  isRecallEnvId,
  playRecallTranscript,
  RECALL_ID,
} from "../../lib/pretrain/recall_transcripts.ts";
import {
  TOOLS_PRETRAIN_MIX,
  TOOLS_TOKENIZER_MIX,
  transcriptExample,
  TranscriptStream,
} from "../../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../../lib/tokenizers/mod.ts";
import { Rng } from "../../lib/util/random.ts";

const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer("local/tools"));

Deno.test("recall: the reply is the user's words again, in order, each one token", () => {
  const shapes = { same: 0, toJson: 0 };
  for (let seed = 0; seed < 150; seed++) {
    const t = playRecallTranscript(RECALL_ID, seed, new Rng(seed), { renderer });
    const [user, reply] = t.messages;
    assert.equal(reply.role, "assistant");
    const list = user.content.slice(user.content.indexOf("\n") + 1);
    const words = list.startsWith("[") ? JSON.parse(list) : list.split(" ");
    assert.ok(words.length >= 6 && new Set(words).size === words.length);
    if (reply.content === list) shapes.same++;
    else {
      shapes.toJson++;
      assert.deepEqual(JSON.parse(reply.content), words);
    }
    // Each word is one token in the prompt and one in the trained reply, so the token to copy
    // is the one after the current token's earlier occurrence.
    const ex = transcriptExample(t, renderer);
    const trained = ex.tokens.filter((_, i) => ex.weights[i] > 0);
    const word = (w: string) =>
      renderer.tokenizer.encode(reply.content.startsWith("[") ? w : ` ${w}`);
    for (const w of words.slice(1)) {
      assert.equal(word(w).length, 1);
      assert.ok(trained.includes(word(w)[0]), w);
    }
  }
  assert.ok(shapes.same > 70 && shapes.toJson > 30, JSON.stringify(shapes));
});

Deno.test("recall: a pretraining mix entry of local/tools, not of its tokenizer's mix", async () => {
  assert.ok(isRecallEnvId(RECALL_ID) && !isRecallEnvId("synthetic:FreshTools-v0"));
  assert.ok(TOOLS_PRETRAIN_MIX.some((e) => e.envId === RECALL_ID));
  // Made-up names must not become tokens.
  assert.ok(!TOOLS_TOKENIZER_MIX.some((e) => e.envId === RECALL_ID));
  const [t] = await new TranscriptStream(3, [{ envId: RECALL_ID, weight: 1 }], { renderer }).next(
    1,
  );
  assert.equal(t.envId, RECALL_ID);
  assert.throws(() => playRecallTranscript("recall:other", 0, new Rng(0)), /recall transcripts/);
});
