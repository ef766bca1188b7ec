/**
 * `deno task train`: RL on an environment with `--method rl | opd | combine`, on the embedded
 * local backend (or the Tinker cloud with TINKER_API_KEY). Settings come from defaults < a
 * YAML/JSON file (`--config-path`) < environment variables < flags < `--overrides a.b=c`.
 * Rerunning a command resumes its run directory from the last checkpoint; Ctrl-C saves and exits.
 */

import { parseArgs } from "node:util";
import { runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import {
  ConfigError,
  loadTrainConfig,
  type TrainConfig,
  TrainConfigSchema,
} from "../lib/config/mod.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { defaultLogDir, trainRL } from "../lib/trainer/rl.ts";
import { writeRunReport } from "../lib/trainer/report.ts";
import { JudgeError } from "../lib/scoring/evidence.ts";

const KEYS = Object.keys(TrainConfigSchema.shape).filter((k) => k !== "advantages");
const flag = (k: string) => k.replaceAll("_", "-");

const USAGE =
  `usage: deno task train [--method rl|opd|combine] [--env-id game:GuessTheNumber-v0-easy]
         [--model-name local/games] [--max-steps N] [--batch-size N] [--group-size N]
         [--learning-rate X] [--config-path run.yaml] [--overrides advantages.mode=group_zscore ...]
settings (each as --flag VALUE, also TINKERBENCH_<NAME> in the environment):
  ${KEYS.map(flag).join(", ")}
advantages: --overrides advantages.<mode|constantGroups|rewardReduction|...>=VALUE
GEM's form works too: deno task train env_id=game:GuessTheNumber-v0-easy gamma=0.9 use_rebn=true
rerun the same command to resume; Ctrl-C saves a checkpoint and exits`;

await runCli(async () => {
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean }> = {
    "config-path": { type: "string" },
    overrides: { type: "string", multiple: true },
    help: { type: "boolean" },
  };
  for (const k of KEYS) options[flag(k)] = { type: k === "eval_mode" ? "boolean" : "string" };
  let values: Record<string, unknown>, positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: Deno.args,
      options,
      strict: true,
      allowPositionals: true,
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // GEM's command lines are `key=value` words (chz): they are overrides, applied last.
  const bad = positionals.find((p) => !p.includes("="));
  if (bad) {
    throw new UsageError(
      `unexpected argument ${JSON.stringify(bad)}: settings are --flag VALUE or key=value`,
    );
  }
  if (values.help) return console.log(USAGE);
  const { "config-path": configPath, overrides, help: _, ...flags } = values;

  let config: TrainConfig;
  try {
    config = await loadTrainConfig({
      file: configPath ? { path: String(configPath) } : undefined,
      env: Deno.env.toObject(),
      flags,
      overrides: [...((overrides as string[] | undefined) ?? []), ...positionals],
    });
  } catch (e) {
    if (e instanceof ConfigError || e instanceof JudgeError) throw new UsageError(e.message);
    throw e;
  }
  const logDir = config.log_path ?? defaultLogDir(config);

  const abort = new AbortController();
  const onSigint = () => {
    if (abort.signal.aborted) Deno.exit(130); // a second Ctrl-C: stop now
    console.error(
      "\ninterrupt: finishing this step, then saving a checkpoint (Ctrl-C again to quit)",
    );
    abort.abort();
  };
  Deno.addSignalListener("SIGINT", onSigint);

  const tinker = await connectTinker();
  console.log(
    `backend: ${tinker.backend} (${tinker.url}); ${config.method} on ${config.env_id} with ` +
      `${config.model_name}; run directory ${logDir}`,
  );
  let bar: ProgressBar | undefined;
  try {
    await runTraining();
  } catch (e) {
    // A bad env id or model is found once the run starts: still a one-line user error.
    if (e instanceof ConfigError || e instanceof JudgeError) throw new UsageError(e.message);
    throw e;
  } finally {
    Deno.removeSignalListener("SIGINT", onSigint);
    await tinker.close();
  }

  async function runTraining() {
    const result = await trainRL({
      config,
      service: tinker.service,
      logDir,
      signal: abort.signal,
      onStart: ({ startStep, resumedFrom }) => {
        if (resumedFrom) {
          console.log(`resuming after step ${startStep} from ${resumedFrom.state_path}`);
        }
        if (startStep >= config.max_steps) {
          console.log(
            `this run is complete (${startStep} steps); use another --log-path to start over`,
          );
        }
        bar = new ProgressBar("train", config.max_steps);
        bar.update(startStep);
      },
      onStep: (m) =>
        bar?.update(m.step, {
          reward: m["env/all/reward/total"],
          success: m["env/all/success"],
          ...(m["train/loss:sum"] === undefined ? {} : { loss: m["train/loss:sum"] }),
        }),
    });
    bar?.done();
    const report = await writeRunReport(logDir);
    const last = result.history.at(-1);
    if (last) {
      console.log(
        `step ${last.step}: reward ${last["env/all/reward/total"].toFixed(3)}, success ` +
          `${last["env/all/success"].toFixed(3)}`,
      );
    }
    if (result.interrupted) console.log(`interrupted after step ${result.steps}; rerun to resume`);
    if (result.checkpoint) console.log(`checkpoint: ${result.checkpoint.state_path}`);
    console.log(`metrics: ${logDir}/metrics.jsonl\nreport: ${report}`);
  }
}, USAGE);
