/**
 * Benchmarks of the Tinker client: the protobuf codec of forward_backward (our encode and decode
 * against JSON and against the official Python SDK's, on the same RL datums in one run), and the
 * cost of awaiting each call versus pipelining under latency.
 *
 * @module
 */

import {
  type Datum,
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  type ForwardBackwardOutput,
  type ForwardBackwardProtoRequest,
} from "../lib/protocol/mod.ts";
import { datum, ServiceClient, TensorData } from "../lib/tinker/mod.ts";
import { startLocalServer } from "../lib/local/server/mod.ts";
import process from "node:process";
import { median } from "./local_engine.ts";

/** Sizes of the codec benchmark: 1k RL datums of 2k tokens (about 40 MB of protobuf). */
export const CODEC_BENCH = { datums: 1000, tokens: 2000, reps: 5, rounds: 2 };

/** One RL datum's values as a rollout holds them: its tokens (one more than the inputs). */
export interface RlLists {
  tokens: number[];
  logprobs: number[];
  advantages: number[];
}

/** The benchmark's values, from the formula bench/sdk_codec.py also uses. */
export function rlLists(datums: number, tokens: number): RlLists[] {
  return Array.from({ length: datums }, (_, i) => ({
    tokens: Array.from({ length: tokens + 1 }, (_, t) => (i * 7 + t * 13) % 151_000),
    logprobs: Array.from({ length: tokens }, (_, t) => -((i + t) % 97 + 1) / 10),
    advantages: new Array<number>(tokens).fill(((i % 5) - 2) / 2),
  }));
}

/**
 * RL datums of these values: input tokens, int64 target_tokens, float32 sampler logprobs and
 * advantages. `typed` puts the loss inputs in typed arrays (as a rollout can build them);
 * otherwise they stay plain arrays.
 */
export function rlDatums(lists: RlLists[], typed: boolean): Datum[] {
  return lists.map(({ tokens, logprobs, advantages }) =>
    datum(tokens.slice(0, -1), {
      target_tokens: typed
        ? TensorData.fromArray(new Int32Array(tokens).subarray(1), "int64")
        : TensorData.fromArray(tokens.slice(1), "int64"),
      logprobs: typed ? new Float32Array(logprobs) : logprobs,
      advantages: typed ? new Float32Array(advantages) : advantages,
    })
  );
}

/** The learner's result for `datums` × `tokens`: float32 logprobs per datum and a metric. */
export function rlOutput(datums: number, tokens: number): ForwardBackwardOutput {
  return {
    loss_fn_output_type: "ArrayRecord",
    loss_fn_outputs: Array.from({ length: datums }, (_, i) => ({
      logprobs: {
        data: Float32Array.from({ length: tokens }, (_, t) => -((i * 3 + t) % 89) / 16),
        dtype: "float32" as const,
        shape: [tokens],
      },
    })),
    metrics: { "loss:sum": -1234.5 },
  };
}

/** Wall and CPU milliseconds of each of `reps` calls of `f` (CPU time is steadier on a busy machine). */
function time(f: () => unknown, reps: number): { wall: number[]; cpu: number[] } {
  const wall: number[] = [], cpu: number[] = [];
  for (let r = 0; r < reps; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    f();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  return { wall, cpu };
}

const request = (data: Datum[]): ForwardBackwardProtoRequest => ({
  model_id: "m",
  seq_id: 1,
  data,
  loss_fn: "importance_sampling",
  loss_fn_config: {},
  forward_only: false,
});

/** Our side of one round: every sample, the sizes, and the two protobuf bodies. */
function ourRound(reps: number) {
  const { datums, tokens } = CODEC_BENCH;
  const lists = rlLists(datums, tokens);
  const typed = rlDatums(lists, true), plain = rlDatums(lists, false);
  const out = rlOutput(datums, tokens);
  const body = encodeForwardBackwardRequest(request(typed));
  const outBody = encodeForwardBackwardOutput(out);
  const jsonRequest = () =>
    JSON.stringify({
      forward_backward_input: { data: plain, loss_fn: "importance_sampling" },
      model_id: "m",
      seq_id: 1,
    });
  const json = jsonRequest();
  const outJson = JSON.stringify(out, (_k, v) => v instanceof Float32Array ? Array.from(v) : v);
  return {
    body,
    outBody,
    bytes: {
      request: body.length,
      request_json: new TextEncoder().encode(json).length,
      output: outBody.length,
      output_json: new TextEncoder().encode(outJson).length,
    },
    samples: {
      build_typed: time(() => rlDatums(lists, true), reps),
      build_plain: time(() => rlDatums(lists, false), reps),
      encode_typed: time(() => encodeForwardBackwardRequest(request(typed)), reps),
      encode_plain: time(() => encodeForwardBackwardRequest(request(plain)), reps),
      encode_json: time(jsonRequest, reps),
      decode_request: time(() => decodeForwardBackwardRequest(body), reps),
      decode_request_json: time(() => JSON.parse(json), reps),
      encode_output: time(() => encodeForwardBackwardOutput(out), reps),
      decode_output: time(() => decodeForwardBackwardOutput(outBody), reps),
      decode_output_json: time(() => JSON.parse(outJson), reps),
    },
  };
}

/** The SDK's PYTHONPATH: `TINKER_SDK_PYTHONPATH`, else the layout of tests/compat/README.md. */
function sdkPythonPath(): string {
  return Deno.env.get("TINKER_SDK_PYTHONPATH") ??
    "/work/sdk/tinker-0.25.0/src:/work/sdk/pydeps:/work/sdk/pytorch";
}

/** What bench/sdk_codec.py prints. */
interface SdkRound {
  sdk_version: string;
  protobuf: string;
  bytes: number;
  output_bytes: number;
  our_request_equals_sdk_message: boolean;
  output_logprobs_sum: number;
  samples: Record<"build" | "encode" | "decode", { wall: number[]; cpu: number[] }>;
}

/** One run of bench/sdk_codec.py on our bodies; `{ error }` when the SDK is not importable. */
async function sdkRound(
  body: Uint8Array,
  outBody: Uint8Array,
  reps: number,
): Promise<SdkRound | { error: string }> {
  const dir = await Deno.makeTempDir({ prefix: "tb-codec-" });
  try {
    const cfg = {
      datums: CODEC_BENCH.datums,
      tokens: CODEC_BENCH.tokens,
      reps,
      request: `${dir}/request.pb`,
      output: `${dir}/output.pb`,
    };
    await Deno.writeFile(cfg.request, body);
    await Deno.writeFile(cfg.output, outBody);
    const out = await new Deno.Command(Deno.env.get("PYTHON") ?? "python3", {
      args: [new URL("./sdk_codec.py", import.meta.url).pathname, JSON.stringify(cfg)],
      env: { PYTHONPATH: sdkPythonPath() },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const err = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
      return { error: `${err} (set TINKER_SDK_PYTHONPATH as tests/compat/README.md says)` };
    }
    return JSON.parse(new TextDecoder().decode(out.stdout));
  } catch (e) {
    return { error: `cannot run the SDK: ${(e as Error).message}` };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

type Samples = Record<string, { wall: number[]; cpu: number[] }>;

/** The SDK's side of the results. */
interface SdkSummary {
  version: string;
  protobuf: string;
  bytes: number;
  output_bytes: number;
  wall_ms: Record<string, number>;
  cpu_ms: Record<string, number>;
  our_request_equals_sdk_message: boolean;
  decoded_logprobs_sum: { sdk: number; ours: number };
}

function collect(into: Samples, from: Samples): void {
  for (const [k, v] of Object.entries(from)) {
    into[k] ??= { wall: [], cpu: [] };
    into[k].wall.push(...v.wall);
    into[k].cpu.push(...v.cpu);
  }
}

function medians(s: Samples, clock: "wall" | "cpu"): Record<string, number> {
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, median(v[clock])]));
}

/**
 * Our protobuf codec vs JSON and vs the official SDK's, on the same 1k × 2k RL datums, in
 * alternating rounds (ours, then the SDK's). Medians of wall and CPU time; ratios are
 * SDK ÷ ours (> 1: we are faster) and ours ÷ JSON.
 */
export async function benchCodec(log: (msg: string) => void) {
  const { reps, rounds } = CODEC_BENCH;
  const ours: Samples = {}, sdk: Samples = {};
  let bytes: Record<string, number> = {};
  let sdkInfo: SdkRound | undefined, sdkError: string | undefined;
  let ourLogprobsSum = 0;
  for (let round = 1; round <= rounds; round++) {
    log(`client codec: round ${round}/${rounds}, ours`);
    const r = ourRound(reps);
    bytes = r.bytes;
    collect(ours, r.samples);
    ourLogprobsSum = 0;
    for (const o of decodeForwardBackwardOutput(r.outBody).loss_fn_outputs) {
      for (const x of o.logprobs.data) ourLogprobsSum += x;
    }
    if (sdkError) continue;
    log(`client codec: round ${round}/${rounds}, official SDK`);
    const s = await sdkRound(r.body, r.outBody, reps);
    if ("error" in s) {
      sdkError = s.error;
      log(`  SDK skipped: ${sdkError}`);
      continue;
    }
    sdkInfo = s;
    collect(sdk, s.samples);
  }
  const ratios = (clock: "wall" | "cpu") => {
    const o = medians(ours, clock), s = sdkInfo ? medians(sdk, clock) : undefined;
    return {
      sdk_encode_over_ours_typed: s ? s.encode / o.encode_typed : null,
      sdk_encode_over_ours_plain: s ? s.encode / o.encode_plain : null,
      sdk_build_and_encode_over_ours_typed: s
        ? (s.build + s.encode) / (o.build_typed + o.encode_typed)
        : null,
      sdk_build_and_encode_over_ours_plain: s
        ? (s.build + s.encode) / (o.build_plain + o.encode_plain)
        : null,
      sdk_decode_over_ours: s ? s.decode / o.decode_output : null,
      output_decode_over_json_parse: o.decode_output / o.decode_output_json,
      request_decode_over_json_parse: o.decode_request / o.decode_request_json,
      request_encode_typed_over_json_stringify: o.encode_typed / o.encode_json,
    };
  };
  return {
    sizes: { datums: CODEC_BENCH.datums, tokens: CODEC_BENCH.tokens, reps, rounds },
    bytes,
    ours: { wall_ms: medians(ours, "wall"), cpu_ms: medians(ours, "cpu") },
    sdk: sdkInfo
      ? {
        version: sdkInfo.sdk_version,
        protobuf: sdkInfo.protobuf,
        bytes: sdkInfo.bytes,
        output_bytes: sdkInfo.output_bytes,
        wall_ms: medians(sdk, "wall"),
        cpu_ms: medians(sdk, "cpu"),
        our_request_equals_sdk_message: sdkInfo.our_request_equals_sdk_message,
        decoded_logprobs_sum: { sdk: sdkInfo.output_logprobs_sum, ours: ourLogprobsSum },
      } satisfies SdkSummary
      : { skipped: sdkError },
    ratios: { wall: ratios("wall"), cpu: ratios("cpu") },
    raw: { ours, sdk },
  };
}

/** The codec results as a markdown table: wall / CPU ms per measure. */
export function codecTable(c: Awaited<ReturnType<typeof benchCodec>>): string {
  const o = c.ours;
  const s = "wall_ms" in c.sdk ? c.sdk as SdkSummary : undefined;
  const both = (w: number | undefined, p: number | undefined) =>
    w === undefined || p === undefined ? "n/a" : `${w.toFixed(0)} / ${p.toFixed(0)}`;
  const ours = (k: string) => both(o.wall_ms[k], o.cpu_ms[k]);
  const theirs = (k: string) => s ? both(s.wall_ms[k], s.cpu_ms[k]) : "n/a";
  const x = (v: number | null) => v === null ? "n/a" : `${v.toFixed(1)}×`;
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  const r = c.ratios;
  return `| ${c.sizes.datums} RL datums × ${c.sizes.tokens} tokens, ms (wall / CPU) | ours | official SDK ${
    s?.version ?? ""
  } | SDK ÷ ours (wall / CPU) | JSON (ours) |
| --- | --- | --- | --- | --- |
| forward_backward body | ${mb(c.bytes.request)} | ${s ? mb(s.bytes) : "n/a"} | | ${
    mb(c.bytes.request_json)
  } |
| encode, typed loss inputs | ${ours("encode_typed")} | ${theirs("encode")} | ${
    x(r.wall.sdk_encode_over_ours_typed)
  } / ${x(r.cpu.sdk_encode_over_ours_typed)} | ${ours("encode_json")} |
| encode, plain-array loss inputs | ${ours("encode_plain")} | ${theirs("encode")} | ${
    x(r.wall.sdk_encode_over_ours_plain)
  } / ${x(r.cpu.sdk_encode_over_ours_plain)} | |
| build datums from lists, typed / plain | ${ours("build_typed")}, ${ours("build_plain")} | ${
    theirs("build")
  } | | |
| build + encode, typed loss inputs | ${
    both(
      o.wall_ms.build_typed + o.wall_ms.encode_typed,
      o.cpu_ms.build_typed + o.cpu_ms.encode_typed,
    )
  } | ${s ? both(s.wall_ms.build + s.wall_ms.encode, s.cpu_ms.build + s.cpu_ms.encode) : "n/a"} | ${
    x(r.wall.sdk_build_and_encode_over_ours_typed)
  } / ${x(r.cpu.sdk_build_and_encode_over_ours_typed)} | |
| build + encode, plain-array loss inputs | ${
    both(
      o.wall_ms.build_plain + o.wall_ms.encode_plain,
      o.cpu_ms.build_plain + o.cpu_ms.encode_plain,
    )
  } | | ${x(r.wall.sdk_build_and_encode_over_ours_plain)} / ${
    x(r.cpu.sdk_build_and_encode_over_ours_plain)
  } | |
| decode result (${mb(c.bytes.output)} of logprobs) | ${ours("decode_output")} | ${
    theirs("decode")
  } | ${x(r.wall.sdk_decode_over_ours)} / ${x(r.cpu.sdk_decode_over_ours)} | ${
    ours("decode_output_json")
  } |
| decode request (server side) | ${ours("decode_request")} | | | ${ours("decode_request_json")} |
| encode result (server side) | ${ours("encode_output")} | | | |
${s ? "" : `\nSDK skipped: ${(c.sdk as { skipped?: string }).skipped}\n`}`;
}

/**
 * Time per training step (forward_backward + optim_step on a tiny batch of `local/tiny`) with
 * `latencyMs` added to every request, awaiting each call versus submitting both first.
 */
export async function benchPipelining(latencyMs = 100, steps = 6) {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-" });
  const server = await startLocalServer({ dataDir, faults: { latencyMs: [latencyMs, latencyMs] } });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const batch = [datum([1, 2, 3, 4], { target_tokens: [2, 3, 4, 5], weights: [1, 1, 1, 1] })];
    const timeSteps = async (pipelined: boolean) => {
      const ms: number[] = [];
      for (let i = 0; i < steps; i++) {
        const t0 = performance.now();
        if (pipelined) {
          const fb = training.forwardBackward(batch, "cross_entropy");
          const op = training.optimStep({ learning_rate: 1e-4 });
          await fb;
          await op;
        } else {
          await training.forwardBackward(batch, "cross_entropy");
          await training.optimStep({ learning_rate: 1e-4 });
        }
        ms.push(performance.now() - t0);
      }
      return median(ms.slice(1));
    };
    await timeSteps(false); // warm-up: jit compiles
    const awaited = await timeSteps(false);
    const pipelined = await timeSteps(true);
    return {
      latency_ms: latencyMs,
      awaited_ms: awaited,
      pipelined_ms: pipelined,
      ratio: pipelined / awaited,
    };
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
