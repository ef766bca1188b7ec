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
  return parseCommandLine(args, options, schema, { positionals: false }).flags;
}

/**
 * {@link parseFlags} for commands that also take positional arguments (e.g. run directories):
 * the validated flags and the positionals in order.
 */
export function parseCommandLine<S extends z.ZodType>(
  args: string[],
  options: NonNullable<ParseArgsConfig["options"]>,
  schema: S,
  { positionals: allowPositionals = true }: { positionals?: boolean } = {},
): { flags: z.infer<S>; positionals: string[] } {
  let values: Record<string, unknown>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, options, strict: true, allowPositionals }));
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
  return { flags: parsed.data, positionals };
}

/**
 * Runs a CLI main; the process always exits. Whatever goes wrong ends as one line on stderr,
 * never a stack trace: a usage error prints the line and the usage (exit 2); an error the user
 * caused elsewhere (a 4xx from the server, a request that failed as the client's fault) its
 * message (exit 2); anything else its message (exit 1). `TINKERBENCH_DEBUG=1` adds the stack.
 * A promise rejected outside `main` (a background task) ends the same way.
 *
 * @example
 * await runCli(async () => { ... }, "usage: deno task my-script [--flag X]");
 */
export async function runCli(main: () => Promise<void>, usage: string): Promise<never> {
  globalThis.addEventListener("unhandledrejection", (ev) => {
    ev.preventDefault();
    fail(ev.reason, usage);
  });
  try {
    await main();
  } catch (e) {
    fail(e, usage);
  }
  Deno.exit(0);
}

/** Prints `e` as one line (plus the usage for a usage error) and exits. */
function fail(e: unknown, usage: string): never {
  if (e instanceof UsageError) {
    console.error(`error: ${e.message}\n\n${usage}`);
    Deno.exit(2);
  }
  console.error(`error: ${errorLine(e)}`);
  if (Deno.env.get("TINKERBENCH_DEBUG") && e instanceof Error && e.stack) console.error(e.stack);
  Deno.exit(isUserMistake(e) ? 2 : 1);
}

/**
 * One line for any thrown value: its message with line breaks folded, prefixed with the error's
 * class name only when the message alone would not say what happened (e.g. a bare TypeError).
 */
export function errorLine(e: unknown): string {
  if (!(e instanceof Error)) return oneLine(String(e));
  const known = /Error$/.test(e.name) && !["Error", "TypeError", "RangeError"].includes(e.name);
  const message = oneLine(e.message) || e.name;
  return known || e.name === "Error" ? message : `${e.name}: ${message}`;
}

/**
 * Whether an error is the user's doing: an HTTP 4xx answer (`status`) or a failed request of
 * category `user`, as the Tinker client's errors carry them.
 */
function isUserMistake(e: unknown): boolean {
  const { status, category } = (e ?? {}) as { status?: unknown; category?: unknown };
  return (typeof status === "number" && status >= 400 && status < 500) || category === "user";
}

function oneLine(s: string): string {
  return s.split("\n").map((l) => l.trim()).filter(Boolean).join(" ");
}
