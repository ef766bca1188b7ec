/**
 * The opted-in cut of prompts over the context (`proxy.truncate_keep_head`): the head and the
 * newest tokens are kept, the cut is said in the answer and recorded on the turn; without the
 * setting the same prompt is the clean 400 `context_length_exceeded`.
 */

import { assert } from "../assert.ts";
import { cutPrompt } from "../../lib/proxy/generate.ts";
import type { MessageSpan } from "../../lib/proxy/bridge.ts";
import type { CompletedTurn } from "../../lib/proxy/session_types.ts";
import type { ServedRequest } from "../../lib/proxy/options.ts";
import { turnRecord } from "../../lib/proxy/records.ts";
import { withProxy } from "./harness.ts";

Deno.test("truncate: cutPrompt keeps the head and the newest tokens, and cuts the spans alike", () => {
  const tokens = Array.from({ length: 20 }, (_, i) => i);
  const spans: MessageSpan[] = [[0, 6, 0], [6, 14, 1], [14, 20, 2]];
  const cut = cutPrompt(tokens, spans, { keepHead: 4, keep: 10 });
  assert.deepEqual(cut.tokens, [0, 1, 2, 3, 14, 15, 16, 17, 18, 19]);
  assert.equal(cut.truncated, 10);
  assert.deepEqual(cut.spans, [[0, 4, 0], [4, 10, 2]]);
  // A span across the cut keeps its two ends.
  const across = cutPrompt(tokens, [[0, 20, 0]], { keepHead: 4, keep: 10 });
  assert.deepEqual(across.spans, [[0, 4, 0], [4, 10, 0]]);
  // Nothing to cut, or a head that leaves no room: unchanged (the caller refuses it).
  assert.equal(cutPrompt(tokens, null, { keepHead: 4, keep: 30 }).truncated, 0);
  assert.equal(cutPrompt(tokens, null, { keepHead: 10, keep: 10 }).truncated, 0);
});

Deno.test("truncate: over the context, off by default a 400; opted in, cut, said and recorded", async () => {
  const long = [
    { role: "system" as const, content: "You are a careful agent. " + "Rules. ".repeat(40) },
    { role: "user" as const, content: "y".repeat(400) + " Say hi." },
  ];
  await withProxy(async ({ client }) => {
    const err = await client.chat.completions.create({
      model: "local/tiny",
      messages: long,
      max_tokens: 4,
    }).then(() => null, (e) => e);
    assert.equal(err?.status, 400);
    assert.equal(err?.code, "context_length_exceeded");
  });

  const completed: CompletedTurn[] = [];
  const served: ServedRequest[] = [];
  await withProxy(async ({ client, proxy }) => {
    const { response } = await client.chat.completions.create({
      model: "local/tiny",
      messages: long,
      max_tokens: 4,
    }).withResponse();
    const cut = Number(response.headers.get("x-prompt-truncated-tokens"));
    assert.ok(cut > 0, "the answer says how many tokens were cut");
    proxy.sessions.close();
    assert.equal(completed.length, 1);
    assert.equal(completed[0].truncated, cut);
    // The prompt trained on is what was sampled from: the context less the answer's room (max_tokens 4).
    assert.equal(completed[0].turn.observationTokens.length, 256 - 4);
    assert.equal(served[0].truncated, cut);
    assert.equal(turnRecord(completed[0], { status: "recorded" }).truncated_tokens, cut);
  }, {
    options: {
      truncateKeepHead: 32,
      defaultMaxTokens: 16,
      onComplete: (t) => completed.push(t),
      onServed: (s) => served.push(s),
    },
  });
});
