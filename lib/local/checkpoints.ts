/**
 * Checkpoints of the local backend, on disk under a data directory:
 *
 * ```
 * <dataDir>/runs/<run_id>/run.json
 * <dataDir>/runs/<run_id>/weights/<name>/{checkpoint.json, adapter.safetensors, optimizer.safetensors}
 * <dataDir>/runs/<run_id>/sampler_weights/<name>/{checkpoint.json, adapter.safetensors}
 * ```
 *
 * `weights/` holds what `save_state` writes (weights and optimizer state, to resume training);
 * `sampler_weights/` what `save_weights_for_sampler` writes. A checkpoint directory is written
 * under a temporary name and renamed into place, so a crash never leaves a half checkpoint.
 *
 * @module
 */

import { join } from "node:path";
import { UserInputError } from "./errors.ts";
import {
  checkCheckpointName,
  checkRunId,
  formatTinkerPath,
  type TinkerPath,
} from "../protocol/paths.ts";
import type { LoraSpec } from "./model/config.ts";
import type { NamedTensors } from "./tensors.ts";
import { readSafetensors, writeSafetensors } from "./safetensors.ts";
import { createTar } from "./tar.ts";

/** A checkpoint as the Tinker REST API lists it. */
export interface CheckpointInfo {
  /** Its name within the run (`weights/step10`, `sampler_weights/final`). */
  checkpoint_id: string;
  /** `training` (`weights/`: resumable, with optimizer state) or `sampler` (`sampler_weights/`). */
  checkpoint_type: "training" | "sampler";
  /** When it was saved (ISO 8601). */
  time: string;
  /** Its `tinker://<run>/<kind>/<name>` path. */
  tinker_path: string;
  /** Bytes on disk. */
  size_bytes: number;
  /** Whether it is published (always false here). */
  public: boolean;
  /** When it expires (null: never). */
  expires_at: string | null;
}

/** What a checkpoint's `checkpoint.json` holds: the listing plus what loading it needs. */
export interface CheckpointMeta extends CheckpointInfo {
  /** The run it belongs to. */
  training_run_id: string;
  /** The base model it was trained from. */
  base_model: string;
  /** The LoRA adapter's shape. */
  lora: LoraSpec;
  /** "full" when the weights are a whole base model rather than a LoRA adapter. */
  trainable: "lora" | "full";
  /** Optimizer steps taken when it was saved. */
  optimizer_step: number;
}

/** A training run as the Tinker REST API lists it. */
export interface RunInfo {
  /** The run's id. */
  training_run_id: string;
  /** The base model it trains. */
  base_model: string;
  /** Who created it. */
  model_owner: string;
  /** Whether it trains a LoRA adapter. */
  is_lora: boolean;
  /** Whether its record could not be read whole. */
  corrupted: boolean;
  /** The adapter's rank. */
  lora_rank: number;
  /** When it was last used (ISO 8601). */
  last_request_time: string;
  /** The metadata the client created it with. */
  user_metadata: Record<string, string> | null;
  /** Local extras: the full LoRA spec, for weights_info and resuming. */
  lora: LoraSpec;
  /** When it was created (ISO 8601). */
  created_at: string;
}

/** Tensors of a checkpoint: the trained weights and, for `weights/`, the optimizer state. */
export interface CheckpointTensors {
  /** The trained weights by name. */
  weights: NamedTensors;
  /** Adam's moments and its step count (`weights/` checkpoints only). */
  optimizer?: { tensors: NamedTensors; step: number };
}

/** Reads and writes checkpoints and run records under one data directory. */
export class CheckpointStore {
  /** The folder the checkpoints and run records live in. */
  readonly dataDir: string;

  /** A store over `dataDir` (created when first written). */
  constructor(dataDir: string) {
    this.dataDir = dataDir;
  }

  #runDir(runId: string): string {
    checkRunId(runId);
    return join(this.dataDir, "runs", runId);
  }

  #ckptDir(p: TinkerPath): string {
    checkCheckpointName(p.name);
    return join(this.#runDir(p.runId), p.kind, p.name);
  }

  /**
   * Where a checkpoint being replaced waits while its successor is renamed into place (a
   * dotted name, so listings skip it): readers fall back to it, so an overwrite never leaves a
   * moment with no checkpoint of that name.
   */
  #replacedDir(p: TinkerPath): string {
    return join(this.#runDir(p.runId), p.kind, `.${p.name}.replaced`);
  }

  /**
   * Reads from a checkpoint's directory, or, while it is being replaced, from where the old one
   * waits: its own, then the replaced one, then its own again (by then the new one is in place),
   * so a read racing an overwrite gets the old checkpoint or the new one, never a 404.
   */
  async #readLive<T>(p: TinkerPath, read: (dir: string) => Promise<T>): Promise<T> {
    const dirs = [this.#ckptDir(p), this.#replacedDir(p), this.#ckptDir(p)];
    for (let i = 0;; i++) {
      try {
        return await read(dirs[i]);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound) || i === dirs.length - 1) throw e;
      }
    }
  }

  /** Creates or replaces a run record. */
  async saveRun(run: RunInfo): Promise<void> {
    const dir = this.#runDir(run.training_run_id);
    await Deno.mkdir(dir, { recursive: true });
    await writeJsonAtomic(join(dir, "run.json"), run);
  }

  /** A run record, or undefined. */
  async getRun(runId: string): Promise<RunInfo | undefined> {
    return await readJson<RunInfo>(join(this.#runDir(runId), "run.json"));
  }

  /** Runs, most recently used first, with the total count for pagination. */
  async listRuns(limit: number, offset: number): Promise<{ runs: RunInfo[]; total: number }> {
    const runs: RunInfo[] = [];
    for (const id of await listDir(join(this.dataDir, "runs"))) {
      const run = await readJson<RunInfo>(join(this.dataDir, "runs", id, "run.json"));
      if (run) runs.push(run);
    }
    runs.sort((a, b) => b.last_request_time.localeCompare(a.last_request_time));
    return { runs: runs.slice(offset, offset + limit), total: runs.length };
  }

  /**
   * Writes a checkpoint atomically. An existing one with the same name is a 409 unless
   * `overwrite` is set.
   */
  async save(
    path: TinkerPath,
    tensors: CheckpointTensors,
    meta: Omit<CheckpointMeta, keyof CheckpointInfo>,
    { ttlSeconds, overwrite = false }: { ttlSeconds?: number | null; overwrite?: boolean } = {},
  ): Promise<CheckpointMeta> {
    const final = this.#ckptDir(path);
    const exists = await this.#loadMeta(path) !== undefined;
    if (exists && !overwrite) {
      throw new UserInputError(
        `checkpoint ${formatTinkerPath(path)} already exists; pass overwrite to replace it`,
        409,
      );
    }
    const parent = join(this.#runDir(path.runId), path.kind);
    await Deno.mkdir(parent, { recursive: true });
    const tmp = join(parent, `.tmp-${crypto.randomUUID()}`);
    await Deno.mkdir(tmp);
    try {
      await writeSafetensors(join(tmp, "adapter.safetensors"), tensors.weights, {
        format: meta.trainable === "full" ? "tinkerbench-full" : "tinkerbench-lora",
        base_model: meta.base_model,
      });
      if (tensors.optimizer) {
        await writeSafetensors(join(tmp, "optimizer.safetensors"), tensors.optimizer.tensors, {
          step: String(tensors.optimizer.step),
        });
      }
      const now = new Date();
      const full: CheckpointMeta = {
        ...meta,
        checkpoint_id: `${path.kind}/${path.name}`,
        checkpoint_type: path.kind === "weights" ? "training" : "sampler",
        time: now.toISOString(),
        tinker_path: formatTinkerPath(path),
        size_bytes: await dirSize(tmp),
        public: false,
        expires_at: expiry(now, ttlSeconds),
      };
      await writeJsonAtomic(join(tmp, "checkpoint.json"), full);
      if (exists) {
        // The old one steps aside (readers still find it there), the new one takes its name.
        const replaced = this.#replacedDir(path);
        await this.#removeDir(replaced); // left by a crash mid-replace, if any
        await Deno.rename(final, replaced).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
        await Deno.rename(tmp, final);
        await this.#removeDir(replaced);
      } else {
        await Deno.rename(tmp, final);
      }
      return full;
    } catch (e) {
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
      throw e;
    }
  }

  /** Metadata of a checkpoint; a 404 when it does not exist or has expired. */
  async meta(path: TinkerPath): Promise<CheckpointMeta> {
    const meta = await this.#loadMeta(path);
    if (!meta) throw new UserInputError(`checkpoint ${formatTinkerPath(path)} not found`, 404);
    return meta;
  }

  /** Loads a checkpoint's tensors (the optimizer state only when asked and present). */
  async load(
    path: TinkerPath,
    { optimizer = false }: { optimizer?: boolean } = {},
  ): Promise<{ meta: CheckpointMeta; tensors: CheckpointTensors }> {
    const meta = await this.meta(path);
    // Weights and optimizer state from one directory: both old or both new.
    const { weights, opt } = await this.#readLive(path, async (dir) => ({
      weights: (await readSafetensors(join(dir, "adapter.safetensors"))).tensors,
      opt: optimizer && path.kind === "weights"
        ? await readSafetensors(join(dir, "optimizer.safetensors"))
        : null,
    }));
    if (!opt) return { meta, tensors: { weights } };
    return {
      meta,
      tensors: {
        weights,
        optimizer: { tensors: opt.tensors, step: Number(opt.metadata.step ?? 0) },
      },
    };
  }

  /** Checkpoints of one run, newest first. Expired ones are removed on the way. */
  async list(runId: string): Promise<CheckpointInfo[]> {
    const out: CheckpointInfo[] = [];
    for (const kind of ["weights", "sampler_weights"] as const) {
      for (const name of await listDir(join(this.#runDir(runId), kind))) {
        if (name.startsWith(".")) continue;
        const meta = await this.#loadMeta({ runId, kind, name });
        if (meta) out.push(toInfo(meta));
      }
    }
    return out.sort((a, b) => b.time.localeCompare(a.time));
  }

  /** Every checkpoint of every run, newest first. */
  async listAll(): Promise<CheckpointInfo[]> {
    const out: CheckpointInfo[] = [];
    for (const id of await listDir(join(this.dataDir, "runs"))) out.push(...await this.list(id));
    return out.sort((a, b) => b.time.localeCompare(a.time));
  }

  /** A checkpoint's files as a tar archive (what the archive URL serves); 404 if absent. */
  async archive(path: TinkerPath): Promise<Uint8Array> {
    await this.meta(path);
    const entries = await this.#readLive(path, async (dir) => {
      const entries = [];
      for (const name of ["checkpoint.json", "adapter.safetensors", "optimizer.safetensors"]) {
        try {
          entries.push({
            name: `${path.name}/${name}`,
            data: await Deno.readFile(join(dir, name)),
          });
        } catch (e) {
          // No optimizer state is fine; a missing checkpoint.json means the directory moved.
          if (!(e instanceof Deno.errors.NotFound) || name === "checkpoint.json") throw e;
        }
      }
      return entries;
    });
    return createTar(entries);
  }

  /** Deletes a checkpoint; a 404 when it does not exist. */
  async delete(path: TinkerPath): Promise<void> {
    await this.meta(path);
    await this.#removeDir(this.#ckptDir(path));
  }

  /** Sets (or with null, removes) a checkpoint's time to live. */
  async setTtl(path: TinkerPath, ttlSeconds: number | null): Promise<CheckpointInfo> {
    if (ttlSeconds !== null && ttlSeconds <= 0) {
      throw new UserInputError(`ttl_seconds must be positive or null, got ${ttlSeconds}`);
    }
    return await this.#update(path, (m) => ({ ...m, expires_at: expiry(new Date(), ttlSeconds) }));
  }

  /** Marks a checkpoint public or private; publishing twice is a 409, as on the service. */
  async setPublic(path: TinkerPath, isPublic: boolean): Promise<CheckpointInfo> {
    return await this.#update(path, (m) => {
      if (isPublic && m.public) {
        throw new UserInputError(`checkpoint ${m.tinker_path} is already public`, 409);
      }
      if (!isPublic && !m.public) {
        throw new UserInputError(`checkpoint ${m.tinker_path} is not public`, 409);
      }
      return { ...m, public: isPublic };
    });
  }

  async #update(
    path: TinkerPath,
    change: (m: CheckpointMeta) => CheckpointMeta,
  ): Promise<CheckpointInfo> {
    const next = change(await this.meta(path));
    await writeJsonAtomic(join(this.#ckptDir(path), "checkpoint.json"), next);
    return toInfo(next);
  }

  async #loadMeta(path: TinkerPath): Promise<CheckpointMeta | undefined> {
    let dir = this.#ckptDir(path);
    const meta = await this.#readLive(path, async (d) => {
      const text = await Deno.readTextFile(join(d, "checkpoint.json"));
      dir = d;
      return JSON.parse(text) as CheckpointMeta;
    }).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    });
    if (meta?.expires_at && Date.parse(meta.expires_at) <= Date.now()) {
      await this.#removeDir(dir);
      return undefined;
    }
    return meta;
  }

  async #removeDir(dir: string): Promise<void> {
    // Rename first so a reader never sees a half-deleted checkpoint.
    const trash = `${dir}.trash-${crypto.randomUUID()}`;
    try {
      await Deno.rename(dir, trash);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }
    await Deno.remove(trash, { recursive: true });
  }
}

function toInfo(m: CheckpointMeta): CheckpointInfo {
  const { checkpoint_id, checkpoint_type, time, tinker_path, size_bytes, expires_at } = m;
  return {
    checkpoint_id,
    checkpoint_type,
    time,
    tinker_path,
    size_bytes,
    public: m.public,
    expires_at,
  };
}

function expiry(now: Date, ttlSeconds: number | null | undefined): string | null {
  return ttlSeconds == null ? null : new Date(now.getTime() + ttlSeconds * 1000).toISOString();
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as T;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(value, null, 2));
  await Deno.rename(tmp, path);
}

async function listDir(dir: string): Promise<string[]> {
  try {
    const names: string[] = [];
    for await (const e of Deno.readDir(dir)) if (e.isDirectory) names.push(e.name);
    return names.sort();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
}

async function dirSize(dir: string): Promise<number> {
  let n = 0;
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile) n += (await Deno.stat(join(dir, e.name))).size;
  }
  return n;
}
