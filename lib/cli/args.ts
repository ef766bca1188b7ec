/**
 * Small helpers shared by the command-line scripts: parse flags with `node:util` and validate
 * them with a zod schema, so a bad value is one line naming the flag, not a stack trace.
 *
 * @module
 */

import { parseArgs, type ParseArgsConfig } from "node:util";
import type { z } from "zod";

/** A user mistake on the command line: one `error:` line and a hint to `--help`, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** What a task is, for `--help` and for the hint after a usage mistake. */
export interface CliInfo {
  /** How it is run, e.g. `deno task train` (the hint says `<run> --help`). */
  run: string;
  /** What the task does, in a sentence or two: the first thing `--help` prints. */
  about: string;
  /** The usage text (`usage: …`), printed after `about`. */
  usage: string;
  /** More help printed after the usage (e.g. every setting), computed only when asked for. */
  more?: () => string;
}

/**
 * Joins a negative number to the string option before it (`--batch-size -1` becomes
 * `--batch-size=-1`), so that it reaches the option's range check instead of the parser's
 * "ambiguous" complaint.
 */
export function joinNegativeValues(
  args: readonly string[],
  options: NonNullable<ParseArgsConfig["options"]>,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = /^--([^=]+)$/.exec(args[i])?.[1];
    if (name && options[name]?.type === "string" && /^-\.?\d/.test(args[i + 1] ?? "")) {
      out.push(`${args[i]}=${args[++i]}`);
    } else out.push(args[i]);
  }
  return out;
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
    ({ values, positionals } = parseArgs({
      args: joinNegativeValues(args, options),
      options,
      strict: true,
      allowPositionals,
    }));
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

/** Whether the command line asks for help (`--help` or `-h` before a `--`). */
export function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * Runs a CLI main; the process always exits. `--help` anywhere prints what the task does and
 * its usage (exit 0) without running it. Whatever goes wrong ends as one `error:` line on
 * stderr, never a stack trace: a usage error adds a one-line hint to `--help` (exit 2); an
 * error the user caused elsewhere (a 4xx from a server, a taken port, a request that failed as
 * the client's fault) exits 2; anything else exits 1. `TINKERBENCH_DEBUG=1` adds the stack.
 * A promise rejected outside `main` (a background task) ends the same way.
 *
 * @example
 * await runCli(async () => { ... }, {
 *   run: "deno task my-script",
 *   about: "Does one thing well.",
 *   usage: "usage: deno task my-script [--flag X]",
 * });
 */
export async function runCli(main: () => Promise<void>, cli: CliInfo): Promise<never> {
  if (wantsHelp(Deno.args)) {
    // Straight to stdout: a task may have pointed console.log elsewhere (mcp's stdout is MCP).
    const bytes = new TextEncoder().encode(`${helpText(cli)}\n`);
    for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
    Deno.exit(0);
  }
  globalThis.addEventListener("unhandledrejection", (ev) => {
    ev.preventDefault();
    fail(ev.reason, cli);
  });
  try {
    await main();
  } catch (e) {
    fail(e, cli);
  }
  Deno.exit(0);
}

/** What `--help` prints: what the task does, its usage, and any more. */
export function helpText(cli: CliInfo): string {
  return [cli.about, cli.usage, cli.more?.()].filter(Boolean).join("\n\n");
}

/** Prints `e` as one line (plus the hint for a usage error) and exits. */
function fail(e: unknown, cli: CliInfo): never {
  if (e instanceof UsageError) {
    console.error(`error: ${oneLine(e.message)}\n(see ${cli.run} --help)`);
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
