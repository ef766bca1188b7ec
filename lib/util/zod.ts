/**
 * zod errors as one line for users: the first invalid field as `path: message`, and how many
 * more there are. The one formatter for every boundary (HTTP bodies, config files, run files).
 *
 * @module
 */

import type { z } from "zod";

/**
 * One line naming the first invalid field of a failed parse (`data[0].weights: …`), prefixed
 * with `where` when given, with `(+N more)` when several fields are wrong.
 *
 * @example
 * const r = Schema.safeParse(body);
 * if (!r.success) throw new UserInputError(formatZodError(r.error, "sample"));
 */
export function formatZodError(error: z.ZodError, where?: string): string {
  const issue = error.issues[0];
  const path = issue.path.reduce<string>(
    (acc, p) => typeof p === "number" ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p),
    "",
  );
  const more = error.issues.length > 1 ? ` (+${error.issues.length - 1} more)` : "";
  const field = path ? `${path}: ` : where ? "body: " : "";
  return `${where ? `${where}: ` : ""}${field}${issue.message}${more}`;
}
