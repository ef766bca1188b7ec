/**
 * A progress bar for long jobs on stderr: redrawn in place on a terminal, one line every
 * `every` steps otherwise (CI logs, notebooks), so logs stay readable either way.
 *
 * @module
 */

/**
 * Progress over a known number of steps with free-form stats.
 *
 * @example
 * const bar = new ProgressBar("train", 100);
 * bar.update(1, { loss: 0.53 });
 * bar.done();
 */
export class ProgressBar {
  readonly #label: string;
  readonly #total: number;
  readonly #tty = Deno.stderr.isTerminal();
  readonly #every: number;
  readonly #t0 = performance.now();
  readonly #encoder = new TextEncoder();

  constructor(label: string, total: number, { every }: { every?: number } = {}) {
    this.#label = label;
    this.#total = total;
    this.#every = every ?? Math.max(1, Math.round(total / 10));
  }

  /** Shows that `step` of the total are done, with stats such as `{ loss: 0.5 }`. */
  update(step: number, stats: Record<string, number | string> = {}): void {
    const width = 24;
    const filled = Math.round((width * step) / this.#total);
    const secs = (performance.now() - this.#t0) / 1000;
    const eta = step > 0 ? (secs / step) * (this.#total - step) : 0;
    const fmt = (v: number | string) =>
      typeof v === "number" ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3)) : v;
    const parts = Object.entries(stats).map(([k, v]) => `${k} ${fmt(v)}`).join("  ");
    const line = `${this.#label} ${step}/${this.#total} [${"#".repeat(filled)}${
      "-".repeat(width - filled)
    }] ${parts}  ${secs.toFixed(0)}s elapsed, ~${eta.toFixed(0)}s left`;
    if (this.#tty) Deno.stderr.writeSync(this.#encoder.encode(`\r\x1b[2K${line}`));
    else if (step % this.#every === 0 || step === this.#total) console.error(line);
  }

  /** Prints a line above the bar (a notice mid-run), which is drawn again at the next update. */
  note(line: string): void {
    if (this.#tty) Deno.stderr.writeSync(this.#encoder.encode(`\r\x1b[2K`));
    console.error(line);
  }

  /** Ends the bar's line. */
  done(): void {
    if (this.#tty) Deno.stderr.writeSync(this.#encoder.encode("\n"));
  }
}
