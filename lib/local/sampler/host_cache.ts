/**
 * Keys and values on the host, laid out as the ONNX graph reads them (`../onnx/gpt_graph.ts`):
 * per layer keys `[R, H, hd, C]` (transposed) and values `[R, H, C, hd]`, for `R` rows of `C`
 * slots, slot `s` holding position `s`. A run's new keys and values have the same layout with
 * `C` = its token count, so one copy routine moves prompt caches to sample rows and a decode
 * step's token into its slot. The cache also keeps the attention bias of the next run: a
 * slot becomes visible to its row when it is written.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import { MASKED } from "../onnx/gpt_graph.ts";
import type { CacheEntries } from "./prefix_cache.ts";

/** Per-layer keys and values of `rows` rows × `slots` slots. */
export class HostKvCache {
  readonly keys: Float32Array[];
  readonly values: Float32Array[];
  /**
   * `[rows, slots + 1]`: 0 for written slots, {@link MASKED} for the others, and 0 in the last
   * column, the new token's own key in a one-token decode step.
   */
  readonly keyBias: Float32Array;
  readonly #heads: number;
  readonly #headDim: number;

  constructor(
    cfg: ModelConfig,
    readonly rows: number,
    readonly slots: number,
    data?: { keys: Float32Array[]; values: Float32Array[] },
  ) {
    this.#heads = cfg.nHeads;
    this.#headDim = cfg.dModel / cfg.nHeads;
    const size = rows * cfg.dModel * slots;
    const fresh = () => Array.from({ length: cfg.nLayers }, () => new Float32Array(size));
    this.keys = data?.keys ?? fresh();
    this.values = data?.values ?? fresh();
    this.keyBias = new Float32Array(rows * (slots + 1)).fill(MASKED);
    for (let r = 0; r < rows; r++) this.keyBias[r * (slots + 1) + slots] = 0;
  }

  /**
   * Copies `n` slots of row `srcRow` of `src` (from slot `srcAt`) into row `dstRow` of this
   * cache at slot `dstAt`, and makes them visible.
   */
  copySlots(
    src: HostKvCache,
    srcRow: number,
    srcAt: number,
    dstRow: number,
    dstAt: number,
    n: number,
  ): void {
    const h = this.#heads, hd = this.#headDim, cs = src.slots, cd = this.slots;
    for (let l = 0; l < this.keys.length; l++) {
      const sk = src.keys[l], dk = this.keys[l], sv = src.values[l], dv = this.values[l];
      for (let head = 0; head < h; head++) {
        const sRow = srcRow * h + head, dRow = dstRow * h + head;
        for (let j = 0; j < hd; j++) {
          const from = (sRow * hd + j) * cs + srcAt;
          const to = (dRow * hd + j) * cd + dstAt;
          if (n === 1) dk[to] = sk[from];
          else dk.set(sk.subarray(from, from + n), to);
        }
        const from = (sRow * cs + srcAt) * hd;
        dv.set(sv.subarray(from, from + n * hd), (dRow * cd + dstAt) * hd);
      }
    }
    this.keyBias.fill(0, dstRow * (cd + 1) + dstAt, dstRow * (cd + 1) + dstAt + n);
  }

  /**
   * A cache of `pick.length` rows and `slots` slots whose row `i` is row `pick[i]` of this one
   * (its first `min(slots, this.slots)` slots, visibility included).
   */
  remap(cfg: ModelConfig, pick: number[], slots: number): HostKvCache {
    const out = new HostKvCache(cfg, pick.length, slots);
    const n = Math.min(slots, this.slots);
    pick.forEach((src, dst) => {
      out.copySlots(this, src, 0, dst, 0, n);
      out.keyBias.set(
        this.keyBias.subarray(src * (this.slots + 1), src * (this.slots + 1) + n),
        dst * (slots + 1),
      );
    });
    return out;
  }
}

/** How the prefix cache holds host rows: plain arrays, read but never written after insert. */
export const HOST_ENTRIES: CacheEntries<HostKvCache> = {
  engine: "onnx",
  bytes: (c) => 4 * (c.keyBias.length + [...c.keys, ...c.values].reduce((n, a) => n + a.length, 0)),
  dispose: () => {},
  share: (c) => c,
};
