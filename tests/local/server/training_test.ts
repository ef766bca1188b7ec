import { assert, assertClose } from "../../assert.ts";
import { ceDatum, fwdBwd, type Harness, withServer } from "./harness.ts";

type FwdResult = {
  loss_fn_outputs: { logprobs: { data: number[] } }[];
  metrics: Record<string, number>;
};

/** A fixed permutation of 8 letters: each letter is followed by its successor under it. */
const SUCCESSOR = [5, 2, 7, 0, 3, 1, 6, 4];

/** "c=hgbd…": a random letter, "=", then a chain of successors; learnable as a bigram map. */
function successorTask(n: number, len = 8): number[][] {
  const out: number[][] = [];
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    let c = (x >> 16) % 8;
    const chain = [c];
    for (let j = 1; j < len; j++) chain.push(c = SUCCESSOR[c]);
    out.push([97 + chain[0], 61, ...chain.slice(1).map((k) => 97 + k), 10]);
  }
  return out;
}

/** Weights from the second chain letter on: the random start and "=" are not predictable. */
function answerDatum(seq: number[]) {
  return ceDatum(seq, seq.slice(1).map((_, i) => (i >= 2 ? 1 : 0)));
}

async function forward(h: Harness, modelId: string, seqId: number, data: unknown[]) {
  return await h.result(
    await h.post("forward", {
      forward_input: { data, loss_fn: "cross_entropy" },
      model_id: modelId,
      seq_id: seqId,
    }),
  ) as unknown as FwdResult;
}

Deno.test("server: a toy task is learned through the HTTP API", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel({ rank: 16 });
    const batch = successorTask(16).map(answerDatum);
    const tokens = batch.reduce(
      (n, d) => n + d.loss_fn_inputs.weights.data.filter((w) => w).length,
      0,
    );
    let seq = 1, first = 0, last = 0;
    for (let step = 0; step < 60; step++) {
      const fb = await h.post("forward_backward", fwdBwd(modelId, seq++, batch));
      const op = await h.post("optim_step", {
        adam_params: { learning_rate: 3e-3 },
        model_id: modelId,
        seq_id: seq++,
      });
      const loss = ((await h.result(fb)) as unknown as FwdResult).metrics["loss:sum"] / tokens;
      await h.result(op);
      if (step === 0) first = loss;
      last = loss;
    }
    assert.ok(first > 1.5, `starts untrained: ${first}`);
    assert.ok(last < 0.1, `mean loss per answer token fell from ${first} to ${last}`);
  });
});

Deno.test("server: save_state → load into a new model → identical outputs and optimizer", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const data = successorTask(4).map(answerDatum);
    let seq = 1;
    for (let i = 0; i < 3; i++) {
      await h.result(await h.post("forward_backward", fwdBwd(modelId, seq++, data)));
      await h.result(
        await h.post("optim_step", {
          adam_params: { learning_rate: 1e-2 },
          model_id: modelId,
          seq_id: seq++,
        }),
      );
    }
    const saved = await h.result(
      await h.post("save_weights", { model_id: modelId, path: "step3", seq_id: seq++ }),
    );
    const original = await forward(h, modelId, seq++, data);

    const info = await h.post("weights_info", { tinker_path: saved.path });
    assert.deepEqual(
      { base: info.body.base_model, rank: info.body.lora_rank, lora: info.body.is_lora },
      { base: "local/tiny", rank: 4, lora: true },
    );
    const copyId = await h.newModel({ seq: 1 });
    await h.result(
      await h.post("load_weights", {
        model_id: copyId,
        path: saved.path,
        seq_id: 1,
        optimizer: true,
      }),
    );
    const copy = await forward(h, copyId, 2, data);
    for (let i = 0; i < data.length; i++) {
      assertClose(
        copy.loss_fn_outputs[i].logprobs.data,
        original.loss_fn_outputs[i].logprobs.data,
        0,
      );
    }
    // With the optimizer restored, one more identical step keeps the two models identical.
    for (const [id, s] of [[modelId, seq], [copyId, 3]] as const) {
      await h.result(await h.post("forward_backward", fwdBwd(id, s, data)));
      await h.result(
        await h.post("optim_step", {
          adam_params: { learning_rate: 1e-2 },
          model_id: id,
          seq_id: s + 1,
        }),
      );
    }
    const a = await forward(h, modelId, seq + 2, data);
    const b = await forward(h, copyId, 5, data);
    assertClose(b.loss_fn_outputs[0].logprobs.data, a.loss_fn_outputs[0].logprobs.data, 1e-6);
  });
});

Deno.test("server: training runs and checkpoints over REST", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const c1 = await h.result(
      await h.post("save_weights", { model_id: modelId, path: "a", seq_id: 1 }),
    );
    const c2 = await h.result(
      await h.post("save_weights_for_sampler", { model_id: modelId, path: "s", seq_id: 2 }),
    );
    assert.match(String(c2.path), /\/sampler_weights\/s$/);
    const run = await h.get(`training_runs/${modelId}`);
    assert.equal(run.body.model_owner, "local");
    assert.ok(run.body.last_request_time);
    const runs = await h.get("training_runs?limit=5");
    assert.ok(
      runs.body.training_runs.some((r: { training_run_id: string }) =>
        r.training_run_id === modelId
      ),
    );
    assert.equal(runs.body.cursor.limit, 5);
    const list = await h.get(`training_runs/${modelId}/checkpoints`);
    assert.equal(list.body.checkpoints.length, 2);
    const ttl = await fetch(
      `${h.server.url}/api/v1/training_runs/${modelId}/checkpoints/weights/a/ttl`,
      {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ttl_seconds: 60 }),
      },
    );
    assert.equal(ttl.status, 204);
    const pub = await h.post(`training_runs/${modelId}/checkpoints/weights/a/publish`, {});
    assert.equal(pub.status, 204);
    assert.equal(
      (await h.post(`training_runs/${modelId}/checkpoints/weights/a/publish`, {})).status,
      409,
    );
    const all = await h.get("checkpoints");
    const a = all.body.checkpoints.find((c: { tinker_path: string }) => c.tinker_path === c1.path);
    assert.ok(a.public && a.expires_at);
    const del = await fetch(
      `${h.server.url}/api/v1/training_runs/${modelId}/checkpoints/sampler_weights/s`,
      {
        method: "DELETE",
      },
    );
    assert.equal(del.status, 204);
    assert.equal((await h.get(`training_runs/${modelId}/checkpoints`)).body.checkpoints.length, 1);
    const archive = await h.get(`training_runs/${modelId}/checkpoints/weights/a/archive`);
    assert.ok(archive.body.url && archive.body.expires, JSON.stringify(archive.body));
    const tarBytes = new Uint8Array(await (await fetch(archive.body.url)).arrayBuffer());
    const dir = await Deno.makeTempDir();
    await Deno.writeFile(`${dir}/a.tar`, tarBytes);
    const listing = await new Deno.Command("tar", { args: ["-tf", `${dir}/a.tar`] }).output();
    assert.ok(listing.success, new TextDecoder().decode(listing.stderr));
    assert.deepEqual(new TextDecoder().decode(listing.stdout).trim().split("\n").sort(), [
      "a/adapter.safetensors",
      "a/checkpoint.json",
      "a/optimizer.safetensors",
    ]);
    await Deno.remove(dir, { recursive: true });
    assert.equal((await h.get("training_runs/nope:train:0")).status, 404);
    assert.equal((await h.get("training_runs?limit=-1")).status, 400);
  });
});

Deno.test("server: fault injection fails requests at the configured rates", async () => {
  await withServer(async (h) => {
    let errors = 0, drops = 0, ok = 0;
    for (let i = 0; i < 40; i++) {
      try {
        const r = await fetch(`${h.server.url}/api/v1/healthz`);
        await r.text();
        if (r.status === 200) ok++;
        else errors++;
      } catch {
        drops++;
      }
    }
    assert.ok(errors > 0 && drops > 0 && ok > 0, `errors ${errors}, drops ${drops}, ok ${ok}`);
    const c = h.server.faults!.counts;
    assert.equal(errors, (c["500"] ?? 0) + (c["503"] ?? 0) + (c["429"] ?? 0));
  }, { faults: { seed: 1, serverError: 0.2, rateLimit: 0.1, dropBefore: 0.1, paths: "healthz$" } });
});

Deno.test("server: dropAfter processes the request and loses the response; a retry is deduped", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const body = JSON.stringify({ adam_params: {}, model_id: modelId, seq_id: 1 });
    const send = () =>
      fetch(`${h.server.url}/api/v1/optim_step`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      }).then((r) => r.json());
    await assert.rejects(send);
    h.server.faults!.config.dropAfter = 0;
    const retry = await send();
    assert.equal(retry.request_id, "2", "the retry got the first submission's future back");
    await h.result(retry);
  }, { faults: { dropAfter: 1, paths: "optim_step$" } });
});
