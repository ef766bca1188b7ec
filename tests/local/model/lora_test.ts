/** Folding a LoRA adapter into its base weights on the host (the ONNX sampler's weights). */

import { assert } from "../../assert.ts";
import { foldLoraOnHost } from "../../../lib/local/model/lora.ts";
import { LoraSpecSchema } from "../../../lib/local/model/config.ts";
import { initBaseParameters, initLoraParameters } from "../../../lib/local/model/params.ts";
import { findLocalModel } from "../../../lib/local/models.ts";

const CFG = findLocalModel("local/tiny")!.config;
const LORA = LoraSpecSchema.parse({ rank: 4, alpha: 8, seed: 3 });

Deno.test("foldLoraOnHost: an untrained adapter (B zero) leaves the base tensors as they are; a trained one changes them", () => {
  const base = initBaseParameters(CFG, 1);
  const fresh = initLoraParameters(CFG, LORA);
  const same = foldLoraOnHost(base, fresh, 2);
  for (const [name, t] of base) assert.ok(same.get(name) === t, `${name} is the base tensor`);

  const trained = new Map(fresh);
  const [bName, b] = [...fresh].find(([n]) => n.endsWith(".lora_b"))!;
  trained.set(bName, { shape: b.shape, data: b.data.map((_, i) => (i % 3) - 1) });
  const folded = foldLoraOnHost(base, trained, 2);
  const wName = bName.replace(/\.lora_b$/, ".weight");
  assert.ok(folded.get(wName) !== base.get(wName), "the trained target is folded");
  assert.notDeepEqual(folded.get(wName)!.data, base.get(wName)!.data);
  const others = [...base.keys()].filter((n) => n !== wName);
  for (const n of others) assert.ok(folded.get(n) === base.get(n), `${n} untouched`);
});
