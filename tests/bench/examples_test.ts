import { assert } from "../assert.ts";
import { EXAMPLES, readmeFirstCommand } from "../../bench/examples.ts";

Deno.test("bench examples: the first row runs the README's first command, read from the README", async () => {
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const first = readme.split("\n").slice(0, 6).join("\n");
  const args = readmeFirstCommand(first);
  assert.ok(args.includes("--max-steps"), `parsed: ${args.join(" ")}`);
  assert.deepEqual(EXAMPLES[0].train, args);
  assert.throws(() => readmeFirstCommand("# nothing here"), Error, "no `deno task train` command");
});
