/**
 * Reading run files: a JSONL file's rows, where a bad line is either an error naming the file (by
 * its name in the run directory) and the line, or, for readers that must go on (a listing of
 * many runs, the viewer), skipped and reported, so one corrupt line never hides the rest of a
 * file or the other runs. Reports never carry an absolute path.
 *
 * @module
 */

import { runFileLabel } from "./files.ts";

/** How {@link readJsonl} treats lines. */
export interface ReadJsonlOptions<T> {
  /** Checks a parsed line: the row, or why the line is not one. */
  check?: (value: unknown) => { ok: true; row: T } | { ok: false; why: string };
  /**
   * Where bad lines are reported (`metrics.jsonl line 4: not valid JSON (skipped)`), each then
   * left out; without it, a bad line is an error.
   */
  skipped?: string[];
}

/**
 * Reads a JSONL file (missing file: no rows). A last line without its newline is a write in
 * progress (or cut short by a crash): it is left out, and reported to `skipped` when given.
 *
 * @example
 * const skipped: string[] = [];
 * const rows = await readJsonl(runPath(dir, "metrics"), { skipped });
 * notes.push(...skipped);
 */
export async function readJsonl<T = unknown>(
  path: string,
  o: ReadJsonlOptions<T> = {},
): Promise<T[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  const rows: T[] = [];
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    const where = `${runFileLabel(path)} line ${i + 1}`;
    const bad = (why: string) => {
      if (!o.skipped) throw new Error(`${where}: ${why}`);
      o.skipped.push(`${where}: ${why} (skipped)`);
    };
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (i === lines.length - 1) o.skipped?.push(`${where}: cut short (skipped)`);
      else bad("not valid JSON");
      return;
    }
    if (!o.check) {
      rows.push(value as T);
      return;
    }
    const r = o.check(value);
    if (r.ok) rows.push(r.row);
    else bad(r.why);
  });
  return rows;
}

/**
 * Reads a JSON file (missing file: null); bad JSON is an error naming the file by its name in
 * the run directory.
 */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${runFileLabel(path)}: not valid JSON`);
  }
}
