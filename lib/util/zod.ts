/**
 * zod errors as one line for users: each issue as `path message`, joined by `; `.
 *
 * @module
 */

import type { z } from "zod";

/**
 * One line naming every invalid field of a failed parse.
 *
 * @example
 * const r = Schema.safeParse(body);
 * if (!r.success) throw new UserInputError(`sample: ${formatZodError(r.error)}`);
 */
export function formatZodError(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join(".") + " " : ""}${i.message}`)
    .join("; ");
}
