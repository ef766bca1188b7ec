// Type-checked in the scratch project (strict, nodenext): the packed declarations resolve.
import { datum, ServiceClient, type TrainingClient } from "tinkerbench-tinker";
const s: ServiceClient = await ServiceClient.connect({
  baseUrl: "http://127.0.0.1:1",
  apiKey: "k",
});
const t: TrainingClient = await s.createLoraTrainingClient({ baseModel: "m" });
const out = await t.forwardBackward(
  [datum([1], { target_tokens: [2], weights: [1] })],
  "cross_entropy",
);
const loss: number = out.metrics["loss:sum"];
console.log(loss);
