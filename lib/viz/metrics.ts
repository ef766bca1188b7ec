/**
 * Reading a run's `metrics.jsonl` (one JSON object per logged step) for frames and figures.
 * Nothing is skipped: a bad line is an error naming the file and line, because a silently
 * dropped step would make a curve look smoother than the run was.
 *
 * @module
 */

import { z } from "zod";

const RowSchema = z.record(z.string(), z.unknown());

/**
 * The rows of a JSON-lines metrics file. Only the newline that ends the last line may be
 * missing or present; any other empty line, bad JSON, or non-object value is an error
 * naming the line.
 */
export async function readMetricsJsonl(path: string): Promise<Record<string, unknown>[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new Error(`metrics file not found: ${path}`);
    throw e;
  }
  return parseMetricsJsonl(text, path);
}

/** {@link readMetricsJsonl} on text already read (`source` names it in errors). */
export function parseMetricsJsonl(text: string, source = "metrics"): Record<string, unknown>[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line, i) => {
    const where = `${source}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      const what = line.trim() === "" ? "empty line" : (e as Error).message;
      throw new Error(`${where}: not a JSON object (${what})`);
    }
    const parsed = RowSchema.safeParse(value);
    if (!parsed.success || Array.isArray(value)) {
      throw new Error(
        `${where}: expected a JSON object, got ${JSON.stringify(value)?.slice(0, 60)}`,
      );
    }
    return parsed.data;
  });
}

/**
 * The keys that hold a number in at least one row, in first-seen order, without `exclude`
 * (by default the step counter): the curves a run can plot.
 */
export function numericMetricKeys(
  rows: Record<string, unknown>[],
  { exclude = ["step"] }: { exclude?: string[] } = {},
): string[] {
  const keys: string[] = [];
  for (const r of rows) {
    for (const [k, v] of Object.entries(r)) {
      if (typeof v === "number" && !exclude.includes(k) && !keys.includes(k)) keys.push(k);
    }
  }
  return keys;
}
