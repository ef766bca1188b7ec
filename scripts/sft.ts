/**
 * `deno task sft`: a supervised LoRA run on the embedded local backend: it teaches
 * `local/tiny` to continue the alphabet, shows samples before and after, and writes metrics and
 * checkpoints. The smallest run that shows the whole stack (client, server, learner, sampler).
 */

import { join } from "node:path";
import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { findLocalModel, localModelNames } from "../lib/local/models.ts";
import { Rng } from "../lib/util/random.ts";
import { alphabetExamples } from "../lib/datasets/alphabet.ts";
import { supervisedDatum, trainSupervised } from "../lib/trainer/supervised.ts";
import { ByteTokenizer } from "../lib/tokenizers/byte.ts";
import { ModelInput, type SamplingClient } from "../lib/tinker/mod.ts";
import { ConfigError } from "../lib/config/errors.ts";
import { RunTracking } from "../lib/tracking/mod.ts";

const ABOUT =
  "Runs a small supervised LoRA run on the local backend: it teaches local/tiny to continue the " +
  "alphabet, shows samples before and after, and writes metrics and checkpoints.";

const USAGE = `usage: deno task sft [--model-name local/tiny] [--steps 40] [--learning-rate 3e-3]
                     [--lora-rank 16] [--batch-size 16] [--seed 0] [--log-path DIR]
                     [--wandb-project P] [--wandb-name N]
With WANDB_API_KEY set, the run is also logged to W&B (docs/tracking.md).`;

const Flags = z.object({
  "model-name": z.string().default("local/tiny").refine((m) => findLocalModel(m) !== undefined, {
    message: `this run trains the local byte-level models: ${localModelNames().join(", ")}`,
  }),
  steps: z.coerce.number().int().min(1).max(100_000).default(40),
  "learning-rate": z.coerce.number().positive().max(1).default(3e-3),
  "lora-rank": z.coerce.number().int().min(1).max(1024).default(16),
  "batch-size": z.coerce.number().int().min(1).max(4096).default(16),
  seed: z.coerce.number().int().default(0),
  "log-path": z.string().optional(),
  "wandb-project": z.string().min(1).optional(),
  "wandb-name": z.string().min(1).optional(),
});

const PROMPTS = ["abc", "klm", "uvw"];

async function show(label: string, sampler: SamplingClient, tok: ByteTokenizer): Promise<void> {
  const lines = await Promise.all(PROMPTS.map(async (p) => {
    const res = await sampler.sample({
      prompt: ModelInput.fromInts(tok.encode(p)),
      samplingParams: { maxTokens: 7, temperature: 0, stop: "\n" },
    });
    return `${p} → ${JSON.stringify(tok.decode(res.sequences[0].tokens))}`;
  }));
  console.log(`${label}: ${lines.join("   ")}`);
}

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    "model-name": { type: "string" },
    steps: { type: "string" },
    "learning-rate": { type: "string" },
    "lora-rank": { type: "string" },
    "batch-size": { type: "string" },
    seed: { type: "string" },
    "log-path": { type: "string" },
    "wandb-project": { type: "string" },
    "wandb-name": { type: "string" },
  }, Flags);
  if (Deno.env.get("TINKER_API_KEY")) {
    throw new UsageError(
      "this run trains a local byte-level model; unset TINKER_API_KEY to use the local backend",
    );
  }
  const logPath = flags["log-path"] ??
    join(".tinkerbench", "runs", `supervised-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  await Deno.mkdir(logPath, { recursive: true });
  let tracking: RunTracking;
  try {
    const config = flags;
    tracking = await RunTracking.open({
      runDir: logPath,
      config: { method: "sft", ...config },
      names: {
        useWandb: null,
        project: flags["wandb-project"] ?? null,
        runName: flags["wandb-name"] ?? null,
      },
    });
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }

  const tinker = await connectTinker();
  console.log(
    `backend: ${tinker.backend} (${tinker.url}); model ${flags["model-name"]}; logs in ${logPath}`,
  );
  try {
    const tok = new ByteTokenizer();
    const training = await tinker.service.createLoraTrainingClient({
      baseModel: flags["model-name"],
      rank: flags["lora-rank"],
      seed: flags.seed,
    });
    await show("before", await training.saveWeightsAndGetSamplingClient(), tok);

    const rng = new Rng(flags.seed);
    const bar = new ProgressBar("train", flags.steps);
    const metricsFile = await Deno.open(join(logPath, "metrics.jsonl"), {
      create: true,
      write: true,
      truncate: true,
    });
    // metrics.jsonl starts empty: so does W&B's history of this directory's run.
    tracking.started();
    const history = await trainSupervised({
      training,
      steps: flags.steps,
      batch: () => ({
        calls: [alphabetExamples(rng, flags["batch-size"]).map((ex) => supervisedDatum(tok, ex))],
        adam: { learning_rate: flags["learning-rate"] },
      }),
      onStep: async (m) => {
        await metricsFile.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
        await tracking.step(m);
        bar.update(m.step, { loss: m["train/loss_per_token"] });
      },
    });
    bar.done();
    metricsFile.close();

    const state = await training.saveState("final");
    const samplerPath = await training.saveWeightsForSampler("final");
    await show(
      "after ",
      await tinker.service.createSamplingClient({ modelPath: samplerPath }),
      tok,
    );
    const first = history[0]["train/loss_per_token"],
      last = history.at(-1)!["train/loss_per_token"];
    console.log(`loss per completion token: ${first.toFixed(3)} → ${last.toFixed(3)}`);
    console.log(
      `checkpoint: ${state}\nsampler weights: ${samplerPath}\nmetrics: ${
        join(logPath, "metrics.jsonl")
      }`,
    );
    await tracking.finish({ exitCode: 0 });
  } catch (e) {
    await tracking.finish({ exitCode: 1, timeoutMs: 10_000 });
    throw e;
  } finally {
    await tinker.close();
  }
}, { run: "deno task sft", about: ABOUT, usage: USAGE });
