/**
 * Rollout upload to OpenReward, on the wire of its `openreward` Python package (0.1.112,
 * `openreward/api/rollouts/{rollout,background}.py`, `openreward/models.py`):
 *
 * - the API root is `OPENREWARD_API_URL`, else `api.` + the host of `OPENREWARD_URL` (default
 *   `https://openreward.ai`); a rollout is viewed at `<OPENREWARD_URL>/rollout/<eventId>`;
 * - `GET /v1/environments/<owner>/<env>` gives the environment's `id` (no key is sent);
 * - `POST /v1/rollouts` with the header `x-api-key` and the body `{"events": [...]}`: first the
 *   rollout's start event alone (`eventType: "rollout"`), then its messages
 *   (`eventType: "message"`, `index` 0, 1, ... in order) in batches of at most 128 events, a
 *   `rollout_update` event carrying `rollout_info` before the first message. Keys whose value is
 *   null are left out, as the package's `_strip_none` does.
 * - 5xx answers are retried 4 times with backoff 0.5 s doubling to 30 s; anything else fails.
 *
 * Uploads never hold up training: {@link RolloutUploader.add} queues; one background loop sends.
 *
 * @module
 */

import { z } from "zod";
import { formatZodError } from "../util/zod.ts";
import { ConfigError } from "../config/errors.ts";

/** OpenReward's site when `OPENREWARD_URL` is not set. */
export const OPENREWARD_WEB_URL = "https://openreward.ai";

/** The message kinds of a rollout (the package's `NormalizedType`). */
export type RolloutMessageType =
  | "system_message"
  | "user_message"
  | "assistant_message"
  | "reasoning"
  | "tool_call"
  | "tool_result";

/** One message of a rollout, before it becomes an event. */
export interface RolloutMessage {
  type: RolloutMessageType;
  content: string;
  /** The tool's name (tool_call only). */
  name?: string;
  /** Pairs a tool_call with its tool_result. */
  callId?: string;
  reward?: number;
  isFinished?: boolean;
}

/** One rollout to upload. */
export interface RolloutUpload {
  runName: string;
  rolloutName: string;
  /** `Org/Env`. */
  environment: string;
  split: string;
  step: number;
  metadata: Record<string, unknown>;
  runInfo: Record<string, unknown>;
  rolloutInfo: Record<string, unknown>;
  messages: RolloutMessage[];
}

const blankIsUnset = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

/** The variables the upload reads. */
export const OpenRewardUploadEnvSchema = z.object({
  OPENREWARD_API_KEY: z.preprocess(blankIsUnset, z.string().min(1).optional()),
  OPENREWARD_URL: z.preprocess(blankIsUnset, z.url().optional()),
  OPENREWARD_API_URL: z.preprocess(blankIsUnset, z.url().optional()),
});

/** Where uploads go: null without `OPENREWARD_API_KEY`. A malformed URL is a ConfigError. */
export function openRewardUploadTarget(
  env: Record<string, string | undefined>,
): { apiKey: string; apiUrl: string; webUrl: string } | null {
  const parsed = OpenRewardUploadEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`OpenReward settings: ${formatZodError(parsed.error)}`);
  }
  const e = parsed.data;
  if (!e.OPENREWARD_API_KEY) return null;
  const web = (e.OPENREWARD_URL ?? OPENREWARD_WEB_URL).replace(/\/+$/, "");
  const api = new URL(web);
  api.hostname = `api.${api.hostname}`;
  return {
    apiKey: e.OPENREWARD_API_KEY,
    apiUrl: (e.OPENREWARD_API_URL ?? api.toString()).replace(/\/+$/, ""),
    webUrl: web,
  };
}

/** Options of {@link RolloutUploader}. */
export interface RolloutUploaderOptions {
  apiKey: string;
  apiUrl: string;
  webUrl: string;
  warn?: (line: string) => void;
  /** First retry delay of a 5xx (default 500 ms), doubling up to 30 s; 4 retries. */
  backoffMs?: number;
}

const MAX_BATCH = 128;
const RETRIES = 4;

/** A 5xx from the rollouts API, the only failure the package retries. */
class ServerError extends Error {}

/** Uploads rollouts in the background. */
export class RolloutUploader {
  readonly #o: Required<RolloutUploaderOptions>;
  readonly #queue: RolloutUpload[] = [];
  readonly #envIds = new Map<string, Promise<string | null>>();
  #wake: (() => void) | null = null;
  #closing = false;
  #loop: Promise<void>;
  #warned = false;
  /** Rollouts sent, and rollouts given up on. */
  readonly counts = { sent: 0, failed: 0 };
  /** The web address of every rollout sent, in order. */
  readonly urls: string[] = [];

  constructor(o: RolloutUploaderOptions) {
    this.#o = { warn: (l) => console.error(l), backoffMs: 500, ...o };
    this.#loop = this.#run();
  }

  /** Queues a rollout; returns at once. */
  add(r: RolloutUpload): void {
    if (this.#closing) return;
    this.#queue.push(r);
    this.#wake?.();
  }

  /**
   * Sends what is queued, waiting at most `timeoutMs`; says in one line what could not be
   * sent (every rollout stays in the run directory's `rollouts/`).
   */
  async finish(timeoutMs = 30_000): Promise<void> {
    this.#closing = true;
    this.#wake?.();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), timeoutMs)));
    const outcome = await Promise.race([this.#loop.then(() => "done" as const), late]);
    clearTimeout(timer);
    const left = this.#queue.length;
    if (outcome === "late") this.#queue.length = 0;
    if (left + this.counts.failed > 0) {
      this.#o.warn(
        `warning: OpenReward: ${left + this.counts.failed} rollouts not uploaded ` +
          `(${this.counts.sent} were); all of them are in the run directory's rollouts/`,
      );
    }
    if (outcome === "late") await this.#loop;
  }

  async #run(): Promise<void> {
    while (true) {
      const next = this.#queue[0];
      if (!next) {
        if (this.#closing) return;
        await new Promise<void>((r) => (this.#wake = r));
        this.#wake = null;
        continue;
      }
      try {
        await this.#upload(next);
        this.counts.sent++;
      } catch (e) {
        this.counts.failed++;
        if (!this.#warned) {
          this.#warned = true;
          this.#o.warn(
            `warning: OpenReward rollout upload failed (${(e as Error).message}); ` +
              "training goes on, rollouts stay in the run directory",
          );
        }
      }
      this.#queue.shift();
    }
  }

  async #upload(r: RolloutUpload): Promise<void> {
    const eventId = crypto.randomUUID();
    const environmentId = await this.#environmentId(r.environment);
    const now = () => Date.now();
    await this.#post([stripNulls({
      eventId,
      timestamp: now(),
      runName: r.runName,
      step: r.step,
      environment: r.environment,
      environment_id: environmentId,
      rolloutName: r.rolloutName,
      split: r.split,
      metadata: r.metadata,
      run_info: r.runInfo,
      eventType: "rollout",
    })]);
    this.urls.push(`${this.#o.webUrl}/rollout/${eventId}`);
    const events: Record<string, unknown>[] = [
      stripNulls({
        eventId,
        timestamp: now(),
        rollout_info: r.rolloutInfo,
        eventType: "rollout_update",
      }),
    ];
    r.messages.forEach((m, index) =>
      events.push(stripNulls({
        eventId: crypto.randomUUID(),
        timestamp: now(),
        index,
        rolloutEventId: eventId,
        environment_id: environmentId,
        type: m.type,
        content: m.content,
        name: m.name,
        callId: m.callId,
        reward: m.reward,
        isFinished: m.isFinished ?? false,
        metadata: {},
        eventType: "message",
      }))
    );
    for (let i = 0; i < events.length; i += MAX_BATCH) {
      await this.#post(events.slice(i, i + MAX_BATCH));
    }
  }

  /** The environment's id on OpenReward (looked up once; null when unknown). */
  #environmentId(environment: string): Promise<string | null> {
    let id = this.#envIds.get(environment);
    if (!id) {
      const [owner, name] = environment.split("/", 2);
      id = fetch(`${this.#o.apiUrl}/v1/environments/${owner}/${name}`, {
        headers: { "user-agent": "tinkerbench" },
        signal: AbortSignal.timeout(10_000),
      }).then(async (res) => {
        const body = res.ok ? await res.json() : (await res.body?.cancel(), null);
        const parsed = z.object({ id: z.string() }).safeParse(body);
        return parsed.success ? parsed.data.id : null;
      }).catch(() => null);
      this.#envIds.set(environment, id);
    }
    return id;
  }

  async #post(events: Record<string, unknown>[]): Promise<void> {
    let delay = this.#o.backoffMs;
    for (let attempt = 0;; attempt++) {
      try {
        const res = await fetch(`${this.#o.apiUrl}/v1/rollouts`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-api-key": this.#o.apiKey,
            "user-agent": "tinkerbench",
          },
          body: JSON.stringify({ events }),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        if (res.status >= 500) throw new ServerError(`${res.status} ${text.slice(0, 200)}`);
        if (!res.ok) {
          throw new Error(
            `${this.#o.apiUrl}/v1/rollouts answered ${res.status} ${text.slice(0, 200)}`,
          );
        }
        return;
      } catch (e) {
        if (!(e instanceof ServerError) || attempt >= RETRIES) {
          throw new Error((e as Error).message.split("\n")[0]);
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 30_000);
      }
    }
  }
}

/** The object without its null and undefined values, nested objects included. */
function stripNulls(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(o).filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [
      k,
      v && typeof v === "object" && !Array.isArray(v)
        ? stripNulls(v as Record<string, unknown>)
        : v,
    ]),
  );
}
