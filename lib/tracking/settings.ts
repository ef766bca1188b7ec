/**
 * Whether and where a run is logged to Weights & Biases: W&B's own environment variables
 * (`WANDB_API_KEY`, `WANDB_MODE`, `WANDB_ENTITY`, `WANDB_PROJECT`, `WANDB_BASE_URL`,
 * `WANDB_NAME`, `WANDB_TAGS`, `WANDB_NOTES`, `WANDB_DIR`), parsed with zod, and the key
 * `wandb login` saved in `~/.netrc`, combined with the run's `logging` settings (the seeds' `wandb_project`,
 * `wandb_project_name`, `wandb_name`, `wandb_run_name`, `use_wandb`; docs/tracking.md).
 *
 * @module
 */

import { basename, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../config/errors.ts";
import { formatZodError } from "../util/zod.ts";
import { netrcPassword } from "./netrc.ts";

/** W&B's public API when `WANDB_BASE_URL` is not set. */
export const WANDB_CLOUD = "https://api.wandb.ai";

/** The project of runs that name none (W&B's own default is "uncategorized"). */
export const DEFAULT_WANDB_PROJECT = "tinkerbench";

const blankIsUnset = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

/** The W&B environment variables this project reads. */
export const WandbEnvSchema = z.object({
  WANDB_API_KEY: z.preprocess(blankIsUnset, z.string().min(1).optional()),
  WANDB_MODE: z.preprocess(
    (v) => (typeof v === "string" ? blankIsUnset(v.toLowerCase()) : v),
    z.enum(["online", "run", "offline", "dryrun", "disabled"]).optional(),
  ),
  WANDB_ENTITY: z.preprocess(blankIsUnset, z.string().min(1).optional()),
  WANDB_PROJECT: z.preprocess(blankIsUnset, z.string().min(1).max(128).optional()),
  WANDB_BASE_URL: z.preprocess(blankIsUnset, z.url().optional()),
  /** The run's display name, when the run names none. */
  WANDB_NAME: z.preprocess(blankIsUnset, z.string().min(1).optional()),
  /** Comma-separated tags, as W&B's SDK splits them. */
  WANDB_TAGS: z.preprocess(
    (v) =>
      typeof v === "string"
        ? v.split(",").map((t) => t.trim()).filter((t) => t !== "")
        : blankIsUnset(v),
    z.array(z.string().max(64, "a W&B tag has at most 64 characters")).optional(),
  ),
  /** The run's notes (W&B's run description). */
  WANDB_NOTES: z.preprocess(blankIsUnset, z.string().optional()),
  /** Where W&B's SDK writes its local files; here they are in the run directory instead. */
  WANDB_DIR: z.preprocess(blankIsUnset, z.string().min(1).optional()),
});

/** The parsed W&B environment. */
export type WandbEnv = z.infer<typeof WandbEnvSchema>;

/** The run's own names and switch (the config's `logging` section, or sft's flags). */
export interface RunNames {
  /** `use_wandb`: null follows `WANDB_API_KEY`; false never logs; true requires the key. */
  useWandb: boolean | null;
  /** `wandb_project` / `wandb_project_name`. */
  project: string | null;
  /** `wandb_name` / `wandb_run_name`: the W&B display name. */
  runName: string | null;
}

/** Where a run is logged, when it is. */
export interface WandbTarget {
  apiKey: string;
  /** The API root, without a trailing slash. */
  baseUrl: string;
  /** null: the key's default entity (W&B's `Viewer` query). */
  entity: string | null;
  project: string;
  displayName: string;
  /** `WANDB_TAGS`. */
  tags: string[];
  /** `WANDB_NOTES` (null: none). */
  notes: string | null;
}

/**
 * The decision: a target, or why there is none (null: W&B was never asked for). `notes` are
 * lines to print with it (a variable read but not acted on).
 */
export type WandbDecision =
  | { target: WandbTarget; notes: string[] }
  | { target: null; why: string | null };

/**
 * Decides from the environment and the run's names whether the run is logged to W&B.
 * `WANDB_MODE=offline|dryrun` is accepted and means "not uploaded" (W&B's offline runs are
 * synced later by its Python CLI, which this project does not write for). Without
 * `WANDB_API_KEY`, the key is the password of the W&B host's entry in `netrc` (the text of
 * `~/.netrc`, as `wandb login` writes it). A malformed variable, or `use_wandb: true` without a
 * key, is a {@link ConfigError}.
 */
export function decideWandb(
  env: Record<string, string | undefined>,
  names: RunNames,
  runDir: string,
  netrc: string | null = null,
): WandbDecision {
  const parsed = WandbEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(`W&B settings: ${formatZodError(parsed.error)}`);
  const e = parsed.data;
  if (names.useWandb === false) return { target: null, why: null };
  if (e.WANDB_MODE === "disabled") return { target: null, why: null };
  if (e.WANDB_MODE === "offline" || e.WANDB_MODE === "dryrun") {
    return {
      target: null,
      why: `W&B: WANDB_MODE=${e.WANDB_MODE}: not uploaded; metrics stay in the run directory`,
    };
  }
  const baseUrl = (e.WANDB_BASE_URL ?? WANDB_CLOUD).replace(/\/+$/, "");
  const apiKey = e.WANDB_API_KEY ??
    (netrc === null ? null : netrcPassword(netrc, new URL(baseUrl).hostname));
  if (!apiKey) {
    if (names.useWandb) {
      throw new ConfigError(
        "use_wandb is true but WANDB_API_KEY is not set (nor saved by `wandb login` in ~/.netrc)",
      );
    }
    return { target: null, why: null };
  }
  const notes = e.WANDB_DIR === undefined ? [] : [
    `W&B: WANDB_DIR=${e.WANDB_DIR} is not written to: this run's W&B files are in ${runDir}`,
  ];
  return {
    target: {
      apiKey,
      baseUrl,
      entity: e.WANDB_ENTITY ?? null,
      project: names.project ?? e.WANDB_PROJECT ?? DEFAULT_WANDB_PROJECT,
      displayName: names.runName ?? e.WANDB_NAME ?? basename(resolve(runDir)),
      tags: e.WANDB_TAGS ?? [],
      notes: e.WANDB_NOTES ?? null,
    },
    notes,
  };
}

/**
 * The web address of a run: W&B's cloud API (`api.wandb.ai`) is viewed at `wandb.ai`, another
 * `api.` host at the same host without `api.`, and a self-hosted server at its own address.
 */
export function wandbRunUrl(baseUrl: string, entity: string, project: string, id: string): string {
  const u = new URL(baseUrl);
  if (u.hostname.startsWith("api.")) u.hostname = u.hostname.slice(4);
  const root = u.toString().replace(/\/+$/, "");
  return `${root}/${encodeURIComponent(entity)}/${encodeURIComponent(project)}/runs/${id}`;
}
