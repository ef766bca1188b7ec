/**
 * `deno task train`'s command line: its flags (every setting's path and alias flags, GEM's
 * `key=value` words, `--source`, `--restart`, `--branch-from`, `--api-key`, `--viewer-port`)
 * read into a checked config and `train`'s options; a mistake is one {@link UsageError} line.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { joinNegativeValues, UsageError } from "../cli/args.ts";
import {
  ConfigError,
  flagName,
  listConfigFields,
  loadTrainConfig,
  suggest,
  type TrainConfig,
} from "../config/mod.ts";
import { DEFAULT_MODEL, ProxySchema } from "../config/schema.ts";
import { JudgeError } from "../scoring/evidence.ts";

/** What a command line asks for. */
export interface TrainArgs {
  config: TrainConfig;
  restart: boolean;
  branchFrom?: string;
  /** `--api-key`, else `SGLANG_API_KEY`, else none. */
  apiKey: string | null;
  /** `--viewer-port`: serve the run viewer while the run trains. */
  viewerPort: number | null;
}

/** What `deno task train` does, for `--help`. */
export const TRAIN_ABOUT =
  "Trains a policy with RL (--method rl, opd or combine) on an environment, or with --source proxy on " +
  "live agent sessions, on the local backend (or the Tinker cloud with TINKER_API_KEY); rerunning a " +
  "command resumes its run.";

/** `deno task train --help`'s usage. */
export const TRAIN_USAGE =
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

/**
 * Reads `deno task train`'s arguments: the config from defaults < `--config-path` < `env` <
 * flags < overrides, and the run's options.
 *
 * @example
 * const { config } = await readTrainArgs(["--env-id", "game:GuessTheNumber-v0-easy"], {});
 */
export async function readTrainArgs(
  argv: string[],
  env: Record<string, string>,
): Promise<TrainArgs> {
  let values: Record<string, unknown>, positionals: string[];
  try {
    const options = flagOptions();
    ({ values, positionals } = parseArgs({
      args: joinNegativeValues(argv, options),
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
      env,
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

  return {
    config,
    restart: restart === true,
    branchFrom: branchFrom === undefined ? undefined : String(branchFrom),
    apiKey: (apiKeyFlag as string | undefined) ?? env.SGLANG_API_KEY ?? null,
    viewerPort,
  };
}
