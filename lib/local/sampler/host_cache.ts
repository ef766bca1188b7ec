/**
 * Keys and values on the host, laid out as the ONNX graph reads them (`../onnx/gpt_graph.ts`):
 * per layer keys `[R, H, hd, C]` (transposed) and values `[R, H, C, hd]`, for `R` rows of `C`
 * slots, slot `s` holding position `s`. A windowed model's cache is a ring instead (`ring`):
 * position `p` lives in slot `p mod C`, `C` = the window (`plan.ts`'s `slotBucket`), so
 * a 55k-token prompt holds the same memory as a short one, and `keyPositions` tells the graph
 * which position each slot holds. A run's new keys and values have the same layout with
 * `C` = its token count, so one copy routine moves prompt caches to sample rows and a decode
 * step's token into its slot. The cache also keeps the attention bias of the next run: a
 * slot becomes visible to its row when it is written.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import { MASKED } from "../onnx/mask.ts";
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
  /** `[rows, slots]` the position each slot holds, -1 for none (read by windowed models). */
  readonly keyPositions: BigInt64Array;
  /** Position `p` lives in slot `p mod slots` (windowed models), else in slot `p`. */
  readonly ring: boolean;
  readonly #heads: number;
  readonly #headDim: number;
  readonly #window: number;

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
    this.keyPositions = new BigInt64Array(rows * slots).fill(-1n);
    this.ring = cfg.attentionWindow !== undefined;
    this.#window = cfg.attentionWindow ?? slots;
  }

  /**
   * Writes `n` consecutive positions from `position` on into row `dstRow`: slots `srcAt ..
   * srcAt + n - 1` of row `srcRow` of `src` (a run's new keys and values), each to the slot its
   * position lives in.
   */
  write(
    src: HostKvCache,
    srcRow: number,
    dstRow: number,
    position: number,
    n: number,
    srcAt = 0,
  ): void {
    for (let done = 0; done < n;) {
      const slot = this.ring ? (position + done) % this.slots : position + done;
      const k = Math.min(n - done, this.slots - slot);
      this.copySlots(src, srcRow, srcAt + done, dstRow, slot, k);
      for (let i = 0; i < k; i++) {
        this.keyPositions[dstRow * this.slots + slot + i] = BigInt(position + done + i);
      }
      done += k;
    }
  }

  /**
   * Copies row `srcRow` of `src` into row `dstRow` as the state after its first `length`
   * positions: slots holding later positions stay masked. Throws for a ring that no longer holds
   * the window before `length` (see {@link holds}).
   */
  copyPrefix(src: HostKvCache, srcRow: number, dstRow: number, length: number): void {
    if (!this.ring) return this.copySlots(src, srcRow, 0, dstRow, 0, length);
    if (src.slots !== this.slots || !src.holds(srcRow, length)) {
      throw new Error(`HostKvCache: the ring does not hold the window before position ${length}`);
    }
    for (let slot = 0; slot < this.slots; slot++) {
      const p = src.keyPositions[srcRow * this.slots + slot];
      if (p < 0n || p >= BigInt(length)) continue;
      this.copySlots(src, srcRow, slot, dstRow, slot, 1);
      this.keyPositions[dstRow * this.slots + slot] = p;
    }
  }

  /**
   * Whether row `row` can continue at position `length`: a ring must still hold every position
   * of the window before it (`length − window + 1 .. length − 1`), and those only from its
   * slots; a plain cache holds every position it has written.
   */
  holds(row: number, length: number): boolean {
    if (!this.ring) return true;
    for (let p = Math.max(0, length - this.#window + 1); p < length; p++) {
      if (this.keyPositions[row * this.slots + (p % this.slots)] !== BigInt(p)) return false;
    }
    return true;
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
      out.keyPositions.set(
        this.keyPositions.subarray(src * this.slots, src * this.slots + n),
        dst * slots,
      );
    });
    return out;
  }
}

/** How the prefix cache holds host rows: plain arrays, read but never written after insert. */
export const HOST_ENTRIES: CacheEntries<HostKvCache> = {
  engine: "onnx",
  bytes: (c) =>
    4 * (c.keyBias.length + [...c.keys, ...c.values].reduce((n, a) => n + a.length, 0)) +
    8 * c.keyPositions.length,
  dispose: () => {},
  share: (c) => c,
};
