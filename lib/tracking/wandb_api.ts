/**
 * W&B's public wire, spoken with `fetch` (docs/tracking.md says why not `@wandb/sdk`):
 * `POST <base>/graphql` with HTTP basic auth `api:<key>` (`Viewer` for the key's default entity,
 * `UpsertBucket` to create or resume a run), and
 * `POST <base>/files/<entity>/<project>/<run>/file_stream`, whose body carries file chunks
 * `{"files": {"wandb-history.jsonl": {"offset": n, "content": [line, ...]}, ...}}` (the lines
 * belong at line `offset` of the file, so a resent chunk replaces rather than duplicates) and,
 * last, `{"complete": true, "exitcode": n}`. While a run has nothing to send, the same endpoint
 * takes a heartbeat, `{"complete": false, "failed": false}` (as W&B's Python SDK sends every 30 s):
 * without one for 5 minutes W&B marks the run crashed.
 *
 * @module
 */

import { z } from "zod";
import type { WandbTarget } from "./settings.ts";

/** A request W&B did not accept; `permanent` when retrying cannot help (any 4xx but 408, 429). */
export class WandbRequestError extends Error {
  override name = "WandbRequestError";
  constructor(message: string, readonly permanent: boolean) {
    super(message);
  }
}

/** One chunk of a streamed file. */
export interface FileChunk {
  offset: number;
  content: string[];
}

const UPSERT_BUCKET = `mutation UpsertBucket(
  $id: String, $name: String, $project: String, $entity: String, $displayName: String,
  $description: String, $tags: [String!], $config: JSONString, $summaryMetrics: JSONString
) {
  upsertBucket(input: {
    id: $id, name: $name, modelName: $project, entityName: $entity, displayName: $displayName,
    description: $description, tags: $tags, config: $config, summaryMetrics: $summaryMetrics
  }) {
    bucket { id name displayName project { id name entity { id name } } }
    inserted
  }
}`;

const VIEWER = `query Viewer { viewer { id entity } }`;

const GraphqlErrors = z.array(z.object({ message: z.string() })).optional();

const ViewerResponse = z.object({
  data: z.object({ viewer: z.object({ entity: z.string().min(1) }).nullable() }).nullable(),
  errors: GraphqlErrors,
});

const UpsertResponse = z.object({
  data: z.object({
    upsertBucket: z.object({
      bucket: z.object({
        name: z.string(),
        project: z.object({ name: z.string(), entity: z.object({ name: z.string() }) }),
      }),
    }).nullable(),
  }).nullable(),
  errors: GraphqlErrors,
});

/** A client of one W&B server with one key. */
export class WandbApi {
  readonly #target: WandbTarget;
  readonly #timeoutMs: number;
  readonly #signal: AbortSignal | undefined;

  /** `signal` cancels every request in flight (when a run stops waiting for W&B). */
  constructor(target: WandbTarget, o: { timeoutMs?: number; signal?: AbortSignal } = {}) {
    this.#target = target;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
    this.#signal = o.signal;
  }

  /** The key's default entity (`query Viewer`). */
  async viewerEntity(): Promise<string> {
    const res = ViewerResponse.safeParse(await this.#graphql(VIEWER, {}));
    if (!res.success || !res.data.data?.viewer) {
      throw new WandbRequestError(
        `W&B's Viewer query gave no entity${graphqlMessage(res.data?.errors)}; set WANDB_ENTITY`,
        true,
      );
    }
    return res.data.data.viewer.entity;
  }

  /**
   * Creates the run `id`, or updates it when it exists (W&B's upsert: the same call resumes a
   * run). Returns where the server filed it.
   */
  async upsertRun(v: {
    id: string;
    entity: string;
    project: string;
    displayName?: string;
    /** W&B's run notes. */
    description?: string;
    tags?: string[];
    config?: Record<string, unknown>;
    summary?: Record<string, unknown>;
  }): Promise<{ entity: string; project: string; name: string }> {
    const body = await this.#graphql(UPSERT_BUCKET, {
      name: v.id,
      entity: v.entity,
      project: v.project,
      ...(v.displayName === undefined ? {} : { displayName: v.displayName }),
      ...(v.description === undefined ? {} : { description: v.description }),
      ...(v.tags === undefined ? {} : { tags: v.tags }),
      ...(v.config === undefined ? {} : { config: JSON.stringify(v.config) }),
      ...(v.summary === undefined ? {} : { summaryMetrics: JSON.stringify(v.summary) }),
    });
    const res = UpsertResponse.safeParse(body);
    const bucket = res.success ? res.data.data?.upsertBucket?.bucket : undefined;
    if (!bucket) {
      throw new WandbRequestError(
        `W&B did not create run ${v.id}${graphqlMessage(res.data?.errors)}`,
        false,
      );
    }
    return { entity: bucket.project.entity.name, project: bucket.project.name, name: bucket.name };
  }

  /**
   * Sends file chunks of a run (with `complete: true`, ends it; with `complete: false` and no
   * files, a heartbeat).
   */
  async fileStream(
    run: { entity: string; project: string; id: string },
    body: {
      files?: Record<string, FileChunk>;
      complete?: boolean;
      failed?: boolean;
      exitcode?: number;
    },
  ): Promise<void> {
    const path = [run.entity, run.project, run.id].map(encodeURIComponent).join("/");
    await this.#post(`/files/${path}/file_stream`, body);
  }

  async #graphql(query: string, variables: Record<string, unknown>): Promise<unknown> {
    return await this.#post("/graphql", { query, variables });
  }

  async #post(path: string, body: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(this.#target.baseUrl + path, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Basic ${btoa(`api:${this.#target.apiKey}`)}`,
          "user-agent": "tinkerbench",
        },
        body: JSON.stringify(body),
        signal: this.#signal
          ? AbortSignal.any([this.#signal, AbortSignal.timeout(this.#timeoutMs)])
          : AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const why = (e as Error).name === "TimeoutError"
        ? `no answer in ${this.#timeoutMs / 1000} s`
        : (e as Error).message.split("\n")[0];
      throw new WandbRequestError(`${this.#target.baseUrl}: ${why}`, false);
    }
    const text = await res.text();
    if (!res.ok) {
      // A client error (a bad key, a run or project that is not there, a malformed request)
      // stays wrong however often it is sent; a timeout (408), rate limit (429) and 5xx pass.
      const permanent = res.status >= 400 && res.status < 500 && ![408, 429].includes(res.status);
      throw new WandbRequestError(
        `${this.#target.baseUrl}${path} answered ${res.status}${
          res.status === 401 ? " (is WANDB_API_KEY right?)" : ""
        }`,
        permanent,
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new WandbRequestError(`${this.#target.baseUrl}${path} answered non-JSON`, false);
    }
  }
}

function graphqlMessage(errors: { message: string }[] | undefined): string {
  return errors?.length ? ` (${errors[0].message})` : "";
}
