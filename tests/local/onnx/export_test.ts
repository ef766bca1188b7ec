import { assert } from "../../assert.ts";
import { CheckpointStore } from "../../../lib/local/checkpoints.ts";
import { LoraSpecSchema } from "../../../lib/local/model/config.ts";
import { initLoraParameters } from "../../../lib/local/model/params.ts";
import { findLocalModel, loadBaseWeights } from "../../../lib/local/models.ts";
import { exportPolicy } from "../../../lib/local/onnx/export.ts";
import { LocalSampler } from "../../../lib/local/sampler/mod.ts";
import { ChatMLRenderer, type Message } from "../../../lib/renderers/chatml.ts";
import { loadGamesTokenizer } from "../../../lib/tokenizers/games.ts";
import { Rng } from "../../../lib/util/random.ts";
import { sampleJob } from "../sample_job.ts";
import { installTestDeps } from "../../deps.ts";

const SPEC = findLocalModel("local/games2")!;
const LORA = LoraSpecSchema.parse({ rank: 8, seed: 4 });
const MESSAGES: Message[] = [
  { role: "system", content: "Guess the number between 1 and 10." },
  { role: "user", content: "Your guess?" },
];
const NEW_TOKENS = 24;

Deno.test("export: transformers.js's text-generation pipeline on an exported policy gives our sampler's greedy continuation", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-export-" });
  try {
    // A policy whose adapter moves the model, saved as training saves a sampler checkpoint.
    const adapter = initLoraParameters(SPEC.config, LORA);
    const rng = new Rng(9);
    for (const [n, t] of adapter) {
      if (n.endsWith("lora_b")) {
        adapter.set(n, { shape: t.shape, data: rng.normalArray(t.data.length, 0.02) });
      }
    }
    const store = new CheckpointStore(`${dir}/data`);
    const path = { runId: "run-export", kind: "sampler_weights" as const, name: "step3" };
    await store.save(path, { weights: adapter }, {
      training_run_id: "run-export",
      base_model: SPEC.name,
      lora: LORA,
      trainable: "lora",
      optimizer_step: 3,
    });
    const out = `${dir}/policy`;
    const files = await exportPolicy({
      checkpoints: store,
      path: "tinker://run-export/sampler_weights/step3",
      outDir: out,
    });
    assert.equal(files.length, 5);

    const proc = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--config",
        await installTestDeps("transformers"),
        new URL("./transformers_generate.ts", import.meta.url).pathname,
        out,
        JSON.stringify(MESSAGES),
        String(NEW_TOKENS),
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(proc.stderr);
    assert.ok(proc.success, `transformers.js failed: ${stderr}`);
    const theirs = JSON.parse(new TextDecoder().decode(proc.stdout).trim().split("\n").at(-1)!);

    // The exported chat template renders what our ChatML renderer renders.
    const tokenizer = loadGamesTokenizer();
    const prompt = new ChatMLRenderer(tokenizer).generationPrompt(MESSAGES);
    assert.deepEqual(theirs.prompt, prompt, "same prompt tokens");

    const sampler = await LocalSampler.create({
      config: SPEC.config,
      base: await loadBaseWeights(SPEC),
      adapter,
      lora: LORA,
      engine: "onnx",
    });
    const eos = tokenizer.encode("<|im_end|>");
    const [ours] = await sampler.sample([sampleJob({
      prompt: Int32Array.from(prompt),
      maxTokens: NEW_TOKENS,
      temperature: 0,
      stopTokens: eos,
    })]);
    sampler.dispose();
    const tokens = ours.sequences[0].tokens.filter((t) => !eos.includes(t));
    console.log({ theirs: theirs.continuation, ours: tokenizer.decode(tokens) });
    assert.equal(theirs.continuation, tokenizer.decode(tokens));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
