/**
 * The entry point of the Tinker client: one session on one server, from which training and
 * sampling clients are made.
 *
 * @module
 */

import { z } from "zod";
import {
  ClientConfigResponseSchema,
  GetServerCapabilitiesResponseSchema,
  UntypedFutureSchema,
} from "../protocol/mod.ts";
import { pollFuture } from "./futures.ts";
import { type ChunkLimits, DEFAULT_CHUNK_LIMITS } from "./chunking.ts";
import { TINKER_CLOUD_URL, TinkerHttp } from "./http.ts";
import { SamplingClient } from "./sampling_client.ts";
import { RestClient } from "./rest_client.ts";
import { TrainingClient, type TrainingClientContext } from "./training_client.ts";
import { envVar, runShell, unrefTimer } from "./runtime.ts";
import type { Tokenizer } from "../tokenizers/types.ts";

/** Finds a base model's tokenizer (tinkerbench's is `getTokenizer` of lib/tokenizers). */
export type TokenizerLoader = (baseModel: string) => Tokenizer;

/** Options of {@link ServiceClient.connect}. */
export interface ServiceClientOptions {
  /** Server URL; default `TINKER_BASE_URL`, then the Tinker cloud. */
  baseUrl?: string;
  /** Credential; default `TINKER_API_KEY`. */
  apiKey?: string;
  /** Session tags, shown in the service's console. */
  tags?: string[];
  /** Back-off base for retries and polls (ms); tests use small values. */
  backoffBaseMs?: number;
  /** Override the server's forward_backward chunk limits (tests, tuning). */
  chunkLimits?: Partial<ChunkLimits>;
  /** The `fetch` to send with (tests record requests through their own). */
  fetch?: typeof fetch;
  /**
   * What the clients' `getTokenizer()` uses. The client itself loads no tokenizer, so it stays
   * small and runs anywhere; connectTinker passes tinkerbench's.
   */
  tokenizers?: TokenizerLoader;
}

/** Options of {@link ServiceClient.createLoraTrainingClient}; defaults are the SDK's. */
export interface LoraTrainingOptions {
  /** The base model, as the server lists it (e.g. `Qwen/Qwen3-8B`, `local/tiny`). */
  baseModel: string;
  /** LoRA rank (default 32). */
  rank?: number;
  /** Seed of the adapter's initialisation. */
  seed?: number;
  /** Adapt the MLP layers (default true). */
  trainMlp?: boolean;
  /** Adapt the attention layers (default true). */
  trainAttn?: boolean;
  /** Adapt the unembedding (default true). */
  trainUnembed?: boolean;
  /** Free-form labels stored with the run. */
  userMetadata?: Record<string, string>;
}

const SessionSchema = z.object({ session_id: z.string() });
const CreateModelResultSchema = z.object({ model_id: z.string() });
const SamplingSessionSchema = z.object({ sampling_session_id: z.string() });

/**
 * A session on a Tinker-compatible server.
 *
 * @example
 * const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
 * const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 16 });
 * // … training.forwardBackward(…), training.optimStep(…) …
 * service.close();
 */
export class ServiceClient {
  /** The HTTP layer (auth, retries) every client of this session sends through. */
  readonly http: TinkerHttp;
  /** The server's id of this session. */
  readonly sessionId: string;
  readonly #backoffBaseMs: number;
  readonly #chunkLimits: ChunkLimits;
  #modelSeq = 0;
  #samplingSeq = 0;
  #heartbeat: ReturnType<typeof setInterval>;
  readonly #tokenizers: TokenizerLoader;

  private constructor(
    http: TinkerHttp,
    sessionId: string,
    backoffBaseMs: number,
    chunkLimits: ChunkLimits,
    tokenizers: TokenizerLoader | undefined,
  ) {
    this.http = http;
    this.sessionId = sessionId;
    this.#backoffBaseMs = backoffBaseMs;
    this.#chunkLimits = chunkLimits;
    this.#tokenizers = tokenizers ?? ((baseModel) => {
      throw new Error(
        `no tokenizer for ${baseModel}: pass \`tokenizers\` to ServiceClient.connect ` +
          "(tinkerbench's getTokenizer, or your own)",
      );
    });
    this.#heartbeat = setInterval(() => {
      http.raw("POST", "session_heartbeat", {
        json: { session_id: sessionId, type: "session_heartbeat" },
      })
        .catch(() => {}); // a missed heartbeat is retried on the next tick
    }, 10_000);
    unrefTimer(this.#heartbeat);
  }

  /** Reads the server's client config and opens a session. */
  static async connect(opts: ServiceClientOptions = {}): Promise<ServiceClient> {
    const baseUrl = opts.baseUrl || envVar("TINKER_BASE_URL") || TINKER_CLOUD_URL;
    const credentialCmd = envVar("TINKER_CREDENTIAL_CMD");
    const apiKey = opts.apiKey ?? (envVar("TINKER_API_KEY") ||
      (credentialCmd ? () => runCredentialCommand(credentialCmd) : undefined));
    if (!apiKey) {
      throw new Error(
        "no Tinker credential: pass apiKey or set TINKER_API_KEY (or TINKER_CREDENTIAL_CMD)",
      );
    }
    const http = new TinkerHttp({ baseUrl, apiKey, fetch: opts.fetch });
    const config = await http.json("POST", "client/config", ClientConfigResponseSchema, {
      sdk_version: "tinkerbench",
    });
    // The server chooses JWT auth: exchange the key once, then send (and renew) the JWT.
    if (config.pjwt_auth_enabled) await http.useJwtAuth();
    let session_id: string;
    try {
      ({ session_id } = await http.json("POST", "create_session", SessionSchema, {
        tags: opts.tags ?? [],
        user_metadata: {},
        sdk_version: "tinkerbench",
        type: "create_session",
      }));
    } catch (e) {
      http.close();
      throw e;
    }
    const chunkLimits: ChunkLimits = {
      maxDatums: opts.chunkLimits?.maxDatums ?? config.fwdbwd_max_chunk_len ??
        DEFAULT_CHUNK_LIMITS.maxDatums,
      maxBytes: opts.chunkLimits?.maxBytes ?? config.fwdbwd_max_chunk_bytes_count ??
        DEFAULT_CHUNK_LIMITS.maxBytes,
    };
    return new ServiceClient(
      http,
      session_id,
      opts.backoffBaseMs ?? 1_000,
      chunkLimits,
      opts.tokenizers,
    );
  }

  /** Models the server serves. */
  /**
   * A model's context length, as the service reports it (32768 when it does not): the one place
   * the trainer's and the proxy's token budgets are checked against.
   */
  async contextLength(model: string): Promise<number> {
    const caps = await this.getServerCapabilities();
    return caps.supported_models.find((m) => m.model_name === model)?.max_context_length ?? 32768;
  }

  /** The models the server serves, with their context lengths. */
  async getServerCapabilities(): Promise<z.infer<typeof GetServerCapabilitiesResponseSchema>> {
    return await this.http.json(
      "GET",
      "get_server_capabilities",
      GetServerCapabilitiesResponseSchema,
    );
  }

  /** Creates a LoRA training run on `baseModel`. */
  async createLoraTrainingClient(o: LoraTrainingOptions): Promise<TrainingClient> {
    const handle = await this.http.json("POST", "create_model", UntypedFutureSchema, {
      session_id: this.sessionId,
      model_seq_id: this.#modelSeq++,
      base_model: o.baseModel,
      user_metadata: o.userMetadata,
      lora_config: {
        rank: o.rank ?? 32,
        seed: o.seed,
        train_mlp: o.trainMlp ?? true,
        train_attn: o.trainAttn ?? true,
        train_unembed: o.trainUnembed ?? true,
      },
      type: "create_model",
    });
    const { model_id } = await pollFuture(this.http, handle.request_id, {
      json: CreateModelResultSchema,
    }, { backoffBaseMs: this.#backoffBaseMs });
    return new TrainingClient(this.#context(), model_id, o.baseModel);
  }

  /**
   * A training client that continues from a `weights/` checkpoint: the run's base model and
   * LoRA settings come from weights_info, then the weights (and with `withOptimizer`, Adam's
   * state) are loaded as the new model's first operation.
   */
  async createTrainingClientFromState(
    path: string,
    { withOptimizer = false, baseModel }: { withOptimizer?: boolean; baseModel?: string } = {},
  ): Promise<TrainingClient> {
    const info = await this.restClient().weightsInfo(path);
    const training = await this.createLoraTrainingClient({
      baseModel: baseModel ?? info.base_model,
      rank: info.lora_rank ?? 32,
      trainMlp: info.train_mlp ?? true,
      trainAttn: info.train_attn ?? true,
      trainUnembed: info.train_unembed ?? true,
    });
    await (withOptimizer ? training.loadStateWithOptimizer(path) : training.loadState(path));
    return training;
  }

  /** Training runs and checkpoints (REST). */
  restClient(): RestClient {
    return new RestClient(this.http);
  }

  /** A sampling client on a base model or on `tinker://…/sampler_weights/…` weights. */
  async createSamplingClient(
    from: { baseModel: string } | { modelPath: string },
  ): Promise<SamplingClient> {
    const { sampling_session_id } = await this.http.json(
      "POST",
      "create_sampling_session",
      SamplingSessionSchema,
      {
        session_id: this.sessionId,
        sampling_session_seq_id: this.#samplingSeq++,
        ...("baseModel" in from ? { base_model: from.baseModel } : { model_path: from.modelPath }),
        type: "create_sampling_session",
      },
    );
    const base = "baseModel" in from ? from.baseModel : "";
    return new SamplingClient(this.http, sampling_session_id, base, {
      backoffBaseMs: this.#backoffBaseMs,
      tokenizers: this.#tokenizers,
    });
  }

  /** Stops the heartbeat and the JWT refresh. */
  close(): void {
    clearInterval(this.#heartbeat);
    this.http.close();
  }

  #context(): TrainingClientContext {
    return {
      http: this.http,
      backoffBaseMs: this.#backoffBaseMs,
      chunkLimits: this.#chunkLimits,
      nextSamplingSessionSeq: () => this.#samplingSeq++,
      samplingClientFor: (id, baseModel) =>
        new SamplingClient(this.http, id, baseModel, {
          backoffBaseMs: this.#backoffBaseMs,
          tokenizers: this.#tokenizers,
        }),
      tokenizers: this.#tokenizers,
    };
  }
}

/**
 * Runs `TINKER_CREDENTIAL_CMD` (with `sh -c`, as the SDK does on each request) and returns the
 * credential it prints; a failing or silent command is a one-line error.
 */
async function runCredentialCommand(cmd: string): Promise<string> {
  const out = await runShell(cmd);
  const text = out.stdout.trim();
  if (out.code !== 0) {
    const err = out.stderr.trim().split("\n").at(-1) ?? "";
    throw new Error(`TINKER_CREDENTIAL_CMD failed (exit ${out.code})${err ? `: ${err}` : ""}`);
  }
  if (!text) throw new Error("TINKER_CREDENTIAL_CMD printed no credential");
  return text;
}
