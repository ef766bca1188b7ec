/**
 * A run's W&B mirror: every metrics row becomes the history line at the row's position in
 * `metrics.jsonl` (so W&B's history is the file, line for line, also across resumes), the
 * held-out evaluation and the last values become the summary, and the run is finished with the
 * process's exit code.
 *
 * Training never waits for W&B: {@link WandbRun.log} only appends to a buffer; one background
 * loop sends what is buffered, one request at a time, and retries with backoff (1 s doubling to
 * 30 s) while the server is down or slow. The first failure prints one warning line; catching
 * up prints one more. While there is nothing to send, a heartbeat goes every 30 s, so W&B does
 * not mark a run that is slow between rows (a long evaluation) crashed. The W&B run id and how many lines W&B has acknowledged are kept in
 * `wandb.json` in the run directory, so a resumed run continues the same W&B run and first
 * sends the rows an earlier process could not.
 *
 * @module
 */

import { join } from "node:path";
import { z } from "zod";
import { type FileChunk, WandbApi, WandbRequestError } from "./wandb_api.ts";
import { wandbRunUrl, type WandbTarget } from "./settings.ts";
import { RUN_FILES } from "../rundir/mod.ts";

/** The file in a run directory that names its W&B run. */
export const WANDB_STATE_FILE = "wandb.json";

/** What `wandb.json` holds. */
export const WandbStateSchema = z.object({
  id: z.string().regex(/^[a-z0-9]{8}$/),
  /** Filled once W&B created the run. */
  entity: z.string().nullable(),
  project: z.string(),
  base_url: z.string(),
  url: z.string().nullable(),
  /** History lines W&B acknowledged (lines 0 .. acked-1). */
  acked_lines: z.number().int().min(0),
  finished: z.boolean(),
  started_at: z.number(),
});

/** The contents of `wandb.json`. */
export type WandbState = z.infer<typeof WandbStateSchema>;

/** Options of {@link WandbRun.open}. */
export interface WandbRunOptions {
  target: WandbTarget;
  runDir: string;
  /** The run's configuration, shown as the W&B run's config. */
  config: Record<string, unknown>;
  /** Where warnings go (default: stderr). */
  warn?: (line: string) => void;
  /** First retry delay (default 1 s); it doubles up to `maxBackoffMs` (default 30 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Per-request timeout (default 30 s). */
  timeoutMs?: number;
  /** Quiet time after which a heartbeat is sent (default 30 s, as W&B's SDK). */
  heartbeatMs?: number;
}

const HISTORY = "wandb-history.jsonl";
const MAX_LINES_PER_REQUEST = 1000;
const SUMMARY = "wandb-summary.json";

/** Reads a run directory's `wandb.json`, or null when it has none (or an unreadable one). */
export async function readWandbState(runDir: string): Promise<WandbState | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(runDir, WANDB_STATE_FILE));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  try {
    const parsed = WandbStateSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** One run's connection to W&B. */
export class WandbRun {
  readonly #api: WandbApi;
  readonly #o: Required<Omit<WandbRunOptions, "timeoutMs">>;
  #state: WandbState;
  /**
   * Lines not yet acknowledged, starting at line `#state.acked_lines`; the next row goes to
   * line acked_lines + pending.length.
   */
  #pending: string[] = [];
  #summary: Record<string, unknown> = {};
  #summaryDirty = false;
  #created = false;
  #closing = false;
  #gaveUp: string | null = null;
  #behind = false;
  #wake: (() => void) | null = null;
  /** The background loop; it starts with the run (resumeFrom or the first row). */
  #loop: Promise<void> | null = null;
  /** Rows not kept once W&B refused for good (they are in metrics.jsonl). */
  #unsent = 0;
  #complete: { exitcode: number } | null = null;
  /** When W&B last acknowledged a request (ms since the epoch). */
  #lastAnswer = 0;
  #completed = false;
  readonly #abort = new AbortController();

  private constructor(o: WandbRunOptions, state: WandbState) {
    this.#api = new WandbApi(o.target, { timeoutMs: o.timeoutMs, signal: this.#abort.signal });
    this.#o = {
      warn: (line) => console.error(line),
      backoffMs: 1000,
      maxBackoffMs: 30_000,
      heartbeatMs: 30_000,
      ...o,
    };
    this.#state = state;
  }

  /**
   * Starts (or, with the run directory's `wandb.json`, continues) the W&B run. Nothing here
   * waits for the network: the run is created by the background loop.
   */
  static async open(o: WandbRunOptions): Promise<WandbRun> {
    const old = await readWandbState(o.runDir);
    const same = old && old.base_url === o.target.baseUrl && old.project === o.target.project &&
      (o.target.entity === null || old.entity === null || old.entity === o.target.entity);
    const state: WandbState = same ? { ...old, finished: false } : {
      id: newRunId(),
      entity: o.target.entity,
      project: o.target.project,
      base_url: o.target.baseUrl,
      url: null,
      acked_lines: 0,
      finished: false,
      started_at: Date.now() / 1000,
    };
    const run = new WandbRun(o, state);
    await run.#save();
    return run;
  }

  /** The run's web address, once W&B created it. */
  get url(): string | null {
    return this.#state.url;
  }

  /** The W&B run id (kept in `wandb.json`). */
  get id(): string {
    return this.#state.id;
  }

  /** Rows logged but not yet acknowledged by W&B. */
  get behind(): number {
    return this.#pending.length;
  }

  /**
   * Aligns the mirror with the run directory's rows (`metrics.jsonl` after a resume rewound
   * it): the next row goes to line `rows.length`, and rows W&B has not acknowledged are
   * queued again.
   */
  resumeFrom(rows: readonly Record<string, unknown>[]): void {
    const acked = Math.min(this.#state.acked_lines, rows.length);
    this.#state.acked_lines = acked;
    this.#pending = rows.slice(acked).map((r) => this.#line(r));
    for (const r of rows) this.#merge(r);
    this.#start();
    this.#kick();
  }

  /** Queues one metrics row as the next history line (`_step` is the row's `step`). */
  log<R extends { step: number }>(metrics: R): void {
    const row = metrics as { step: number } & Record<string, unknown>;
    if (this.#closing) return;
    if (this.#gaveUp) {
      // Nothing more will be sent: the row is in metrics.jsonl, so it is only counted.
      this.#unsent++;
      return;
    }
    this.#pending.push(this.#line(row));
    this.#merge(row);
    this.#start();
    this.#kick();
  }

  /** Sets summary values (e.g. the held-out evaluation), over the last logged values. */
  summary(values: Record<string, unknown>): void {
    Object.assign(this.#summary, values);
    this.#summaryDirty = true;
    this.#kick();
  }

  /**
   * Sends what is buffered and marks the run finished with `exitCode`, waiting at most
   * `timeoutMs` (default 30 s; 5 s when the server is failing already). Rows still unsent then
   * are reported in one line; they stay in `metrics.jsonl`, and rerunning the same command
   * sends them.
   */
  async finish(exitCode: number, timeoutMs = 30_000): Promise<{ sent: boolean }> {
    // A run that never started (its command failed first) has nothing on W&B to finish.
    if (!this.#loop) return { sent: true };
    this.#complete = { exitcode: exitCode };
    this.#closing = true;
    this.#kick();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // A server that is failing now gets a short last chance; a slow one the whole deadline.
    const limit = this.#behind ? Math.min(timeoutMs, 5_000) : timeoutMs;
    const deadline = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), limit)));
    const outcome = await Promise.race([this.#loop.then(() => "done" as const), deadline]);
    clearTimeout(timer);
    if (outcome === "late" || !this.#completed) {
      this.#gaveUp ??= `no answer within ${limit / 1000} s`;
      this.#abort.abort();
      this.#kick();
      await this.#loop;
      const n = this.#pending.length + this.#unsent;
      this.#o.warn(
        `warning: W&B: ${n} row${
          n === 1 ? "" : "s"
        } not sent and run not finished (${this.#gaveUp}); ` +
          `they are in ${RUN_FILES.metrics}: rerun the same command to send them`,
      );
      return { sent: false };
    }
    return { sent: true };
  }

  #start(): void {
    this.#loop ??= this.#run();
  }

  #line(row: Record<string, unknown>): string {
    const now = Date.now() / 1000;
    return JSON.stringify({
      ...row,
      _step: row.step,
      _runtime: Math.max(0, now - this.#state.started_at),
      _timestamp: now,
    });
  }

  #merge(row: Record<string, unknown>): void {
    Object.assign(this.#summary, row);
    this.#summaryDirty = true;
  }

  #kick(): void {
    this.#wake?.();
    this.#wake = null;
  }

  async #sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** The background loop: create the run, then send buffered lines until finished. */
  async #run(): Promise<void> {
    let backoff = this.#o.backoffMs;
    while (true) {
      const work = !this.#created || this.#pending.length > 0 || this.#summaryDirty ||
        (this.#complete !== null && !this.#completed);
      const quiet = Date.now() - this.#lastAnswer;
      const beat = !work && this.#created && !this.#closing && !this.#gaveUp &&
        quiet >= this.#o.heartbeatMs;
      if (!work && !beat) {
        if (this.#closing) return;
        await this.#sleep(this.#created ? this.#o.heartbeatMs - quiet : 60_000);
        continue;
      }
      if (this.#gaveUp && this.#closing) return;
      try {
        if (beat) await this.#heartbeat();
        else await this.#step();
        this.#lastAnswer = Date.now();
        if (this.#behind && this.#pending.length === 0) {
          this.#behind = false;
          this.#o.warn(`W&B: caught up (${this.#state.acked_lines} rows in ${this.#state.url})`);
        }
        backoff = this.#o.backoffMs;
      } catch (e) {
        if (this.#abort.signal.aborted) return;
        const err = e as Error;
        if (err instanceof WandbRequestError && err.permanent) {
          this.#gaveUp = err.message;
          this.#o.warn(
            `warning: W&B: giving up: ${err.message}; metrics stay in the run directory`,
          );
          // Nothing more will be sent; the buffer stays for the last line of finish().
          while (!this.#closing) await this.#sleep(60_000);
          return;
        }
        if (!this.#behind) {
          this.#behind = true;
          this.#o.warn(
            `warning: W&B is behind (${err.message}); rows are kept and retried, training goes on`,
          );
        }
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, this.#o.maxBackoffMs);
      }
    }
  }

  /** Tells W&B the run is alive (nothing else to send). */
  async #heartbeat(): Promise<void> {
    const s = this.#state;
    await this.#api.fileStream({ entity: s.entity!, project: s.project, id: s.id }, {
      complete: false,
      failed: false,
    });
  }

  /** One round trip: the run's creation, or the buffered lines and summary, or the end. */
  async #step(): Promise<void> {
    const s = this.#state;
    if (!this.#created) {
      const entity = s.entity ?? await this.#api.viewerEntity();
      const filed = await this.#api.upsertRun({
        id: s.id,
        entity,
        project: s.project,
        displayName: this.#o.target.displayName,
        ...(this.#o.target.notes === null ? {} : { description: this.#o.target.notes }),
        ...(this.#o.target.tags.length ? { tags: this.#o.target.tags } : {}),
        config: wandbConfig(this.#o.config),
      });
      s.entity = filed.entity;
      s.url = wandbRunUrl(s.base_url, filed.entity, filed.project, s.id);
      this.#created = true;
      await this.#save();
      return;
    }
    const run = { entity: s.entity!, project: s.project, id: s.id };
    if (this.#pending.length > 0 || this.#summaryDirty) {
      // Bounded requests, also after a long outage.
      const lines = this.#pending.slice(0, MAX_LINES_PER_REQUEST);
      const files: Record<string, FileChunk> = {};
      if (lines.length) files[HISTORY] = { offset: s.acked_lines, content: lines };
      const summaryText = JSON.stringify(this.#summary);
      files[SUMMARY] = { offset: 0, content: [summaryText] };
      this.#summaryDirty = false;
      try {
        await this.#api.fileStream(run, { files });
      } catch (e) {
        this.#summaryDirty = true;
        throw e;
      }
      this.#pending.splice(0, lines.length);
      s.acked_lines += lines.length;
      await this.#save();
      return;
    }
    if (this.#complete && !this.#completed) {
      await this.#api.fileStream(run, { complete: true, exitcode: this.#complete.exitcode });
      this.#completed = true;
      s.finished = true;
      await this.#save();
    }
  }

  async #save(): Promise<void> {
    const path = join(this.#o.runDir, WANDB_STATE_FILE);
    await Deno.writeTextFile(`${path}.tmp`, JSON.stringify(this.#state, null, 2) + "\n");
    await Deno.rename(`${path}.tmp`, path);
  }
}

/** W&B's config layout (as its Python SDK sends it): each top-level key as `{value: ...}`. */
export function wandbConfig(config: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, { value: v }]));
}

/** 8 characters of [a-z0-9], W&B's run id form. */
function newRunId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}
