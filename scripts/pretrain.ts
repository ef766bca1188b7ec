/**
 * `deno task pretrain`: pretrains `local/games` (or `--model local/games2`, the same model over
 * the games tokenizer, or `--model local/tools`, which also calls tools), the local backend's
 * base models for RL, on transcripts of the environments played with valid but non-strategic
 * moves (so it knows the formats and reads feedback, and RL has signal), then writes
 * `models/<model>.safetensors`. `--init-from` starts a model that has no weights yet from
 * another's (`local/tools` from `local/games2`); `--save-every` writes the weights during the
 * run too, so a run cut short still leaves them. `--eval-only` evaluates the weights in
 * `models/` instead (the model card's numbers).
 */

import { join } from "node:path";
import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { findLocalModel } from "../lib/local/models.ts";
import { pretrain } from "../lib/pretrain/train.ts";
import type { SupervisedStepMetrics } from "../lib/trainer/supervised.ts";
import {
  HINT_PRETRAIN_MIX,
  type MixEntry,
  parseMix,
  PRETRAIN_MIX,
  TOOLS_PRETRAIN_MIX,
} from "../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../lib/tokenizers/mod.ts";
import {
  downloadFullWeights,
  extendVocabulary,
  writeBaseWeights,
} from "../lib/pretrain/weights.ts";
import { loadBaseWeights } from "../lib/local/models.ts";
import { evaluateEnvs, evaluationTable } from "../lib/pretrain/evaluate.ts";
import { evaluateToolEnv, toolEvaluationTable } from "../lib/pretrain/evaluate_tools.ts";
import { isToolEnvId } from "../lib/pretrain/tool_transcripts.ts";

/** The models this script pretrains. */
const MODELS = ["local/games", "local/games2", "local/hint", "local/tools", "local/long"] as const;

/** Each model's default pretraining mix. */
function defaultMix(model: string): readonly MixEntry[] {
  if (model === "local/hint") return HINT_PRETRAIN_MIX;
  return model === "local/tools" || model === "local/long" ? TOOLS_PRETRAIN_MIX : PRETRAIN_MIX;
}

/** Where the backend loads a model's base weights from. */
function weightsPath(model: string): string {
  return new URL(`../models/${model.replace("/", "_")}.safetensors`, import.meta.url).pathname;
}

const ABOUT =
  "Pretrains the local backend's base model for RL (local/games, or local/games2) on transcripts of " +
  "the environments played with valid but non-strategic moves, and writes its weights to models/; " +
  "--eval-only evaluates the weights there instead.";

const USAGE =
  `usage: deno task pretrain [--model local/games|local/games2|local/hint|local/tools|local/long] [--steps 180] [--batch-size 8]
                          [--learning-rate 2e-3] [--warmup-steps 10] [--datums-per-call 2] [--max-minutes 24]
                          [--seed 0] [--out models/<model>.safetensors] [--log-path DIR] [--eval-episodes 0]
                          [--mix ID=W,…,others=W] [--bisect-share 0] [--mistake-share 0] [--init-from local/games2] [--save-every 0]
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
  "mistake-share": z.coerce.number().min(0).max(0.9).default(0),
  mix: z.string().optional(),
  "eval-envs": z.string().optional().transform((s) => s?.split(",").map((x) => x.trim())),
  "init-from": z.enum(MODELS).optional(),
  "save-every": z.coerce.number().int().min(0).default(0),
}).transform((f, ctx) => {
  // The mix and the evaluated ids are the model's: parsed once the model is known.
  const base = defaultMix(f.model);
  let mix = base;
  try {
    if (f.mix !== undefined) mix = parseMix(f.mix, base);
  } catch (e) {
    ctx.addIssue({ code: "custom", path: ["mix"], message: (e as Error).message });
    return z.NEVER;
  }
  if (f["eval-envs"]?.some((id) => !base.some((e) => e.envId === id))) {
    ctx.addIssue({
      code: "custom",
      path: ["eval-envs"],
      message: `comma-separated ids of the mix: ${base.map((e) => e.envId).join(", ")}`,
    });
    return z.NEVER;
  }
  return { ...f, mix };
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
    "mistake-share": { type: "string" },
    "eval-envs": { type: "string" },
    "init-from": { type: "string" },
    "save-every": { type: "string" },
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
        envIds: flags["eval-envs"] ?? defaultMix(model).map((e) => e.envId),
        renderer,
        contextLength: spec.config.maxSeqLen,
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
    let shipped = await Deno.stat(basePath).then(() => true, () => false);
    if (!shipped && flags["init-from"]) {
      const from = findLocalModel(flags["init-from"])!;
      const start = extendVocabulary(from, await loadBaseWeights(from), spec);
      await writeBaseWeights(basePath, spec, start, { init_from: from.name });
      // extendVocabulary keeps every tensor the target has: a rotary target has no position table.
      const dropped = from.config.positions === "learned" && spec.config.positions === "rope"
        ? "; position table dropped: rotary positions"
        : "";
      console.log(`wrote ${basePath} from ${from.name}'s weights (vocabulary extended${dropped})`);
      shipped = true;
    }
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
    const meta = (steps: number) => ({
      steps: String(steps),
      batch_size: String(flags["batch-size"]),
      learning_rate: String(flags["learning-rate"]),
      seed: String(flags.seed),
      mix: flags.mix.map((e) => `${e.envId}=${e.weight}`).join(","),
      bisect_share: String(flags["bisect-share"]),
      mistake_share: String(flags["mistake-share"]),
      ...(flags["init-from"] ? { init_from: flags["init-from"] } : {}),
    });
    const history = await pretrain(training, {
      steps: flags.steps,
      batchSize: flags["batch-size"],
      learningRate: flags["learning-rate"],
      warmupSteps: flags["warmup-steps"],
      minLearningRateRatio: 0.1,
      seed: flags.seed,
      mix: flags.mix,
      bisectShare: flags["bisect-share"],
      mistakeShare: flags["mistake-share"],
      datumsPerCall: flags["datums-per-call"],
      maxSeconds: flags["max-minutes"] * 60,
      renderer,
    }, async (m) => {
      await metrics.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
      bar.update(m.step, { loss: m["train/loss_per_token"], lr: m["optim/lr"] });
      if (flags["save-every"] && m.step % flags["save-every"] === 0) {
        // A checkpoint in place of the final file: a run cut short still ships its weights.
        const path = await training.saveWeightsForSampler(`step-${m.step}`);
        const w = await downloadFullWeights(tinker.service, path, spec);
        await writeBaseWeights(out, spec, w, { ...meta(m.step), checkpoint: "true" });
      }
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
      ...meta(history.length),
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
        contextLength: spec.config.maxSeqLen,
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
    contextLength: number;
  },
): Promise<void> {
  const sampler = await service.createSamplingClient(from);
  const t0 = performance.now();
  const ids = o.envIds ?? PRETRAIN_MIX.map((e) => e.envId);
  const opts = {
    episodes: o.episodes,
    seed: o.seed,
    temperature: o.temperature,
    renderer: o.renderer,
    contextLength: o.contextLength,
  };
  const report = (e: { envId: string; successRate: number }, rate: string) =>
    console.error(`${e.envId}: success ${(100 * e.successRate).toFixed(1)}%, ${rate}`);
  const games = await evaluateEnvs(
    sampler,
    ids.filter((id) => !isToolEnvId(id)),
    opts,
    (e) => report(e, `invalid ${(100 * e.invalidActionRate).toFixed(1)}%`),
  );
  const tools = [];
  for (const id of ids.filter(isToolEnvId)) {
    const e = await evaluateToolEnv(sampler, id, opts);
    report(e, `valid calls ${(100 * e.validCallRate).toFixed(1)}%`);
    tools.push(e);
  }
  console.log(
    `\nat temperature ${o.temperature}, ${o.episodes} episodes per environment, seed ${o.seed}:\n`,
  );
  if (games.length) console.log(evaluationTable(games));
  if (tools.length) console.log(`${games.length ? "\n" : ""}${toolEvaluationTable(tools)}`);
  console.log(`\nevaluation took ${formatDuration((performance.now() - t0) / 1000)}`);
}

function meanLoss(h: SupervisedStepMetrics[]): number {
  return h.reduce((a, m) => a + m["train/loss_per_token"], 0) / Math.max(1, h.length);
}

function formatDuration(seconds: number): string {
  const m = Math.floor(seconds / 60);
  return m > 0 ? `${m} min ${Math.round(seconds % 60)} s` : `${seconds.toFixed(1)} s`;
}
