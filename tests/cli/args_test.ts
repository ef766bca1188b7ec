import { z } from "zod";
import { assert } from "../assert.ts";
import {
  helpText,
  joinNegativeValues,
  parseFlags,
  UsageError,
  wantsHelp,
} from "../../lib/cli/args.ts";

const OPTIONS = { "batch-size": { type: "string" as const }, log: { type: "boolean" as const } };

Deno.test("cli args: a negative number after a string flag reaches the range check", () => {
  assert.deepEqual(joinNegativeValues(["--batch-size", "-1", "--log"], OPTIONS), [
    "--batch-size=-1",
    "--log",
  ]);
  assert.deepEqual(joinNegativeValues(["--batch-size", "-.5"], OPTIONS), ["--batch-size=-.5"]);
  // Not after a boolean flag, and not a flag-looking word.
  assert.deepEqual(joinNegativeValues(["--log", "-1"], OPTIONS), ["--log", "-1"]);
  const schema = z.object({
    "batch-size": z.coerce.number().int().min(1).optional(),
    log: z.boolean().optional(),
  });
  assert.throws(
    () => parseFlags(["--batch-size", "-1"], OPTIONS, schema),
    UsageError,
    '--batch-size: Too small: expected number to be >=1 (got "-1")',
  );
});

Deno.test("cli args: --help anywhere before --, and help is what it does, then the usage", () => {
  assert.equal(wantsHelp(["serve", "--help"]), true);
  assert.equal(wantsHelp(["-h"]), true);
  assert.equal(wantsHelp(["--", "--help"]), false);
  assert.equal(wantsHelp(["--helpful"]), false);
  assert.equal(
    helpText({
      run: "deno task x",
      about: "Does x.",
      usage: "usage: deno task x",
      more: () => "more",
    }),
    "Does x.\n\nusage: deno task x\n\nmore",
  );
});
