import { assert } from "../assert.ts";
import { numericMetricKeys, parseMetricsJsonl, readMetricsJsonl } from "../../lib/viz/mod.ts";

Deno.test("readMetricsJsonl: one object per line, bad lines are errors that name the line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-viz-" });
  try {
    const path = `${dir}/metrics.jsonl`;
    await Deno.writeTextFile(path, '{"step":1,"loss":2}\n{"step":2,"loss":1.5}\n');
    assert.deepEqual(await readMetricsJsonl(path), [{ step: 1, loss: 2 }, { step: 2, loss: 1.5 }]);
    await Deno.writeTextFile(path, '{"step":1}\n{"step":2,\n{"step":3}');
    await assert.rejects(() => readMetricsJsonl(path), new RegExp(`${path}:2: not a JSON object`));
    await assert.rejects(() => readMetricsJsonl(`${dir}/nope.jsonl`), /metrics file not found/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert.deepEqual(parseMetricsJsonl('{"a":1}'), [{ a: 1 }], "last newline optional");
  assert.throws(() => parseMetricsJsonl('{"a":1}\n\n{"a":2}\n'), /metrics:2: .*empty line/);
  assert.throws(
    () => parseMetricsJsonl("[1,2]\n"),
    /metrics:1: expected a JSON object, got \[1,2\]/,
  );
  assert.throws(() => parseMetricsJsonl('{"a":1}\n3\n'), /metrics:2: expected a JSON object/);
  assert.deepEqual(parseMetricsJsonl(""), []);
});

Deno.test("numericMetricKeys: keys with a number in some row, first-seen order, step excluded", () => {
  const rows = [{ step: 1, loss: 2, tag: "a" }, { step: 2, "eval/reward": 0.5, loss: null }];
  assert.deepEqual(numericMetricKeys(rows), ["loss", "eval/reward"]);
  assert.deepEqual(numericMetricKeys(rows, { exclude: [] }), ["step", "loss", "eval/reward"]);
});
