/**
 * When the run using the local backend stops, its queued generation is dropped with a clear
 * error (the step in training and its checkpoint then run next), while scoring requests
 * (prompt log-probs, which a step in training may need) and training still run.
 */

import { assert } from "../../assert.ts";
import { ceDatum, fwdBwd, withServer } from "../server/harness.ts";

Deno.test("local backend: stopSampling drops queued generation with a clear error; scoring and training still run", async () => {
  await withServer(async (h) => {
    const model = await h.newModel();
    const s = await h.post("create_sampling_session", {
      session_id: h.sessionId,
      sampling_session_seq_id: 0,
      base_model: "local/tiny",
    });
    const id = s.body.sampling_session_id;
    const prompt = { chunks: [{ type: "encoded_text", tokens: [72, 105, 33] }] };
    const generate = (seed: number) =>
      h.post("asample", {
        sampling_session_id: id,
        num_samples: 2,
        prompt,
        sampling_params: { max_tokens: 48, seed },
      });
    // The engine busy (as with a batch decoding): what comes next waits in the queue.
    const { promise: busy, resolve: free } = Promise.withResolvers<void>();
    h.server.backend.queue.push(() => busy);
    const queued = [await generate(2), await generate(3)];
    const score = await h.post("asample", {
      sampling_session_id: id,
      num_samples: 1,
      prompt,
      sampling_params: { max_tokens: 1 },
      prompt_logprobs: true,
    });
    const train = await h.post("forward_backward", fwdBwd(model, 1, [ceDatum([1, 2, 3, 4])]));

    assert.equal(h.server.backend.stopSampling("the run is stopping"), 2);
    free();
    const later = await generate(4);
    for (const r of [...queued, later]) {
      assert.deepEqual(await h.result(r), {
        error: "sample request dropped: the run is stopping",
        category: "server",
      });
    }
    const scored = await h.result(score);
    assert.equal((scored.prompt_logprobs as unknown[]).length, 3, JSON.stringify(scored));
    assert.ok("loss_fn_outputs" in await h.result(train), "training runs on");
  });
});

Deno.test("local backend: stopSampling ends the batch already decoding at its next token", async () => {
  await withServer(async (h) => {
    const s = await h.post("create_sampling_session", {
      session_id: h.sessionId,
      sampling_session_seq_id: 0,
      base_model: "local/tiny",
    });
    const running = await h.post("asample", {
      sampling_session_id: s.body.sampling_session_id,
      num_samples: 2,
      prompt: { chunks: [{ type: "encoded_text", tokens: [72, 105, 33] }] },
      sampling_params: { max_tokens: 200, seed: 1 },
    });
    // Taken off the queue: its sampler is being made or it decodes (200 tokens, no stop).
    while (h.server.backend.queue.pending > 0) await new Promise((r) => setTimeout(r, 0));
    assert.equal(h.server.backend.stopSampling("the run is stopping"), 0, "nothing was queued");
    assert.deepEqual(await h.result(running), {
      error: "sample request dropped: the run is stopping",
      category: "server",
    });
  });
});
