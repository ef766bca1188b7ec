/**
 * `deno task train`: RL on an environment with `--method rl | opd | combine`, on the embedded
 * local backend (or the Tinker cloud with TINKER_API_KEY); with `--source proxy`, on the turns
 * of live agent sessions through the OpenAI-compatible proxy (docs/proxy.md). Settings (nested by section, the
 * seeds' names as aliases: docs/config.md) come from defaults < a YAML/JSON file
 * (`--config-path`) < environment variables < flags < `--overrides a.b=c`.
 * Rerunning a command resumes its run directory from the last checkpoint; Ctrl-C saves and exits.
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
import { connectTinker } from "../lib/local/connect.ts";
import { resolve } from "node:path";
import { defaultLogDir, trainRL } from "../lib/trainer/rl.ts";
import { branchPoint, restartRun } from "../lib/trainer/run.ts";
import { trainFromProxy } from "../lib/trainer/proxy_source.ts";
import { modelInfo } from "../lib/models/mod.ts";
import { prepareTokenizer } from "../lib/tokenizers/mod.ts";
import { DEFAULT_MODEL, ProxySchema } from "../lib/config/schema.ts";
import { startViewerServer, writeRunReport } from "../lib/viewer/mod.ts";
import { heldOutLine } from "../lib/rundir/mod.ts";
import { JudgeError } from "../lib/scoring/evidence.ts";
import { make, UnknownEnvError } from "../lib/envs/registry.ts";
import { toModelSpec } from "../lib/local/backend/wire.ts";
import { ensurePortFree, openDoorWarning } from "../lib/http/mod.ts";
import { EnvModuleError, importEnvModule } from "../lib/envs/modules.ts";
import { RunFailedError } from "../lib/trainer/failures.ts";
import { redactSecrets } from "../lib/trainer/mix.ts";
import { runNames, RunTracking } from "../lib/tracking/mod.ts";

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
RUN_DIR starts a new run (its own --log-path) from that run's last checkpoint. Ctrl-C saves a
checkpoint and exits.`;

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
  // A lineup model's tokenizer files are fetched from the hub at first use (no-op when here).
  const tokenizerModel = config.policy.tokenizer ?? config.policy.model;
  if (modelInfo(tokenizerModel)) {
    await prepareTokenizer(tokenizerModel).catch((e) => {
      throw new UsageError(`policy.model: ${(e as Error).message}`);
    });
  }
  if (source === "proxy") config.proxy ??= ProxySchema.parse({});
  if (source === "env") config.proxy = null;
  if (config.proxy && Object.keys(config.environments).length > 0) {
    throw new UsageError(
      "environments: a run trains on the proxy's sessions or on environments, not both",
    );
  }
  const apiKey = (apiKeyFlag as string | undefined) ?? Deno.env.get("SGLANG_API_KEY") ?? null;
  const logDir = config.logging.log_path ?? defaultLogDir(config);
  if (restart && branchFrom) throw new UsageError("give --restart or --branch-from, not both");
  await checkBeforeStart(config);
  if (config.proxy) {
    const warning = openDoorWarning(
      config.proxy.host,
      config.proxy.port,
      apiKey !== null,
      "--api-key KEY, or --proxy-host 127.0.0.1",
    );
    if (warning) console.warn(warning);
    // Before a backend starts or a run directory is made (or restarted).
    ensurePortFree(config.proxy.host, config.proxy.port, "--proxy-port");
  }
  if (branchFrom !== undefined) {
    if (resolve(String(branchFrom)) === resolve(logDir)) {
      throw new UsageError("--branch-from: give the branch its own --log-path");
    }
    const from = await branchPoint(String(branchFrom)).catch((e) => {
      throw e instanceof ConfigError ? new UsageError(e.message) : e;
    });
    config.checkpoints.resume_from = from.state_path;
    console.log(`branching from ${branchFrom} after step ${from.step} (${from.state_path})`);
  }
  if (restart) {
    await restartRun(logDir).catch((e) => {
      throw e instanceof ConfigError ? new UsageError(e.message) : e;
    });
  }

  if (viewerPortFlag !== undefined) {
    const port = Number(viewerPortFlag);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new UsageError(`--viewer-port: a port number, got ${JSON.stringify(viewerPortFlag)}`);
    }
    try {
      const viewer = await startViewerServer({ dirs: [logDir], port });
      console.log(`run viewer: ${viewer.url} (live as steps land)`);
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
      throw new UsageError(`--viewer-port ${port} is in use; pick another with --viewer-port`);
    }
  }

  const abort = new AbortController();
  const onSigint = () => {
    if (abort.signal.aborted) Deno.exit(130); // a second Ctrl-C: stop now
    console.error(
      "\ninterrupt: finishing this step, then saving a checkpoint (Ctrl-C again to quit)",
    );
    abort.abort();
  };
  Deno.addSignalListener("SIGINT", onSigint);

  // W&B and OpenReward settings are checked before anything starts; neither blocks the run.
  let tracking: RunTracking;
  try {
    tracking = await RunTracking.open({
      runDir: logDir,
      config: redactSecrets(config),
      names: runNames(config),
      trainConfig: config,
    });
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }

  const tinker = await connectTinker();
  const envNames = Object.keys(config.environments);
  console.log(
    `backend: ${tinker.backend} (${tinker.url}); ${config.scoring.method} on ` +
      `${
        config.proxy
          ? "proxy sessions"
          : envNames.length
          ? envNames.join(" + ")
          : config.rollout.env_id
      } with ${config.policy.model}; run directory ${logDir}`,
  );
  let bar: ProgressBar | undefined, evalBar: ProgressBar | undefined;
  try {
    await runTraining();
  } catch (e) {
    await tracking.finish({ exitCode: 1, timeoutMs: 10_000 });
    // A bad env id or model is found once the run starts: still a one-line user error.
    if (e instanceof ConfigError || e instanceof JudgeError) throw new UsageError(e.message);
    if (e instanceof RunFailedError) {
      throw new RunFailedError(`${e.message} (run directory ${logDir})`);
    }
    throw e;
  } finally {
    Deno.removeSignalListener("SIGINT", onSigint);
    await tinker.close();
  }

  async function runTraining() {
    const result = await (config.proxy ? trainFromProxy : trainRL)({
      config,
      service: tinker.service,
      logDir,
      signal: abort.signal,
      apiKey,
      onListen: (url) => {
        // The address it listens on (the URL is the one a client on this machine uses).
        const listening = `${config.proxy!.host}:${new URL(url).port}`;
        console.log(
          `proxy: serving ${config.policy.model}, listening on ${listening} (clients here: ${url})`,
        );
      },
      onNotice: (line) => bar ? bar.note(line) : console.error(line),
      onStart: ({ startStep, resumedFrom, maxSteps }) => {
        // The directory is rewound to the checkpoint now: W&B's history follows it.
        tracking.started();
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
      onStep: async (m) => {
        await tracking.step(m);
        bar?.update(m.step, {
          ...(config.proxy
            ? { turns: m["proxy/turns"], reward: m["proxy/reward/mean"] }
            : { reward: m["env/all/reward/total"], success: m["env/all/success"] }),
          ...(m["train/loss:sum"] === undefined ? {} : { loss: m["train/loss:sum"] }),
        });
      },
      onEvaluation: ({ done, total }) => {
        if (!evalBar) bar?.done();
        evalBar ??= new ProgressBar("held-out (base, then trained)", total);
        evalBar.update(done);
      },
    });
    if (evalBar) evalBar.done();
    else bar?.done();
    const report = await writeRunReport(logDir);
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
    if (result.evaluationSkipped) {
      console.log(`no held-out evaluation: ${result.evaluationSkipped}`);
    }
    await tracking.finish({ exitCode: 0, evaluation: result.evaluation });
  }
}, { run: "deno task train", about: ABOUT, usage: USAGE, more: configHelp });

/**
 * What can be refused before a backend starts or a run directory is made: a model the local
 * backend does not serve (one line listing those it does), an unknown env id (after loading
 * `rollout.env_module`) with its did-you-mean.
 */
async function checkBeforeStart(config: TrainConfig): Promise<void> {
  if (!Deno.env.get("TINKER_API_KEY")) toModelSpec(config.policy.model);
  if (config.proxy || Object.keys(config.environments).length > 0) return;
  try {
    if (config.rollout.env_module) await importEnvModule(config.rollout.env_module);
    make(config.rollout.env_id);
  } catch (e) {
    if (e instanceof UnknownEnvError) throw new UsageError(`rollout.env_id: ${e.message}`);
    if (e instanceof EnvModuleError) throw new UsageError(`rollout.${e.message}`);
    throw e;
  }
}
