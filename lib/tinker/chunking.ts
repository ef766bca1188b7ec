/**
 * Large forward/forward_backward calls are split into chunks within the server's limits
 * (`fwdbwd_max_chunk_len` datums, `fwdbwd_max_chunk_bytes_count` estimated bytes), and the
 * chunk results are merged back as the official SDK does: outputs concatenated in order,
 * metrics reduced by the suffix of their `name:reduction` key.
 *
 * @module
 */

import type { Datum, ForwardBackwardOutput } from "../protocol/mod.ts";

/** The server's chunk limits, with the SDK's defaults. */
export interface ChunkLimits {
  /** Datums per request at most. */
  maxDatums: number;
  /** Estimated request bytes at most. */
  maxBytes: number;
}

/** SDK 0.25 defaults of the client config. */
export const DEFAULT_CHUNK_LIMITS: ChunkLimits = { maxDatums: 1024, maxBytes: 5_000_000 };

/** A rough wire size of a datum, like the SDK's estimate: 10 bytes a token or tensor value. */
export function estimateDatumBytes(d: Datum): number {
  let n = 0;
  for (const c of d.model_input.chunks) n += c.type === "encoded_text" ? c.tokens.length : 1;
  for (const t of Object.values(d.loss_fn_inputs)) n += t.data.length;
  return n * 10;
}

/** Splits data into consecutive chunks within the limits (a datum larger than the byte limit goes alone). */
export function chunkData(data: Datum[], limits: ChunkLimits): Datum[][] {
  const chunks: Datum[][] = [];
  let current: Datum[] = [], bytes = 0;
  for (const d of data) {
    const size = estimateDatumBytes(d);
    if (
      current.length > 0 && (current.length >= limits.maxDatums || bytes + size > limits.maxBytes)
    ) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(d);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Merges chunk results: outputs concatenated; metrics by reduction (`sum`, `min`, `max`,
 * `mean` and `slack` weighted by each chunk's datum count). Keys with another reduction are
 * dropped, as the SDK does.
 */
export function mergeForwardBackwardOutputs(parts: ForwardBackwardOutput[]): ForwardBackwardOutput {
  if (parts.length === 1) return parts[0];
  const metrics: Record<string, number> = {};
  const total = parts.reduce((n, p) => n + p.loss_fn_outputs.length, 0);
  const keys = new Set(parts.flatMap((p) => Object.keys(p.metrics)));
  for (const key of keys) {
    const reduction = key.split(":").at(-1);
    const values = parts.filter((p) => key in p.metrics).map((p) => ({
      v: p.metrics[key],
      n: p.loss_fn_outputs.length,
    }));
    switch (reduction) {
      case "sum":
        metrics[key] = values.reduce((a, x) => a + x.v, 0);
        break;
      case "min":
        metrics[key] = Math.min(...values.map((x) => x.v));
        break;
      case "max":
        metrics[key] = Math.max(...values.map((x) => x.v));
        break;
      case "mean":
      case "slack":
        metrics[key] = values.reduce((a, x) => a + x.v * x.n, 0) / total;
        break;
    }
  }
  return {
    loss_fn_output_type: parts[0].loss_fn_output_type,
    loss_fn_outputs: parts.flatMap((p) => p.loss_fn_outputs),
    metrics,
  };
}
