/**
 * A loopback server that answers the two W&B endpoints a run uses, written from W&B's public
 * protocol (docs/tracking.md): `POST /graphql` (`Viewer`, `UpsertBucket`) and
 * `POST /files/<entity>/<project>/<run>/file_stream`. It keeps what a run would show on
 * wandb.ai: the run's config and display name, its history lines (each chunk's lines placed at
 * the chunk's offset, so a resent chunk replaces, never duplicates), its summary, and whether
 * it finished. W&B's cloud is unreachable from the test machine; this is the other side of the
 * wire, not a stand-in for any of our code.
 *
 * It can be made to fail (`failNext` requests answer `failStatus`, 503 by default), to stall (`delayMs` per request), or
 * be stopped and started again on the same port (`stop`, `restart`).
 *
 * @module
 */

/** One run as the server holds it. */
export interface ServerRun {
  entity: string;
  project: string;
  name: string;
  displayName: string | null;
  /** The run's notes (UpsertBucket's `description`). */
  description: string | null;
  tags: string[];
  config: Record<string, unknown>;
  /** History lines by offset (parsed JSON). */
  history: Record<string, unknown>[];
  summary: Record<string, unknown>;
  /** How many times UpsertBucket named this run. */
  upserts: number;
  exitcode: number | null;
  complete: boolean;
  /** file_stream posts with no files and `complete: false`: heartbeats. */
  heartbeats: number;
}

/** A W&B-protocol server on 127.0.0.1. */
export class WandbTestServer {
  readonly apiKey: string;
  readonly entity: string;
  readonly runs = new Map<string, ServerRun>();
  /** Requests that answer 503 before the server answers normally again. */
  failNext = 0;
  /** The status the next `failNext` requests answer (503 unless set). */
  failStatus = 503;
  /** Wait before answering each request. */
  delayMs = 0;
  /** Every request's path, in order. */
  readonly requests: string[] = [];
  #server: Deno.HttpServer | null = null;
  #port = 0;

  constructor(o: { apiKey?: string; entity?: string } = {}) {
    this.apiKey = o.apiKey ?? "test-key-0123456789";
    this.entity = o.entity ?? "tester";
  }

  /** Listens on a free port (or the port it had, after {@link stop}). */
  start(): this {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: this.#port, onListen: () => {} },
      (req) => this.#handle(req),
    );
    this.#port = (this.#server.addr as Deno.NetAddr).port;
    return this;
  }

  /** `http://127.0.0.1:<port>`: what `WANDB_BASE_URL` is set to. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Stops listening (connections are refused until {@link restart}). */
  async stop(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = null;
  }

  /** Listens again on the same port. */
  restart(): this {
    return this.start();
  }

  /** The run `entity/project/name`, if created. */
  run(project: string, name: string, entity = this.entity): ServerRun | undefined {
    return this.runs.get(`${entity}/${project}/${name}`);
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    this.requests.push(url.pathname);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failNext > 0) {
      this.failNext--;
      return new Response("refused", { status: this.failStatus });
    }
    if (req.headers.get("authorization") !== `Basic ${btoa(`api:${this.apiKey}`)}`) {
      return Response.json({ errors: [{ message: "unauthorized" }] }, { status: 401 });
    }
    if (req.method === "POST" && url.pathname === "/graphql") {
      return this.#graphql(await req.json());
    }
    const m = /^\/files\/([^/]+)\/([^/]+)\/([^/]+)\/file_stream$/.exec(url.pathname);
    if (req.method === "POST" && m) {
      return this.#fileStream(m.slice(1).map(decodeURIComponent), await req.json());
    }
    return new Response("not found", { status: 404 });
  }

  #graphql(body: { query: string; variables?: Record<string, unknown> }): Response {
    const v = body.variables ?? {};
    if (/\bupsertBucket\b/.test(body.query)) {
      const entity = String(v.entity ?? this.entity);
      const project = String(v.project ?? "uncategorized");
      const name = String(v.name);
      const key = `${entity}/${project}/${name}`;
      const run = this.runs.get(key) ?? {
        entity,
        project,
        name,
        displayName: null,
        description: null,
        tags: [],
        config: {},
        history: [],
        summary: {},
        upserts: 0,
        exitcode: null,
        complete: false,
        heartbeats: 0,
      };
      const inserted = run.upserts === 0;
      run.upserts++;
      if (typeof v.displayName === "string") run.displayName = v.displayName;
      if (typeof v.description === "string") run.description = v.description;
      if (Array.isArray(v.tags)) run.tags = v.tags.map(String);
      if (typeof v.config === "string") run.config = JSON.parse(v.config);
      if (typeof v.summaryMetrics === "string") {
        run.summary = { ...run.summary, ...JSON.parse(v.summaryMetrics) };
      }
      this.runs.set(key, run);
      return Response.json({
        data: {
          upsertBucket: {
            inserted,
            bucket: {
              id: btoa(key),
              name,
              displayName: run.displayName,
              project: { id: btoa(project), name: project, entity: { id: "e", name: entity } },
            },
          },
        },
      });
    }
    if (/\bviewer\b/.test(body.query)) {
      return Response.json({ data: { viewer: { id: "v1", entity: this.entity, flags: null } } });
    }
    return Response.json({ errors: [{ message: "unknown operation" }] }, { status: 400 });
  }

  #fileStream(
    [entity, project, name]: string[],
    body: {
      files?: Record<string, { offset: number; content: string[] }>;
      complete?: boolean;
      exitcode?: number;
    },
  ): Response {
    const run = this.runs.get(`${entity}/${project}/${name}`);
    if (!run) return Response.json({ error: "run not found" }, { status: 404 });
    for (const [file, chunk] of Object.entries(body.files ?? {})) {
      if (file === "wandb-history.jsonl") {
        chunk.content.forEach((line, i) => (run.history[chunk.offset + i] = JSON.parse(line)));
      } else if (file === "wandb-summary.json") {
        run.summary = JSON.parse(chunk.content.at(-1)!);
      }
    }
    if (body.complete === false && !body.files) run.heartbeats++;
    if (body.complete) {
      run.complete = true;
      run.exitcode = body.exitcode ?? null;
    }
    return Response.json({ exitcode: null, limits: {} });
  }
}
