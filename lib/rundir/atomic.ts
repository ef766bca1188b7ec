/**
 * Writes that a crash cannot leave half done: a whole file replaced by write-then-rename (with
 * fsync), and JSONL lines appended whole, each line in one write. A reader sees the old file or
 * the new one, never a mix, and a line is either all there or (cut by a crash mid-write) the
 * last one, which {@link repairTornLine} removes.
 *
 * @module
 */

import { dirname } from "node:path";

/**
 * Replaces `path` with `text`: written to a temporary file beside it, fsynced, renamed over it
 * (atomic on POSIX), then the directory fsynced so the rename itself survives a power cut.
 *
 * @example
 * await writeFileAtomic(runPath(dir, "status"), JSON.stringify(status) + "\n");
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${Deno.pid}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    await writeAll(file, new TextEncoder().encode(text));
    await file.sync();
  } finally {
    file.close();
  }
  try {
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
  await syncDir(dirname(path));
}

/** Writes `value` as indented JSON with {@link writeFileAtomic}. */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(value, null, 2) + "\n");
}

/**
 * Appends rows to a JSONL file, one JSON line each, all in one write to a file opened for
 * appending, so lines of two writers never interleave within a line.
 */
export async function appendJsonLines(path: string, rows: unknown[]): Promise<void> {
  if (rows.length === 0) return;
  const bytes = new TextEncoder().encode(rows.map((r) => JSON.stringify(r) + "\n").join(""));
  const file = await Deno.open(path, { append: true, create: true });
  try {
    await writeAll(file, bytes);
  } finally {
    file.close();
  }
}

/**
 * Cuts a JSONL file back to its last whole line: a crash mid-append leaves a last line with no
 * newline (or not valid JSON), and the next append would glue a good row onto it. Returns the
 * bytes removed (0 when the file ends whole or is missing).
 */
export async function repairTornLine(path: string): Promise<number> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return 0;
    throw e;
  }
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] !== 0x0a) {
    end = bytes.lastIndexOf(0x0a) + 1; // after the last newline, or 0
  }
  // A whole line that is still not JSON was cut where a newline happened to be written.
  const text = new TextDecoder().decode(bytes.subarray(0, end));
  const lines = text.split("\n");
  const last = lines.at(-2);
  if (last !== undefined && last.trim() !== "" && !isJson(last)) {
    end -= new TextEncoder().encode(last + "\n").length;
  }
  if (end === bytes.length) return 0;
  await writeFileAtomic(path, new TextDecoder().decode(bytes.subarray(0, end)));
  return bytes.length - end;
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await file.write(bytes.subarray(at));
}

async function syncDir(dir: string): Promise<void> {
  // Not every system lets a directory be opened for syncing (Windows); the rename is done anyway.
  try {
    const d = await Deno.open(dir, { read: true });
    try {
      await d.sync();
    } finally {
      d.close();
    }
  } catch {
    // best effort: the data itself was fsynced before the rename
  }
}
