/**
 * The runs API's operations as plain async methods: the ten Hermes RL tools (list and select an
 * environment, read and edit its config, start, check, stop and list runs, get results, test
 * inference) plus health and resume. The HTTP server and the MCP server both call this class;
 * failures are {@link RunsError}s carrying the HTTP status and a JSON body that says what is
 * wrong.
 *
 * @module
 */

import { join } from "node:path";
import type { z } from "zod";
import { TinkerAPIError } from "../tinker/http.ts";
import { mean } from "../util/stats.ts";
import {
  completeConfig,
  defaultConfig,
  describeFields,
  FieldError,
  type RunConfig,
  validateField,
} from "./fields.ts";
import {
  describeEnvironment,
  envModuleOf,
  listEnvironments,
  loadEnvModule,
  matchEnvironmentId,
} from "./environments.ts";
import { testInference } from "./inference.ts";
import { isAlive, selfIdentity } from "./process.ts";
import { readCheckpoints } from "../rundir/mod.ts";
import { RunConfigError, RunManager, RunStateError } from "./runner.ts";
import {
  type ConfigView,
  EditConfigBodySchema,
  type EditResult,
  type Environment,
  type Health,
  type InferenceBody,
  InferenceBodySchema,
  type InferenceResponse,
  parseBody,
  type RunAction,
  type RunList,
  type RunResults,
  type RunsApi,
  RunsError,
  type RunStatus,
  type SelectResult,
  type StartResult,
  StartRunBodySchema,
} from "./schemas.ts";
import { type RunRecord, RunStore } from "./store.ts";
import { RunViews } from "./views.ts";
import type { HeldOutEvaluator } from "./eval_queue.ts";

/** Options of {@link RunsService.open}. */
export interface RunsServiceOptions {
  /** The data dir (the local backend's): runs go under `<dataDir>/runs-api/`. */
  dataDir: string;
  /** Training processes at once (default 1). */
  maxConcurrent?: number;
  /** Seconds a stopped run may take to save before it is killed (default 120). */
  stopGraceS?: number;
  /** How often runs are checked, in ms (default 1000). */
  pollMs?: number;
  /** Modules that register environments (`--env-module`), imported before anything else. */
  envModules?: string[];
  /** Runs that may wait in the queue; one more is a 429 (default {@link DEFAULT_MAX_QUEUED}). */
  maxQueued?: number;
  /**
   * `/test/inference` calls at once (each samples on the CPU); one more is a 429 (default
   * {@link DEFAULT_MAX_INFERENCE}).
   */
  maxInference?: number;
  /**
   * What scores each checkpoint: the trainer's held-out evaluator, `{ evaluateHeldOut,
   * heldOutEnvironment }` of lib/trainer/evaluate.ts (the run API does not import the trainer).
   */
  evaluator: HeldOutEvaluator;
}

/** Runs that may wait in the queue by default. */
export const DEFAULT_MAX_QUEUED = 16;
/** `/test/inference` calls served at once by default. */
export const DEFAULT_MAX_INFERENCE = 2;

interface Selection {
  environment: string;
  config: RunConfig;
}

const NO_SELECTION =
  "no environment selected: call rl_select_environment(name) (POST /environments/{name}/select) first";

/**
 * The runs service over one data dir. Opening it takes the data dir's lease (one server per
 * data dir), reconciles the stored runs with the processes alive, and starts the queue.
 *
 * @example
 * const runs = await RunsService.open({
 *   dataDir: await Deno.makeTempDir(),
 *   evaluator: { evaluateHeldOut, heldOutEnvironment }, // lib/trainer/evaluate.ts
 * });
 * await runs.selectEnvironment("game:GuessTheNumber-v0-easy");
 * await runs.editConfig("total_steps", 2);
 * const { run_id } = await runs.startRun();
 * console.log(await runs.getRun(run_id));
 * await runs.close();
 */
export class RunsService implements RunsApi {
  readonly dataDir: string;
  readonly store: RunStore;
  readonly manager: RunManager;
  readonly #views: RunViews;
  readonly maxQueued: number;
  readonly maxInference: number;
  #inferring = 0;

  private constructor(
    dataDir: string,
    store: RunStore,
    manager: RunManager,
    limits: { maxQueued?: number; maxInference?: number },
  ) {
    this.dataDir = dataDir;
    this.maxQueued = limits.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.maxInference = limits.maxInference ?? DEFAULT_MAX_INFERENCE;
    this.store = store;
    this.manager = manager;
    this.#views = new RunViews(store, manager.evals);
  }

  /** Opens the service on a data dir (see {@link RunsServiceOptions}). */
  static async open(o: RunsServiceOptions): Promise<RunsService> {
    for (const path of o.envModules ?? []) await loadEnvModule(path);
    const home = join(o.dataDir, "runs-api");
    await Deno.mkdir(join(home, "runs"), { recursive: true });
    const store = new RunStore(join(home, "runs.db"));
    try {
      store.acquireLease(selfIdentity(), isAlive);
    } catch (e) {
      store.close();
      throw e;
    }
    const manager = new RunManager(store, {
      dataDir: o.dataDir,
      runsDir: join(home, "runs"),
      maxConcurrent: o.maxConcurrent,
      stopGraceMs: (o.stopGraceS ?? 120) * 1000,
      pollMs: o.pollMs,
      evaluator: o.evaluator,
    });
    await manager.start();
    return new RunsService(o.dataDir, store, manager, o);
  }

  /** Stops watching runs (they keep training) and releases the data dir. */
  async close(): Promise<void> {
    await this.manager.close();
    this.store.releaseLease(Deno.pid);
    this.store.close();
  }

  health(): Promise<Health> {
    const runs = this.store.listRuns();
    return Promise.resolve({
      status: "ok" as const,
      environment: this.#selection()?.environment ?? null,
      runs: {
        queued: runs.filter((r) => r.state === "queued").length,
        running: runs.filter((r) => r.state === "running").length,
        total: runs.length,
      },
      max_concurrent: this.manager.maxConcurrent,
    });
  }

  listEnvironments(): Promise<Environment[]> {
    return Promise.resolve(listEnvironments());
  }

  selectEnvironment(name: string): Promise<SelectResult> {
    const id = matchEnvironmentId(name);
    if (!id) {
      throw new RunsError(404, {
        error: `environment ${JSON.stringify(name)} not found`,
        available: listEnvironments().map((e) => e.name),
      });
    }
    const selection: Selection = {
      environment: id,
      config: defaultConfig(id, { envModule: envModuleOf(id) }),
    };
    this.store.setSetting("selection", selection);
    return Promise.resolve({
      message: `Selected environment: ${id} (its default config is loaded)`,
      environment: id,
      file_path: describeEnvironment(id).file_path,
      config: selection.config,
    });
  }

  getConfig(): Promise<ConfigView> {
    const sel = this.#requireSelection();
    const { configurable, locked } = describeFields(sel.config);
    return Promise.resolve({
      environment: sel.environment,
      configurable_fields: configurable,
      locked_fields: locked,
      tip: "Change a field with rl_edit_config(field, value) (POST /config), then start a run " +
        "with rl_start_training (POST /runs).",
    });
  }

  editConfig(field: string, value: unknown): Promise<EditResult> {
    parseBody(EditConfigBodySchema, { field, value });
    const sel = this.#requireSelection();
    let stored;
    try {
      stored = validateField(field, value);
    } catch (e) {
      throw fieldError(e, sel.config);
    }
    sel.config[field] = stored;
    this.store.setSetting("selection", sel);
    return Promise.resolve({
      message: `Updated ${field} = ${JSON.stringify(stored)}`,
      field,
      value: stored,
      config: sel.config,
    });
  }

  async startRun(body: Record<string, unknown> = {}): Promise<StartResult> {
    const { wandb_project, ...overrides } = parseBody(StartRunBodySchema, body);
    const sel = this.#requireSelection();
    this.#checkQueueRoom();
    const config: RunConfig = { ...sel.config };
    for (const [field, value] of Object.entries(overrides)) {
      try {
        config[field] = validateField(field, value);
      } catch (e) {
        throw fieldError(e, sel.config);
      }
    }
    const id = this.#newRunId();
    // Runs started from one selection share its name; the id keeps each one's name its own.
    const taken = this.store.listRuns().some((r) => r.name === config.wandb_name);
    let run: RunRecord;
    try {
      run = await this.manager.create({
        id,
        name: taken ? `${config.wandb_name}-${id}` : String(config.wandb_name),
        environment: sel.environment,
        config,
        wandbProject: wandb_project,
      });
    } catch (e) {
      if (e instanceof RunConfigError) throw new RunsError(400, { error: e.message });
      throw e;
    }
    const status = await this.#views.status(run);
    const message = run.state === "running"
      ? `Run ${run.id} started: ${run.config.total_steps} steps on ${run.environment}`
      : `Run ${run.id} queued behind ${
        this.store.listRuns(["running"]).length
      } running run(s) (at most ${this.manager.maxConcurrent} at once)`;
    return { ...status, message };
  }

  async listRuns(): Promise<RunList> {
    const runs = await Promise.all(this.store.listRuns().map((r) => this.#views.summary(r)));
    return { runs, count: runs.length };
  }

  async getRun(id: string): Promise<RunStatus> {
    return await this.#views.status(this.#run(id));
  }

  stopRun(id: string): Promise<RunAction> {
    const before = this.#run(id);
    const run = this.#act(() => this.manager.stop(id));
    const stopping = run.state === "running";
    const message = stopping
      ? (before.stopRequestedAt
        ? `Run ${id} is already stopping`
        : `Stopping run ${id}: it finishes its current step, saves a checkpoint and exits`)
      : `Stopped run ${id} before it started`;
    return Promise.resolve({
      message,
      run_id: id,
      state: run.state,
      status: run.state,
      stopping,
    });
  }

  async resumeRun(id: string): Promise<RunAction> {
    this.#run(id);
    this.#checkQueueRoom();
    const run = this.#act(() => this.manager.resume(id));
    const from = (await readCheckpoints(run.runDir)).at(-1) ?? null;
    return {
      message: `Run ${id} ${run.state === "running" ? "resumed" : "queued to resume"} from ` +
        (from ? `its checkpoint at step ${from.step}` : "the start (it had no checkpoint)"),
      run_id: id,
      state: run.state,
      status: run.state,
      stopping: false,
      resume_from: from,
    };
  }

  async getResults(id: string): Promise<RunResults> {
    return await this.#views.results(this.#run(id));
  }

  async testInference(body: InferenceBody): Promise<InferenceResponse> {
    const b = parseBody(InferenceBodySchema, body);
    if (this.#inferring >= this.maxInference) {
      throw new RunsError(429, {
        error: `${this.#inferring} test inference call(s) are running (at most ` +
          `${this.maxInference} at once, --max-inference): retry when one has answered`,
      });
    }
    this.#inferring++;
    try {
      return await this.#testInference(b);
    } finally {
      this.#inferring--;
    }
  }

  #checkQueueRoom(): void {
    // Only a run that would wait counts: with a free slot it starts at once.
    const running = this.store.listRuns(["running"]).length;
    const queued = this.store.listRuns(["queued"]).length;
    if (running >= this.manager.maxConcurrent && queued >= this.maxQueued) {
      throw new RunsError(429, {
        error: `${queued} runs are queued already (at most ${this.maxQueued}, --max-queued): ` +
          `wait for one to start, or stop one with POST /runs/{id}/stop`,
      });
    }
  }

  async #testInference(b: z.infer<typeof InferenceBodySchema>): Promise<InferenceResponse> {
    let environment: string, model: string, policy;
    let label: string;
    if (b.run_id) {
      const run = this.#run(b.run_id);
      const checkpoints = await readCheckpoints(run.runDir);
      const checkpoint = checkpoints.findLast((c) => c.sampler_path) ?? checkpoints.at(-1);
      if (!checkpoint) {
        throw new RunsError(409, { error: `run ${run.id} has no checkpoint yet` });
      }
      environment = run.environment;
      model = String(run.config.model_name);
      policy = { checkpoint };
      label = checkpoint.sampler_path ?? checkpoint.state_path;
    } else {
      const sel = this.#requireSelection();
      environment = sel.environment;
      model = String(sel.config.model_name);
      policy = { baseModel: model };
      label = `base model ${model}`;
    }
    let results;
    try {
      results = await testInference({
        dataDir: this.dataDir,
        environment,
        modelName: model,
        policy,
        prompts: b.prompts,
        count: b.count,
        maxTokens: b.max_tokens,
        temperature: b.temperature,
        seed: b.seed,
      });
    } catch (e) {
      // The backend refused the request (too long for the model's context, ...): say why.
      if (e instanceof TinkerAPIError && e.status >= 400 && e.status < 500) {
        throw new RunsError(400, { error: `sampling failed: ${e.detail}` });
      }
      throw e;
    }
    return {
      environment,
      model,
      policy: label,
      results,
      summary: {
        count: results.length,
        mean_reward: mean(results.map((r) => r.reward)),
        format_ok_frac: mean(results.map((r) => (r.format_ok ? 1 : 0))),
      },
    };
  }

  #selection(): Selection | null {
    const stored = this.store.getSetting<Selection>("selection");
    if (!stored || matchEnvironmentId(stored.environment) !== stored.environment) return null;
    return {
      environment: stored.environment,
      config: completeConfig(stored.config, stored.environment, envModuleOf(stored.environment)),
    };
  }

  #requireSelection(): Selection {
    const sel = this.#selection();
    if (!sel) throw new RunsError(409, { error: NO_SELECTION });
    return sel;
  }

  #run(id: string): RunRecord {
    const run = this.store.getRun(id);
    if (!run) {
      throw new RunsError(404, {
        error: `run ${JSON.stringify(id)} not found`,
        runs: this.store.listRuns().slice(-20).map((r) => r.id),
      });
    }
    return run;
  }

  #act(fn: () => RunRecord): RunRecord {
    try {
      return fn();
    } catch (e) {
      if (e instanceof RunStateError) throw new RunsError(409, { error: e.message });
      throw e;
    }
  }

  #newRunId(): string {
    for (;;) {
      const bytes = crypto.getRandomValues(new Uint8Array(4));
      const id = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
      if (!this.store.getRun(id)) return id;
    }
  }
}

function fieldError(e: unknown, config: RunConfig): unknown {
  if (!(e instanceof FieldError)) return e;
  const locked = e.status === 403 && e.extra.field ? { locked_value: config[e.extra.field] } : {};
  return new RunsError(e.status, { error: e.message, ...e.extra, ...locked });
}
