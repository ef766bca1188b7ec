import { assert, assertClose } from "../assert.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  readSafetensors,
  SafetensorsError,
  writeSafetensors,
} from "../../lib/local/safetensors.ts";
import { hostTensor, type NamedTensors } from "../../lib/local/tensors.ts";

const tensors: NamedTensors = new Map([
  ["a.weight", hostTensor([2, 3], Float32Array.from([1, 2, 3, 4, 5, 6]))],
  ["b", hostTensor([1], Float32Array.from([-0.5]))],
]);

Deno.test("safetensors: round-trips tensors and metadata", () => {
  const bytes = encodeSafetensors(tensors, { base_model: "local/tiny" });
  const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal(headerLen % 8, 0, "tensor data is 8-byte aligned");
  const back = decodeSafetensors(bytes);
  assert.deepEqual([...back.tensors.keys()], ["a.weight", "b"]);
  assert.deepEqual(back.tensors.get("a.weight")!.shape, [2, 3]);
  assertClose(back.tensors.get("a.weight")!.data, [1, 2, 3, 4, 5, 6]);
  assert.equal(back.metadata.base_model, "local/tiny");
});

Deno.test("safetensors: atomic file write and read", async () => {
  const dir = await Deno.makeTempDir();
  await writeSafetensors(`${dir}/w.safetensors`, tensors);
  const names = [...Deno.readDirSync(dir)].map((e) => e.name);
  assert.deepEqual(names, ["w.safetensors"], "no temp file left behind");
  const back = await readSafetensors(`${dir}/w.safetensors`);
  assertClose(back.tensors.get("b")!.data, [-0.5]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("safetensors: malformed bytes are a SafetensorsError", () => {
  assert.throws(() => decodeSafetensors(new Uint8Array(3)), SafetensorsError);
  const bytes = encodeSafetensors(tensors);
  assert.throws(() => decodeSafetensors(bytes.subarray(0, bytes.length - 4)), SafetensorsError);
  const bad = new Uint8Array(24);
  new DataView(bad.buffer).setBigUint64(0, 8n, true);
  bad.set(new TextEncoder().encode("{not json"), 8);
  assert.throws(() => decodeSafetensors(bad), SafetensorsError);
});
