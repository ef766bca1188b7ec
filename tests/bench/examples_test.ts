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

Deno.test("bench examples: a run of some rows keeps the others and drops rows no example has", async () => {
  const { benchExamples } = await import("../../bench/examples.ts");
  const kept = { name: EXAMPLES[1].name, command: "x", measured_by_hand: [1] };
  const out = await benchExamples(() => {}, "no example is named this", {
    why: "a note",
    examples: [{ name: "a removed example" }, kept],
  });
  assert.equal(out.why, "a note");
  assert.deepEqual(out.examples, [kept]);
});
