import { assert } from "../../assert.ts";
import { toSampleJob } from "../../../lib/local/backend/wire.ts";
import { findLocalModel } from "../../../lib/local/models.ts";
import { getTokenizer } from "../../../lib/tokenizers/mod.ts";
import type * as wire from "../../../lib/protocol/mod.ts";

function request(stop: string[]): wire.SampleRequest {
  return {
    prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
    sampling_params: { stop },
    num_samples: 1,
  } as unknown as wire.SampleRequest;
}

Deno.test("toSampleJob: stop strings become ids of the sampled model's own tokenizer", () => {
  const games2 = findLocalModel("local/games2")!;
  const tok = getTokenizer("local/games2");
  const job = toSampleJob(request(["<|im_end|>", " below 11"]), games2);
  assert.deepEqual(job.stopTokens, [tok.eosTokenId]);
  assert.deepEqual(job.stopSequences, [tok.encode(" below 11")]);
  assert.equal(job.stopSequences[0].length, 2);

  const bytes = toSampleJob(request(["<|im_end|>"]), findLocalModel("local/games")!);
  assert.deepEqual(bytes.stopTokens, [getTokenizer("local/games").eosTokenId]);
  assert.notEqual(bytes.stopTokens[0], job.stopTokens[0]);
});
