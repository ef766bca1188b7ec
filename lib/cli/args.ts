/**
 * Small helpers shared by the command-line scripts: parse flags with `node:util` and validate
 * them with a zod schema, so a bad value is one line naming the flag, not a stack trace.
 *
 * @module
 */

import { parseArgs, type ParseArgsConfig } from "node:util";
import type { z } from "zod";

/** A user mistake on the command line: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Parses `args` with `options`, then validates the values with `schema` (keys are the flag
 * names). Throws {@link UsageError} with a one-line message on any problem.
 */
export function parseFlags<S extends z.ZodType>(
  args: string[],
  options: NonNullable<ParseArgsConfig["options"]>,
  schema: S,
): z.infer<S> {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const parsed = schema.safeParse(values);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const flag = issue.path.length ? `--${String(issue.path[0])}` : "arguments";
    const got = issue.path.length ? ` (got ${JSON.stringify(values[String(issue.path[0])])})` : "";
    throw new UsageError(`${flag}: ${issue.message}${got}`);
  }
  return parsed.data;
}

/** Runs a CLI main: usage errors print one line and exit 2; the process always exits. */
export async function runCli(main: () => Promise<void>, usage: string): Promise<never> {
  try {
    await main();
    Deno.exit(0);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`error: ${e.message}\n\n${usage}`);
      Deno.exit(2);
    }
    throw e;
  }
}
