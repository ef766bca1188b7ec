import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";

Deno.test("client: sessions over REST, and a training client's tokenizer", async () => {
  const server = await startLocalServer({ dataDir: await Deno.makeTempDir() });
  const service = await ServiceClient.connect({
    baseUrl: server.url,
    apiKey: "tml-local",
    tokenizers: getTokenizer,
  });
  try {
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const rest = service.restClient();
    const { sessions } = await rest.listSessions();
    assert.ok(sessions.includes(service.sessionId));
    const info = await rest.getSession(service.sessionId);
    assert.deepEqual(info.training_run_ids, [training.modelId]);
    const tok = training.getTokenizer();
    assert.equal(tok.decode(tok.encode("héllo <|im_end|>")), "héllo <|im_end|>");
    assert.equal(tok.id, (await training.getInfo()).model_data.tokenizer_id);
    const sampler = await training.saveWeightsAndGetSamplingClient();
    assert.equal(sampler.getTokenizer().id, tok.id);
    const byPath = await service.createSamplingClient({
      modelPath: await training.saveWeightsForSampler("s"),
    });
    assert.throws(() => byPath.getTokenizer(), /made from a tinker:\/\/ path/);
    const bare = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    const untokenized = await bare.createSamplingClient({ baseModel: "local/tiny" });
    assert.throws(() => untokenized.getTokenizer(), /pass `tokenizers` to ServiceClient.connect/);
    bare.close();
  } finally {
    service.close();
    await server.close();
  }
});
