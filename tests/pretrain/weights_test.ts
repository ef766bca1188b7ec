import { assert } from "../assert.ts";
import { join } from "node:path";
import { createTar } from "../../lib/local/tar.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { findLocalModel, loadBaseWeights } from "../../lib/local/models.ts";
import { checkBaseParameters, initBaseParameters } from "../../lib/local/model/params.ts";
import { readSafetensors } from "../../lib/local/safetensors.ts";
import {
  downloadFullWeights,
  extendVocabulary,
  readTar,
  writeBaseWeights,
} from "../../lib/pretrain/weights.ts";

Deno.test("weights: readTar reads back what createTar wrote", () => {
  const a = new Uint8Array(700).map((_, i) => i % 251);
  const b = new TextEncoder().encode("{}");
  const files = readTar(
    createTar([{ name: "ckpt/a.bin", data: a }, { name: "ckpt/b.json", data: b }]),
  );
  assert.deepEqual(files.map((f) => f.name), ["ckpt/a.bin", "ckpt/b.json"]);
  assert.deepEqual(files[0].data, a);
  assert.deepEqual(files[1].data, b);
  const cut = createTar([{ name: "x", data: a }]).slice(0, 800);
  assert.throws(() => readTar(cut), /runs past the end/);
});

Deno.test("weights: a full fine-tune's sampler checkpoint downloads as base weights; a LoRA one is refused", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-pretrain-weights-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const spec = findLocalModel("local/tiny")!;
    const full = await service.createLoraTrainingClient({
      baseModel: spec.name,
      rank: 1,
      userMetadata: { "tinkerbench.trainable": "full" },
    });
    const path = await full.saveWeightsForSampler("full");
    const weights = await downloadFullWeights(service, path, spec);
    // No step taken: the weights are the base model's seeded init, tensor for tensor.
    const init = initBaseParameters(spec.config, spec.initSeed);
    assert.deepEqual([...weights.keys()], [...init.keys()]);
    for (const [name, t] of init) assert.deepEqual(weights.get(name)!.data, t.data, name);

    const out = join(dataDir, "out.safetensors");
    await writeBaseWeights(out, spec, weights, { steps: "0" });
    const back = await readSafetensors(out);
    assert.equal(back.metadata.format, "tinkerbench-base");
    assert.equal(back.metadata.steps, "0");
    assert.equal(back.tensors.size, init.size);
    await assert.rejects(
      () => writeBaseWeights(out, findLocalModel("local/games")!, weights),
      /base weights: .* shape/,
    );

    const lora = await service.createLoraTrainingClient({ baseModel: spec.name, rank: 2 });
    const loraPath = await lora.saveWeightsForSampler("lora");
    await assert.rejects(
      () => downloadFullWeights(service, loraPath, spec),
      /not a full fine-tune/,
    );
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("extendVocabulary: local/tools from local/games2 keeps every tensor it has, the old tokens' rows and columns, and drops the position table a rotary model has none of", async () => {
  const from = findLocalModel("local/games2")!, to = findLocalModel("local/tools")!;
  const games2 = await loadBaseWeights(from);
  const out = extendVocabulary(from, games2, to);
  checkBaseParameters(to.config, out);
  const [v, V, d] = [from.config.vocabSize, to.config.vocabSize, to.config.dModel];
  assert.ok(games2.has("wpe.weight") && !out.has("wpe.weight"));
  assert.deepEqual(
    out.get("blocks.0.attn.q.weight")!.data,
    games2.get("blocks.0.attn.q.weight")!.data,
  );
  assert.deepEqual(out.get("wte.weight")!.data.subarray(0, v * d), games2.get("wte.weight")!.data);
  const head = out.get("lm_head.weight")!.data, old = games2.get("lm_head.weight")!.data;
  for (const i of [0, 63, d - 1]) {
    assert.deepEqual(head.subarray(i * V, i * V + v), old.subarray(i * v, (i + 1) * v));
  }
  assert.throws(() => extendVocabulary(to, out, from), Error, "does not extend");
});
