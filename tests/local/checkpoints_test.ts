import { assert, assertClose } from "../assert.ts";
import { CheckpointStore } from "../../lib/local/checkpoints.ts";
import {
  formatTinkerPath,
  InvalidTinkerPathError,
  parseTinkerPath,
} from "../../lib/protocol/paths.ts";
import { UserInputError } from "../../lib/local/errors.ts";
import { LoraSpecSchema } from "../../lib/local/model/config.ts";
import { hostTensor } from "../../lib/local/tensors.ts";

const lora = LoraSpecSchema.parse({ rank: 4 });
const meta = {
  training_run_id: "s1:train:0",
  base_model: "local/tiny",
  lora,
  trainable: "lora" as const,
  optimizer_step: 3,
};
const weights = new Map([["blocks.0.attn.q.lora_a", hostTensor([2], Float32Array.from([1, 2]))]]);
const isStatus = (status: number) => (e: unknown) =>
  e instanceof UserInputError && e.status === status;

async function withStore(fn: (s: CheckpointStore, dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  try {
    await fn(new CheckpointStore(dir), dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("tinker paths: parse, format, and clear errors", () => {
  const p = parseTinkerPath("tinker://abc:train:0/weights/ckpt-1");
  assert.deepEqual(p, { runId: "abc:train:0", kind: "weights", name: "ckpt-1" });
  assert.equal(formatTinkerPath(p), "tinker://abc:train:0/weights/ckpt-1");
  for (
    const bad of [
      "tinker://a/b",
      "http://a/weights/x",
      "tinker://a/models/x",
      "tinker://a/weights/x y",
    ]
  ) {
    assert.throws(() => parseTinkerPath(bad), InvalidTinkerPathError, bad);
  }
  assert.throws(() => parseTinkerPath("tinker://../weights/x"), InvalidTinkerPathError);
});

Deno.test("checkpoints: save, load with optimizer, list, delete", async () => {
  await withStore(async (store) => {
    const path = { runId: "s1:train:0", kind: "weights" as const, name: "ckpt-1" };
    const optimizer = {
      tensors: new Map([["m", hostTensor([1], Float32Array.from([0.5]))]]),
      step: 3,
    };
    const saved = await store.save(path, { weights, optimizer }, meta);
    assert.equal(saved.tinker_path, "tinker://s1:train:0/weights/ckpt-1");
    assert.equal(saved.checkpoint_type, "training");
    assert.ok(saved.size_bytes > 0);
    const { tensors } = await store.load(path, { optimizer: true });
    assertClose(tensors.weights.get("blocks.0.attn.q.lora_a")!.data, [1, 2]);
    assert.equal(tensors.optimizer?.step, 3);
    assert.equal((await store.list("s1:train:0")).length, 1);
    await store.delete(path);
    assert.equal((await store.list("s1:train:0")).length, 0);
    await assert.rejects(() => store.delete(path), isStatus(404));
  });
});

Deno.test("checkpoints: existing name is a 409 unless overwrite", async () => {
  await withStore(async (store) => {
    const path = { runId: "r", kind: "sampler_weights" as const, name: "s" };
    await store.save(path, { weights }, meta);
    await assert.rejects(() => store.save(path, { weights }, meta), isStatus(409));
    const again = await store.save(path, { weights }, { ...meta, optimizer_step: 9 }, {
      overwrite: true,
    });
    assert.equal((await store.meta(path)).optimizer_step, 9);
    assert.equal(again.checkpoint_type, "sampler");
  });
});

Deno.test("checkpoints: TTL expires, can be changed, and rejects non-positive values", async () => {
  await withStore(async (store) => {
    const path = { runId: "r", kind: "weights" as const, name: "short" };
    await store.save(path, { weights }, meta, { ttlSeconds: 3600 });
    assert.ok((await store.meta(path)).expires_at);
    await store.setTtl(path, null);
    assert.equal((await store.meta(path)).expires_at, null);
    await assert.rejects(() => store.setTtl(path, 0), isStatus(400));
    await store.setTtl(path, 0.001);
    await new Promise((r) => setTimeout(r, 10));
    await assert.rejects(() => store.meta(path), isStatus(404));
    assert.equal((await store.list("r")).length, 0, "expired checkpoint is gone");
  });
});

Deno.test("checkpoints: publish twice is a 409; unpublish", async () => {
  await withStore(async (store) => {
    const path = { runId: "r", kind: "weights" as const, name: "p" };
    await store.save(path, { weights }, meta);
    assert.equal((await store.setPublic(path, true)).public, true);
    await assert.rejects(() => store.setPublic(path, true), isStatus(409));
    assert.equal((await store.setPublic(path, false)).public, false);
  });
});

Deno.test("checkpoints: a write that fails midway leaves no partial checkpoint", async () => {
  await withStore(async (store, dir) => {
    const path = { runId: "r", kind: "weights" as const, name: "broken" };
    await store.save(path, { weights }, meta);
    const exploding = new Map(weights);
    exploding.set("boom", {
      shape: [1],
      get data(): Float32Array {
        throw new Error("disk on fire");
      },
    });
    await assert.rejects(
      () => store.save(path, { weights: exploding }, meta, { overwrite: true }),
      /disk on fire/,
    );
    const left = [...Deno.readDirSync(`${dir}/runs/r/weights`)].map((e) => e.name);
    assert.deepEqual(left, ["broken"], "no temp directory left behind");
    const { tensors } = await store.load(path);
    assertClose(
      tensors.weights.get("blocks.0.attn.q.lora_a")!.data,
      [1, 2],
      0,
      "old checkpoint intact",
    );
  });
});

Deno.test("checkpoints: an overwrite never leaves a moment with no checkpoint of that name", async () => {
  await withStore(async (store) => {
    const path = { runId: "s1:train:0", kind: "weights" as const, name: "final" };
    const big = new Map([["w", hostTensor([1 << 16], new Float32Array(1 << 16).fill(1))]]);
    await store.save(path, { weights: big }, meta);
    let stop = false, reads = 0;
    const misses: string[] = [];
    const reader = (async () => {
      while (!stop) {
        try {
          await store.load(path);
          reads++;
        } catch (e) {
          misses.push((e as Error).message);
        }
      }
    })();
    for (let i = 0; i < 12; i++) {
      const w = new Map([["w", hostTensor([1 << 16], new Float32Array(1 << 16).fill(i))]]);
      await store.save(path, { weights: w }, meta, { overwrite: true });
    }
    stop = true;
    await reader;
    assert.deepEqual(misses, []);
    assert.ok(reads > 0);
    const last = await store.load(path);
    assert.equal(last.tensors.weights.get("w")!.data[0], 11);
    assert.deepEqual((await store.list(path.runId)).map((c) => c.checkpoint_id), ["weights/final"]);
  });
});
