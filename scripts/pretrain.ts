/**
 * `deno task pretrain`: pretrains `local/games` (or `--model local/games2`, the same model over
 * the games tokenizer), the local backend's base model for RL, on transcripts of the
 * environments played with valid but non-strategic moves (so it knows the formats and reads
 * feedback, and RL has signal), then writes `models/local_games.safetensors` (or
 * `models/local_games2.safetensors`). `--eval-only` evaluates the weights in `models/` instead
 * (the model card's numbers).
 */

import { join } from "node:path";
import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { findLocalModel } from "../lib/local/models.ts";
import { pretrain, type PretrainStepMetrics } from "../lib/pretrain/train.ts";
import { parseMix, PRETRAIN_MIX } from "../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../lib/tokenizers/mod.ts";
import { downloadFullWeights, writeBaseWeights } from "../lib/pretrain/weights.ts";
import { evaluateEnvs, evaluationTable } from "../lib/pretrain/evaluate.ts";

/** The models this script pretrains. */
const MODELS = ["local/games", "local/games2"] as const;

/** Where the backend loads a model's base weights from. */
function weightsPath(model: string): string {
  return new URL(`../models/${model.replace("/", "_")}.safetensors`, import.meta.url).pathname;
}

const ABOUT =
  "Pretrains the local backend's base model for RL (local/games, or local/games2) on transcripts of " +
  "the environments played with valid but non-strategic moves, and writes its weights to models/; " +
  "--eval-only evaluates the weights there instead.";

const USAGE =
  `usage: deno task pretrain [--model local/games|local/games2] [--steps 180] [--batch-size 8]
                          [--learning-rate 2e-3] [--warmup-steps 10] [--datums-per-call 2] [--max-minutes 24]
                          [--seed 0] [--out models/<model>.safetensors] [--log-path DIR] [--eval-episodes 0]
                          [--mix ID=W,…,others=W] [--bisect-share 0]
       deno task pretrain --eval-only [--model local/games] [--eval-episodes 50] [--eval-envs ID,ID]
                          [--seed 0] [--eval-temperature 1]`;

const Flags = z.object({
  model: z.enum(MODELS).default("local/games"),
  steps: z.coerce.number().int().min(1).max(1_000_000).default(180),
  "batch-size": z.coerce.number().int().min(1).max(4096).default(8),
  "learning-rate": z.coerce.number().positive().max(1).default(2e-3),
  "warmup-steps": z.coerce.number().int().min(0).default(10),
  "datums-per-call": z.coerce.number().int().min(1).max(64).default(2),
  "max-minutes": z.coerce.number().positive().default(24),
  seed: z.coerce.number().int().default(0),
  out: z.string().optional(),
  "log-path": z.string().optional(),
  "eval-episodes": z.coerce.number().int().min(0).max(100_000).optional(),
  "eval-only": z.boolean().default(false),
  "eval-temperature": z.coerce.number().min(0).max(2).default(1),
  "bisect-share": z.coerce.number().min(0).max(1).default(0),
  mix: z.string().optional().transform((s, ctx) => {
    if (s === undefined) return PRETRAIN_MIX;
    try {
      return parseMix(s);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: (e as Error).message });
      return z.NEVER;
    }
  }),
  "eval-envs": z.string().optional().transform((s) => s?.split(",").map((x) => x.trim())).refine(
    (ids) => ids === undefined || ids.every((id) => PRETRAIN_MIX.some((e) => e.envId === id)),
    { message: `comma-separated ids of the mix: ${PRETRAIN_MIX.map((e) => e.envId).join(", ")}` },
  ),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    model: { type: "string" },
    steps: { type: "string" },
    "batch-size": { type: "string" },
    "learning-rate": { type: "string" },
    "warmup-steps": { type: "string" },
    "datums-per-call": { type: "string" },
    "max-minutes": { type: "string" },
    seed: { type: "string" },
    out: { type: "string" },
    "log-path": { type: "string" },
    "eval-episodes": { type: "string" },
    "eval-only": { type: "boolean" },
    "eval-temperature": { type: "string" },
    mix: { type: "string" },
    "bisect-share": { type: "string" },
    "eval-envs": { type: "string" },
  }, Flags);
  const model = flags.model;
  const basePath = weightsPath(model);
  const out = flags.out ?? basePath;
  const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer(model));
  if (Deno.env.get("TINKER_API_KEY")) {
    throw new UsageError(
      `this run trains the local backend's ${model}; unset TINKER_API_KEY to use the local backend`,
    );
  }
  const spec = findLocalModel(model)!;
  const t0 = performance.now();
  const dataDir = await Deno.makeTempDir({ prefix: "tinkerbench-pretrain-" });
  const tinker = await connectTinker({ dataDir });
  try {
    if (flags["eval-only"]) {
      await evaluate(tinker.service, { baseModel: model }, {
        episodes: flags["eval-episodes"] ?? 50,
        seed: flags.seed,
        temperature: flags["eval-temperature"],
        envIds: flags["eval-envs"],
        renderer,
      });
      return;
    }
    const logPath = flags["log-path"] ??
      join(".tinkerbench", "runs", `pretrain-${new Date().toISOString().replace(/[:.]/g, "-")}`);
    await Deno.mkdir(logPath, { recursive: true });
    console.log(
      `pretraining ${model} (${JSON.stringify(spec.config)}) on ${tinker.backend}: ` +
        `${flags.steps} steps x ${flags["batch-size"]} transcripts (mix ${
          flags.mix.map((e) => `${e.envId}=${+e.weight.toFixed(4)}`).join(",")
        }), lr ${flags["learning-rate"]}; ` +
        `metrics in ${join(logPath, "metrics.jsonl")}`,
    );
    // The backend loads the model's base weights from models/ when the file exists.
    const shipped = await Deno.stat(basePath).then(() => true, () => false);
    console.log(
      shipped
        ? `starting from ${basePath} (continued pretraining; delete it to start from scratch)`
        : `starting from the seeded random init (seed ${spec.initSeed})`,
    );
    const training = await tinker.service.createLoraTrainingClient({
      baseModel: model,
      rank: 1,
      seed: flags.seed,
      userMetadata: { "tinkerbench.trainable": "full" },
    });
    const metrics = await Deno.open(join(logPath, "metrics.jsonl"), {
      create: true,
      write: true,
      truncate: true,
    });
    const bar = new ProgressBar("pretrain", flags.steps);
    const history = await pretrain(training, {
      steps: flags.steps,
      batchSize: flags["batch-size"],
      learningRate: flags["learning-rate"],
      warmupSteps: flags["warmup-steps"],
      minLearningRateRatio: 0.1,
      seed: flags.seed,
      mix: flags.mix,
      bisectShare: flags["bisect-share"],
      datumsPerCall: flags["datums-per-call"],
      maxSeconds: flags["max-minutes"] * 60,
      renderer,
    }, async (m) => {
      await metrics.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
      bar.update(m.step, { loss: m["train/loss_per_token"], lr: m["optim/learning_rate"] });
    });
    bar.done();
    metrics.close();
    const trainSeconds = (performance.now() - t0) / 1000;

    const samplerPath = await training.saveWeightsForSampler("pretrained");
    const weights = await downloadFullWeights(tinker.service, samplerPath, spec);
    const finalLoss = meanLoss(history.slice(-10));
    if (history.length < flags.steps) {
      console.log(
        `ran ${history.length} of ${flags.steps} steps: the schedule was fitted to --max-minutes`,
      );
    }
    await writeBaseWeights(out, spec, weights, {
      steps: String(history.length),
      batch_size: String(flags["batch-size"]),
      learning_rate: String(flags["learning-rate"]),
      seed: String(flags.seed),
      mix: flags.mix.map((e) => `${e.envId}=${e.weight}`).join(","),
      bisect_share: String(flags["bisect-share"]),
      final_loss_per_action_token: finalLoss.toFixed(4),
      train_seconds: trainSeconds.toFixed(0),
    });
    console.log(
      `loss per action token: ${meanLoss(history.slice(0, 10)).toFixed(3)} (first 10 steps) → ` +
        `${finalLoss.toFixed(3)} (last 10)\nwrote ${out}\n` +
        `pretraining took ${formatDuration(trainSeconds)} (${
          (trainSeconds / history.length).toFixed(2)
        } s/step)`,
    );
    if (flags["eval-episodes"]) {
      await evaluate(tinker.service, { modelPath: samplerPath }, {
        episodes: flags["eval-episodes"],
        seed: flags.seed,
        temperature: flags["eval-temperature"],
        envIds: flags["eval-envs"],
        renderer,
      });
    }
  } finally {
    await tinker.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    console.log(`total time ${formatDuration((performance.now() - t0) / 1000)}`);
  }
}, { run: "deno task pretrain", about: ABOUT, usage: USAGE });

/** Plays each environment with the given weights and prints the model card's table. */
async function evaluate(
  service: Awaited<ReturnType<typeof connectTinker>>["service"],
  from: { baseModel: string } | { modelPath: string },
  o: {
    episodes: number;
    seed: number;
    temperature: number;
    envIds?: string[];
    renderer: ChatMLRenderer<Tokenizer>;
  },
): Promise<void> {
  const sampler = await service.createSamplingClient(from);
  const t0 = performance.now();
  const results = await evaluateEnvs(
    sampler,
    o.envIds ?? PRETRAIN_MIX.map((e) => e.envId),
    { episodes: o.episodes, seed: o.seed, temperature: o.temperature, renderer: o.renderer },
    (e) =>
      console.error(
        `${e.envId}: success ${(100 * e.successRate).toFixed(1)}%, invalid ${
          (100 * e.invalidActionRate).toFixed(1)
        }%`,
      ),
  );
  console.log(
    `\nat temperature ${o.temperature}, ${o.episodes} episodes per environment, seed ${o.seed}:\n`,
  );
  console.log(evaluationTable(results));
  console.log(`\nevaluation took ${formatDuration((performance.now() - t0) / 1000)}`);
}

function meanLoss(h: PretrainStepMetrics[]): number {
  return h.reduce((a, m) => a + m["train/loss_per_token"], 0) / Math.max(1, h.length);
}

function formatDuration(seconds: number): string {
  const m = Math.floor(seconds / 60);
  return m > 0 ? `${m} min ${Math.round(seconds % 60)} s` : `${seconds.toFixed(1)} s`;
}
