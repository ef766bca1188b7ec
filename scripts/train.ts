/**
 * `deno task train`: RL on an environment with `--method rl | opd | combine`, on the embedded
 * local backend (or the Tinker cloud with TINKER_API_KEY); with `--source proxy`, on the turns
 * of live agent sessions through the OpenAI-compatible proxy (docs/proxy.md). Settings (nested by section, the
 * seeds' names as aliases: docs/config.md) come from defaults < a YAML/JSON file
 * (`--config-path`) < environment variables < flags < `--overrides a.b=c`.
 * Rerunning a command resumes its run directory from the last checkpoint; Ctrl-C or SIGTERM saves
 * and exits. The run itself is `train` (lib/train/); this file is flags, then `train`, then printing.
 */

import { parseArgs } from "node:util";
import { joinNegativeValues, runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import {
  ConfigError,
  configHelp,
  flagName,
  listConfigFields,
  loadTrainConfig,
  suggest,
  type TrainConfig,
} from "../lib/config/mod.ts";
import { DEFAULT_MODEL, ProxySchema } from "../lib/config/schema.ts";
import { JudgeError } from "../lib/scoring/evidence.ts";
import { heldOutLine, RunFailedError } from "../lib/trainer/mod.ts";
import { stopOnSignals, train, type TrainResult } from "../lib/train/mod.ts";
import { startViewerServer, writeRunReport } from "../lib/viewer/mod.ts";

const ABOUT =
  "Trains a policy with RL (--method rl, opd or combine) on an environment, or with --source proxy on " +
  "live agent sessions, on the local backend (or the Tinker cloud with TINKER_API_KEY); rerunning a " +
  "command resumes its run.";

const USAGE =
  `usage: deno task train [--method rl|opd|combine] [--env-id game:GuessTheNumber-v0-easy]
         [--model-name ${DEFAULT_MODEL}] [--max-steps N] [--batch-size N] [--group-size N]
         [--learning-rate X] [--config-path run.yaml] [--overrides rollout.group_size=8 ...]
         [--config_path tinker-config.yaml --overrides batch_size=64 learning_rate=2e-5]
         [--source env|proxy] [--api-key KEY] [--restart | --branch-from RUN_DIR]
         [--viewer-port PORT] [key=value ...] [--help]
Every setting is a --section.field flag (e.g. --rollout.group-size 8) or one of its aliases
(--group-size 8), a key of the --config-path file (YAML/JSON, nested or aliases), an environment
variable (TINKERBENCH_GROUP_SIZE, TINKERBENCH_ROLLOUT__GROUP_SIZE), or key=value (GEM's words,
also after --overrides). --help lists every setting by section; docs/config.md has examples.
--source proxy trains on live agent sessions: the proxy serves the policy on --proxy-port (30000)
and trains every --batch-size completed turns; --api-key (or SGLANG_API_KEY) guards it.
--viewer-port serves the run viewer (docs/viewer.md) on 127.0.0.1:PORT while the run trains.
Rerun the same command to resume (with other settings it is refused, but for max_steps, eval.*,
logging.* and checkpoints.save_every); --restart starts the run directory over, --branch-from
RUN_DIR starts a new run (its own --log-path) from that run's last checkpoint. Ctrl-C (or
SIGTERM) saves a checkpoint and exits within seconds.`;

/** Every path and alias flag; booleans that default to false are switches (`--eval-mode`). */
function flagOptions() {
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean }> = {
    "config-path": { type: "string" },
    // OpenReward's trainer spells it with an underscore.
    "config_path": { type: "string" },
    overrides: { type: "string", multiple: true },
    source: { type: "string" },
    "api-key": { type: "string" },
    restart: { type: "boolean" },
    "branch-from": { type: "string" },
    "viewer-port": { type: "string" },
  };
  for (const f of listConfigFields()) {
    const type = f.type === "boolean" && f.default === false ? "boolean" : "string";
    for (const flag of f.flags) options[flag.slice(2)] = { type };
  }
  return options;
}

await runCli(async () => {
  let values: Record<string, unknown>, positionals: string[];
  try {
    const options = flagOptions();
    ({ values, positionals } = parseArgs({
      args: joinNegativeValues(Deno.args, options),
      options,
      strict: true,
      allowPositionals: true,
    }));
  } catch (e) {
    const unknown = /Unknown option '--([^']+)'/.exec((e as Error).message)?.[1];
    if (!unknown) throw new UsageError((e as Error).message);
    const guess = suggest(unknown);
    throw new UsageError(
      `unknown option --${unknown}${guess ? ` (did you mean ${flagName(guess.name)}?)` : ""}`,
    );
  }
  // GEM's command lines are `key=value` words (chz): they are overrides, applied last.
  const bad = positionals.find((p) => !p.includes("="));
  if (bad) {
    throw new UsageError(
      `unexpected argument ${JSON.stringify(bad)}: settings are --flag VALUE or key=value`,
    );
  }
  const {
    "config-path": dashed,
    config_path: underscored,
    overrides,
    source,
    "api-key": apiKeyFlag,
    restart,
    "branch-from": branchFrom,
    "viewer-port": viewerPortFlag,
    ...flags
  } = values;
  if (dashed && underscored) throw new UsageError("give --config-path or --config_path, not both");
  if (restart && branchFrom) throw new UsageError("give --restart or --branch-from, not both");
  const configPath = dashed ?? underscored;
  if (source !== undefined && source !== "env" && source !== "proxy") {
    throw new UsageError(`--source: expected env or proxy, got ${JSON.stringify(source)}`);
  }

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
  if (source === "proxy") config.proxy ??= ProxySchema.parse({});
  if (source === "env") config.proxy = null;
  const viewerPort = viewerPortFlag === undefined ? null : Number(viewerPortFlag);
  if (
    viewerPort !== null && !(Number.isInteger(viewerPort) && viewerPort >= 0 && viewerPort <= 65535)
  ) {
    throw new UsageError(`--viewer-port: a port number, got ${JSON.stringify(viewerPortFlag)}`);
  }

  const stop = stopOnSignals((name) =>
    console.error(`\n${name}: stopping this step and saving a checkpoint (again to quit at once)`)
  );
  let bar: ProgressBar | undefined, evalBar: ProgressBar | undefined;
  let logDir = "";
  const result = await train(config, {
    signal: stop.signal,
    restart: restart === true,
    branchFrom: branchFrom === undefined ? undefined : String(branchFrom),
    apiKey: (apiKeyFlag as string | undefined) ?? Deno.env.get("SGLANG_API_KEY") ?? null,
    onReady: async (info) => {
      logDir = info.logDir;
      if (info.branchedFrom) {
        console.log(
          `branching from ${branchFrom} after step ${info.branchedFrom.step} (${info.branchedFrom.state_path})`,
        );
      }
      if (viewerPort !== null) await serveViewer(info.logDir, viewerPort);
      const backend = info.backend ? `backend: ${info.backend.kind} (${info.backend.url}); ` : "";
      console.log(
        `${backend}${config.scoring.method} on ${info.plays} with ${config.policy.model}; run directory ${info.logDir}`,
      );
    },
    onListen: (url) => {
      // The address it listens on (the URL is the one a client on this machine uses).
      const listening = `${config.proxy!.host}:${new URL(url).port}`;
      console.log(
        `proxy: serving ${config.policy.model}, listening on ${listening} (clients here: ${url})`,
      );
    },
    onNotice: (line) => bar ? bar.note(line) : console.error(line),
    onStart: ({ startStep, resumedFrom, maxSteps }) => {
      if (resumedFrom) {
        console.log(`resuming after step ${startStep} from ${resumedFrom.state_path}`);
      }
      if (startStep >= maxSteps) {
        console.log(
          `this run is complete (${startStep} steps); use another --log-path to start over`,
        );
      }
      bar = new ProgressBar("train", maxSteps);
      bar.update(startStep);
    },
    onStep: (m) =>
      bar?.update(m.step, {
        ...(config.proxy
          ? { turns: m["proxy/turns"], reward: m["proxy/reward/mean"] }
          : { reward: m["env/all/reward/total"], success: m["env/all/success"] }),
        ...(m["train/loss:sum"] === undefined ? {} : { loss: m["train/loss:sum"] }),
      }),
    onEvaluation: ({ done, total }) => {
      if (!evalBar) bar?.done();
      evalBar ??= new ProgressBar("held-out (base, then trained)", total);
      evalBar.update(done);
    },
  }).catch((e) => {
    // A bad setting found once the run starts is still a one-line user error.
    if (e instanceof ConfigError || e instanceof JudgeError) throw new UsageError(e.message);
    if (e instanceof RunFailedError && logDir) {
      throw new RunFailedError(`${e.message} (run directory ${logDir})`);
    }
    throw e;
  }).finally(() => stop.dispose());
  (evalBar ?? bar)?.done();
  printResult(config, result, await writeRunReport(result.logDir));
}, { run: "deno task train", about: ABOUT, usage: USAGE, more: configHelp });

/** The run viewer on 127.0.0.1:`port`, live while the run trains. */
async function serveViewer(dir: string, port: number): Promise<void> {
  try {
    const viewer = await startViewerServer({ dirs: [dir], port });
    console.log(`run viewer: ${viewer.url} (live as steps land)`);
  } catch (e) {
    if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    throw new UsageError(`--viewer-port ${port} is in use; pick another with --viewer-port`);
  }
}

/** The lines a run ends with: its last step, checkpoint, files and held-out score. */
function printResult(config: TrainConfig, result: TrainResult, report: string): void {
  const { logDir } = result;
  const last = result.history.at(-1);
  if (last && config.proxy) {
    console.log(
      `step ${last.step}: ${last["proxy/turns"]} turns, reward ` +
        `${last["proxy/reward/mean"].toFixed(3)}; records: ${logDir}/records/`,
    );
  } else if (last) {
    console.log(
      `step ${last.step}: reward ${last["env/all/reward/total"].toFixed(3)}, success ` +
        `${last["env/all/success"].toFixed(3)}`,
    );
  }
  if (result.interrupted) console.log(`interrupted after step ${result.steps}; rerun to resume`);
  if (result.checkpoint) console.log(`checkpoint: ${result.checkpoint.state_path}`);
  console.log(`metrics: ${logDir}/metrics.jsonl\nreport: ${report}`);
  if (result.evaluation) console.log(heldOutLine(result.evaluation));
  if (result.evaluationSkipped) console.log(`no held-out evaluation: ${result.evaluationSkipped}`);
}
