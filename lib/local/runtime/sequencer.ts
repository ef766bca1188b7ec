/**
 * Request ordering and retry dedupe, as the Tinker service does it.
 *
 * Each training client numbers its operations 1, 2, 3, … (`seq_id`), and the server runs a
 * model's work in that order whatever order the POSTs arrive in. A retry resends the same
 * `seq_id`: with an identical body it gets the original `request_id` back; with a different
 * body it is a conflict (409).
 *
 * @module
 */

import { UserInputError } from "../errors.ts";

/** SHA-256 of a request body, hex: identifies a retry of the same request. */
export async function fingerprint(body: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", body as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Remembers which `(key, seq_id)` pairs were submitted, with their body fingerprints.
 * Keys are model ids for training and sampling-session ids for sampling.
 */
export class RetryDedupe {
  #seen = new Map<string, Map<number, { fingerprint: string; requestId: string }>>();
  readonly #limit: number;

  /** `limit` bounds how many seq ids are remembered per key (oldest forgotten first). */
  constructor(limit = 10_000) {
    this.#limit = limit;
  }

  /**
   * The original request id if this is a retry, undefined if the pair is new.
   * Throws a 409 when the seq id was already used with a different body.
   */
  lookup(key: string, seqId: number, print: string): string | undefined {
    const hit = this.#seen.get(key)?.get(seqId);
    if (!hit) return undefined;
    if (hit.fingerprint !== print) {
      throw new UserInputError(
        `sequence number ${seqId} was already used by ${key} for a different request`,
        409,
      );
    }
    return hit.requestId;
  }

  /** Records a new submission. */
  remember(key: string, seqId: number, print: string, requestId: string): void {
    let m = this.#seen.get(key);
    if (!m) this.#seen.set(key, m = new Map());
    m.set(seqId, { fingerprint: print, requestId });
    if (m.size > this.#limit) m.delete(m.keys().next().value!);
  }

  /** Forgets a key (its model or session is gone). */
  forget(key: string): void {
    this.#seen.delete(key);
  }
}

/**
 * Releases one model's operations in `seq_id` order. An operation whose predecessors have not
 * arrived waits; if a gap lasts longer than `gapTimeoutMs` (a client that skipped a number),
 * the sequence moves on to the lowest waiting id so that the model never stalls forever.
 */
export class SeqOrder {
  #next: number;
  #waiting = new Map<number, () => void>();
  #gapTimer?: ReturnType<typeof setTimeout>;
  readonly #gapTimeoutMs: number;
  readonly #onSkip: (from: number, to: number) => void;

  constructor(
    { first = 1, gapTimeoutMs = 30_000, onSkip = () => {} }: {
      first?: number;
      gapTimeoutMs?: number;
      onSkip?: (from: number, to: number) => void;
    } = {},
  ) {
    this.#next = first;
    this.#gapTimeoutMs = gapTimeoutMs;
    this.#onSkip = onSkip;
  }

  /** The seq id the model expects next. */
  get next(): number {
    return this.#next;
  }

  /**
   * Runs `release` once every lower seq id has been released. Seq ids below the expected one
   * (e.g. 0 from clients that do not number) are released immediately.
   */
  enqueue(seqId: number, release: () => void): void {
    if (seqId < this.#next) {
      release();
      return;
    }
    if (this.#waiting.has(seqId)) {
      throw new UserInputError(`sequence number ${seqId} is already waiting`, 409);
    }
    this.#waiting.set(seqId, release);
    this.#drain();
  }

  /** Stops the gap timer (the model is being unloaded). */
  close(): void {
    clearTimeout(this.#gapTimer);
    this.#waiting.clear();
  }

  #drain(): void {
    clearTimeout(this.#gapTimer);
    this.#gapTimer = undefined;
    for (let run = this.#waiting.get(this.#next); run; run = this.#waiting.get(this.#next)) {
      this.#waiting.delete(this.#next);
      this.#next++;
      run();
    }
    if (this.#waiting.size > 0) {
      this.#gapTimer = setTimeout(() => {
        const lowest = Math.min(...this.#waiting.keys());
        this.#onSkip(this.#next, lowest);
        this.#next = lowest;
        this.#drain();
      }, this.#gapTimeoutMs);
      Deno.unrefTimer(this.#gapTimer as unknown as number);
    }
  }
}
