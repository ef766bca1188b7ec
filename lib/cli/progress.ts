/**
 * A progress bar for long jobs on stderr: redrawn in place on a terminal, one line every
 * `every` steps otherwise (CI logs, notebooks), so logs stay readable either way.
 *
 * @module
 */

/** What one line of a bar shows. */
export interface ProgressState {
  label: string;
  step: number;
  total: number;
  /** The step this process started from (after a resume, the checkpoint's step). */
  from: number;
  /** Seconds since this process started the bar. */
  secs: number;
  stats: Record<string, number | string>;
}

/**
 * One line of a bar, at most `columns` characters when given (a terminal's width; the stats
 * are cut first, then the label). Time left is measured from the steps done in this process:
 * after a resume at step 500 of 1,000, 10 steps in 100 s leave about 4,900 s, not 100 s.
 *
 * @example
 * progressLine({ label: "train", step: 510, total: 1000, from: 500, secs: 100, stats: {} });
 * // "train 510/1000 [############------------] 100s elapsed, ~4900s left"
 */
export function progressLine(s: ProgressState, columns?: number): string {
  const done = s.step - s.from;
  const left = done > 0 ? `~${((s.secs / done) * (s.total - s.step)).toFixed(0)}s left` : "";
  const time = `${s.secs.toFixed(0)}s elapsed${left ? `, ${left}` : ""}`;
  const fmt = (v: number | string) =>
    typeof v === "number" ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3)) : v;
  const parts = Object.entries(s.stats).map(([k, v]) => `${k} ${fmt(v)}`).join("  ");
  const bar = (width: number) => {
    const filled = Math.max(0, Math.min(width, Math.round((width * s.step) / s.total)));
    return ` [${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
  };
  const head = `${s.label} ${s.step}/${s.total}`;
  const line = `${head}${bar(24)} ${time}${parts ? `  ${parts}` : ""}`;
  if (columns === undefined || line.length <= columns) return line;
  // Too wide: cut the stats, then narrow the bar (to 4 cells), then drop it, then the label.
  const bare = `${head}${bar(24)} ${time}`;
  if (bare.length <= columns) return line.slice(0, columns - 1) + "…";
  const narrow = 24 - (bare.length - columns);
  if (narrow >= 4) return `${head}${bar(narrow)} ${time}`;
  const plain = `${head} ${time}`;
  return plain.length <= columns ? plain : plain.slice(plain.length - columns);
}

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
  readonly #from: number;
  readonly #tty = Deno.stderr.isTerminal();
  readonly #every: number;
  readonly #t0 = performance.now();
  readonly #encoder = new TextEncoder();

  /**
   * `from`: the step this process starts at (a resumed run's checkpoint step), so the time left
   * counts only the steps this process did.
   */
  constructor(
    label: string,
    total: number,
    { every, from }: { every?: number; from?: number } = {},
  ) {
    this.#label = label;
    this.#total = total;
    this.#from = from ?? 0;
    this.#every = every ?? Math.max(1, Math.round(total / 10));
  }

  /** Shows that `step` of the total are done, with stats such as `{ loss: 0.5 }`. */
  update(step: number, stats: Record<string, number | string> = {}): void {
    const state = {
      label: this.#label,
      step,
      total: this.#total,
      from: this.#from,
      secs: (performance.now() - this.#t0) / 1000,
      stats,
    };
    if (this.#tty) {
      const line = progressLine(state, terminalColumns());
      Deno.stderr.writeSync(this.#encoder.encode(`\r\x1b[2K${line}`));
    } else if (step % this.#every === 0 || step === this.#total) {
      console.error(progressLine(state));
    }
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

/** The terminal's width less one column (a line filling the last column wraps on some). */
function terminalColumns(): number | undefined {
  try {
    return Math.max(20, Deno.consoleSize().columns - 1);
  } catch {
    return undefined;
  }
}
