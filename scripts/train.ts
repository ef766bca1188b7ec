/**
 * `deno task train`: RL on an environment with `--method rl | opd | combine`, on the embedded
 * local backend (or the Tinker cloud with TINKER_API_KEY); with `--source proxy`, on the turns
 * of live agent sessions through the OpenAI-compatible proxy (docs/proxy.md). Settings (nested by section, the
 * seeds' names as aliases: docs/config.md) come from defaults < a YAML/JSON file
 * (`--config-path`) < environment variables < flags < `--overrides a.b=c`.
 * Rerunning a command resumes its run directory from the last checkpoint; Ctrl-C or SIGTERM saves
 * and exits. The run itself is `train` (lib/train/); this file is flags, then `train`, then printing.
 */

import { runCli, UsageError } from "../lib/cli/args.ts";
import { ProgressBar } from "../lib/cli/progress.ts";
import { ConfigError, configHelp } from "../lib/config/mod.ts";
import { JudgeError } from "../lib/scoring/evidence.ts";
import { RunFailedError } from "../lib/trainer/mod.ts";
import { heldOutLine } from "../lib/rundir/mod.ts";
import {
  readTrainArgs,
  stopOnSignals,
  train,
  TRAIN_ABOUT,
  TRAIN_USAGE,
  type TrainResult,
} from "../lib/train/mod.ts";
import { prepareRunReport, startViewerServer, writeRunReport } from "../lib/viewer/mod.ts";

await runCli(async () => {
  const { config, restart, branchFrom, apiKey, viewerPort } = await readTrainArgs(
    Deno.args,
    Deno.env.toObject(),
  );
  // What the lines below name, read once: the run itself reads the config in `train`.
  const method = config.scoring.method, model = config.policy.model;
  const proxyHost = config.proxy?.host ?? null;
  const stop = stopOnSignals((name) =>
    console.error(`\n${name}: stopping this step and saving a checkpoint (again to quit at once)`)
  );
  // The report written at the end (also after Ctrl-C) then finds its script built.
  prepareRunReport();
  let bar: ProgressBar | undefined, evalBar: ProgressBar | undefined;
  let logDir = "";
  const result = await train(config, {
    signal: stop.signal,
    restart,
    branchFrom,
    apiKey,
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
        `${backend}${method} on ${info.plays} with ${model}; run directory ${info.logDir}`,
      );
    },
    onListen: (url) => {
      // The address it listens on (the URL is the one a client on this machine uses).
      const listening = `${proxyHost}:${new URL(url).port}`;
      console.log(`proxy: serving ${model}, listening on ${listening} (clients here: ${url})`);
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
      bar = new ProgressBar("train", maxSteps, { from: startStep });
      bar.update(startStep);
    },
    onStep: (m) =>
      bar?.update(m.step, {
        ...(proxyHost !== null
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
  printResult(proxyHost !== null, result, await writeRunReport(result.logDir));
}, { run: "deno task train", about: TRAIN_ABOUT, usage: TRAIN_USAGE, more: configHelp });

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
function printResult(proxy: boolean, result: TrainResult, report: string): void {
  const { logDir } = result;
  const last = result.history.at(-1);
  if (last && proxy) {
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
  // No step trained since the start: the checkpoint (if any) is the one the run started from.
  if (result.interrupted && result.checkpoint === result.resumedFrom) {
    console.log("no step trained since the start, so no new checkpoint (nothing to save)");
  }
  if (result.checkpoint) console.log(`checkpoint: ${result.checkpoint.state_path}`);
  console.log(`metrics: ${logDir}/metrics.jsonl\nreport: ${report}`);
  if (result.evaluation) console.log(heldOutLine(result.evaluation));
  if (result.evaluationSkipped) console.log(`no held-out evaluation: ${result.evaluationSkipped}`);
}
