import { assert } from "../assert.ts";
import { ConfigError, listConfigFields, loadTrainConfig } from "../../lib/config/mod.ts";
import { FieldError, validateField } from "../../lib/runs/fields.ts";
import { finish, train } from "../scripts/train_process.ts";

const HUGE = 2 ** 53 - 1;

Deno.test("ranges: every numeric setting has both bounds in its schema", () => {
  const numeric = listConfigFields().filter((f) =>
    /^(integer|number)\b|to (integer|number)/.test(f.type)
  );
  assert.ok(numeric.length >= 40, `${numeric.length} numeric settings`);
  const open = numeric.filter((f) => !/ in [[(]-?[\d.e+-]+, -?[\d.e+-]+\]/.test(f.type));
  assert.deepEqual(open.map((f) => `${f.path}: ${f.type}`), [], "settings without a range");
});

Deno.test("ranges: flags, a config file and env variables refuse a value out of range in one line", async () => {
  const refused = async (p: Promise<unknown>, line: RegExp) =>
    await assert.rejects(p, (e: Error) => {
      assert.ok(e instanceof ConfigError);
      assert.ok(!e.message.includes("\n"), "one line");
      assert.match(e.message, line);
      return true;
    });
  await refused(
    loadTrainConfig({ flags: { "max-steps": String(HUGE) } }),
    /^max_steps = 9007199254740991 \(from --max-steps=9007199254740991\): out of range: max_steps is an integer in \[1, 1000000\]$/,
  );
  await refused(
    loadTrainConfig({ file: { path: "r.yaml", text: `group_size: ${HUGE}\n` } }),
    /^rollout.group_size = 9007199254740991 \(from config file r.yaml\): out of range: rollout.group_size is an integer in \[1, 1024\]$/,
  );
  await refused(
    loadTrainConfig({ env: { TINKERBENCH_TEMPERATURE: "1e308" } }),
    /^rollout.temperature = 1e\+308 .*: out of range: rollout.temperature is a number in \[0, 10\]$/,
  );
  await refused(
    loadTrainConfig({ overrides: ["w_opd=1e308"] }),
    /^scoring.w_opd = 1e\+308 .*: out of range: scoring.w_opd is a number in \[0, 100\]$/,
  );
  await refused(
    loadTrainConfig({ file: { path: "r.yaml", text: "environments: { a: { weight: 1e308 } }" } }),
    /^environments.a.weight = 1e\+308 .*: out of range: environments.a.weight is a number in \(0, 1000000\]$/,
  );
  await refused(
    loadTrainConfig({ overrides: ["advantages.non_final_turn_reward=-1e30"] }),
    /out of range: advantages.non_final_turn_reward is a number in \[-1000, 1000\], or null$/,
  );
  // The bounds themselves are in range.
  const edge = await loadTrainConfig({ flags: { "max-steps": "1000000", temperature: "10" } });
  assert.equal(edge.max_steps, 1_000_000);
});

Deno.test("ranges: the run API reads the same range", () => {
  for (
    const [name, value, allowed] of [
      ["total_steps", HUGE, "an integer in [1, 1000000]"],
      ["group_size", HUGE, "an integer in [1, 1024]"],
      ["temperature", 1e308, "a number in [0, 10]"],
      ["w_rl", "1e308", "a number in [0, 100]"],
    ] as const
  ) {
    assert.throws(
      () => validateField(name, value),
      (e) =>
        e instanceof FieldError && e.status === 400 &&
        e.message.startsWith(`${name} must be ${allowed} (got `),
    );
  }
  assert.equal(validateField("group_size", "1024"), 1024);
});

Deno.test("ranges: `deno task train` refuses them in one line, exit 2, before anything runs", async () => {
  const home = await Deno.makeTempDir();
  const r = await finish(train(["--temperature", "1e308"], home));
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr.split("\n")[0],
    "error: rollout.temperature = 1e+308 (from --temperature=1e308): out of range: " +
      "rollout.temperature is a number in [0, 10]",
  );
  await Deno.remove(home, { recursive: true });
});
