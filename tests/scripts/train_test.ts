import { join } from "node:path";
import { assert } from "../assert.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { parseRolloutRecord } from "../../lib/rl/records.ts";

import { finish, train } from "./train_process.ts";

Deno.test("train script: a bad value is one line naming the flag, the value and what is allowed", async () => {
  const home = await Deno.makeTempDir();
  const bad = await finish(train(["--method", "foo"], home));
  assert.equal(bad.code, 2);
  const first = bad.stderr.split("\n")[0];
  assert.match(
    first,
    /^error: scoring.method = "foo" \(from --method=foo\): .*"rl".*"opd".*"combine"/,
  );
  assert.doesNotMatch(bad.stderr, /\bat .*\.ts:\d+/, "no stack trace");

  const env = await finish(train(["--env-id", "game:GuessTheNumber-v0"], home));
  assert.equal(env.code, 2);
  assert.match(env.stderr, /^error: rollout.env_id: unknown environment .*Did you mean/);
  assert.doesNotMatch(env.stderr, /\bat .*\.ts:\d+/, "no stack trace");

  const typo = await finish(train(["--lora-rnk", "3"], home));
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /^error: unknown option --lora-rnk \(did you mean --lora-rank\?\)\n/);
  const twice = await finish(train(["--save-every=2", "--save-interval=3"], home));
  assert.match(twice.stderr, /^error: flags: --save-every and --save-interval both set/);
  const source = await finish(train(["--source", "agents"], home));
  assert.equal(source.code, 2);
  assert.match(source.stderr, /^error: --source: expected env or proxy, got "agents"/);
  const judge = await finish(train(
    ["--source", "proxy", "--proxy-host", "127.0.0.1", "--reward-source", "prm"],
    home,
  ));
  assert.equal(judge.code, 2);
  assert.match(judge.stderr, /^error: scoring.rl_reward prm: local\/games2 cannot judge/);
  const downsample = await finish(train(
    ["--source", "proxy", "--proxy-host", "127.0.0.1", "--advantages.downsample-to", "2"],
    home,
  ));
  assert.equal(downsample.code, 2);
  assert.match(
    downsample.stderr,
    /^error: advantages.downsample_to 2: proxy turns .*--source proxy\n/,
  );
});

Deno.test("train script: --help lists every setting by section, with its alias flags", async () => {
  const out = await finish(train(["--help"], await Deno.makeTempDir()));
  assert.equal(out.code, 0, out.stderr);
  for (const section of ["policy", "optimizer", "rollout", "advantages", "scoring", "judge"]) {
    assert.match(out.stdout, new RegExp(`^${section}: `, "m"));
  }
  assert.match(out.stdout, /^ {2}rollout.group_size = 4 \(integer in \[1, 1024\]; --group-size\)/m);
  assert.match(out.stdout, /--save-interval, --save-every/);
});

for (const mode of ["sync", "async"]) {
  Deno.test(`train script (${mode}): kill -9 mid-run, rerun the same command: it resumes, no step trained twice`, async () => {
    const home = await Deno.makeTempDir();
    const logDir = join(await Deno.makeTempDir(), "run");
    const args = [
      "--model-name=local/tiny",
      // A task local/tiny's random answers half solve: every step has something to train.
      "--env-id=debug:EvenFirstByte-v0",
      "--max-steps=8",
      "--save-interval=2",
      "--batch-size=1",
      "--group-size=2",
      "--max-tokens=8",
      `--log-path=${logDir}`,
      `--execution=${mode}`,
    ];
    const first = train(args, home);
    // Wait until step 3 is written (so step 2's checkpoint exists), then kill without warning.
    // Polled often: with the ONNX sampler an async step of local/tiny can take well under 100 ms.
    const metrics = join(logDir, "metrics.jsonl");
    for (let i = 0; i < 6000; i++) {
      if ((await readJsonl(metrics)).length >= 3) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    first.kill("SIGKILL");
    const killed = await finish(first);
    assert.notEqual(killed.code, 0);
    const before = (await readJsonl(metrics)).length;
    assert.ok(before >= 3 && before < 8, `killed mid-run (${before} rows)`);

    const second = await finish(train(args, home));
    assert.equal(second.code, 0, second.stderr);
    const resumedAt = Number(/resuming after step (\d+)/.exec(second.stdout)?.[1]);
    assert.ok(resumedAt >= 2 && resumedAt <= before, `resumed after step ${resumedAt}`);
    const rows = (await readJsonl(metrics)) as { step: number }[];
    assert.deepEqual(rows.map((r) => r.step), [1, 2, 3, 4, 5, 6, 7, 8]);
    const ckpts = (await readJsonl(join(logDir, "checkpoints.jsonl"))) as { kind: string }[];
    assert.equal(ckpts.at(-1)?.kind, "final");
    const iterations = [...Deno.readDirSync(join(logDir, "rollouts"))].map((e) => e.name).sort();
    assert.equal(iterations.length, 8);
    const report = await Deno.readTextFile(join(logDir, "report.html"));
    assert.match(report, /<script id="tb-data" type="application\/json">\{"title"/);
    // It ends with the held-out evaluation, also in eval.json and the report.
    const line = second.stdout.trimEnd().split("\n").at(-1)!;
    assert.match(line, /^held-out success: base [01]\.\d\d → trained [01]\.\d\d \(64 episodes\)$/);
    const evaluation = JSON.parse(await Deno.readTextFile(join(logDir, "eval.json")));
    assert.equal(evaluation.step, 8);
    assert.equal(evaluation.env_id, "debug:EvenFirstByte-v0");
    assert.ok(report.includes(line), "the report shows the line");
  });
}

Deno.test("train script: the same command with the same seed replays exactly (episodes, log-probs, metrics)", async () => {
  // Eight multi-turn episodes in flight: whether a turn finds an earlier one in the prefix
  // cache, and which requests share a sampler run, depend on timing; no number may.
  const runOnce = async () => {
    const logDir = join(await Deno.makeTempDir(), "run");
    const out = await finish(train([
      "--max-steps=2",
      "--batch-size=2",
      "--group-size=4",
      "--eval.episodes=0",
      `--log-path=${logDir}`,
    ], await Deno.makeTempDir()));
    assert.equal(out.code, 0, out.stderr);
    const rollouts = [1, 2].map((s) =>
      Deno.readTextFileSync(join(logDir, "rollouts", `iteration_00000${s}.jsonl`))
    );
    const metrics = (await readJsonl(join(logDir, "metrics.jsonl"))).map((row) =>
      Object.fromEntries(
        Object.entries(row as Record<string, unknown>).filter(([k]) => !k.startsWith("time/")),
      )
    );
    return { rollouts, metrics };
  };
  const a = await runOnce();
  const b = await runOnce();
  assert.ok(a.rollouts[0].includes('"logprobs"'), "the rollouts carry log-probs");
  assert.deepEqual(b.rollouts, a.rollouts);
  assert.deepEqual(b.metrics, a.metrics);
});

Deno.test("train script: Ctrl-C finishes the step, saves a checkpoint and exits cleanly", async () => {
  const home = await Deno.makeTempDir();
  const logDir = join(await Deno.makeTempDir(), "run");
  const p = train([
    "--model-name=local/tiny",
    "--env-id=debug:EvenFirstByte-v0",
    "--max-steps=500",
    "--batch-size=1",
    "--group-size=2",
    "--max-tokens=8",
    `--log-path=${logDir}`,
  ], home);
  const metrics = join(logDir, "metrics.jsonl");
  for (let i = 0; i < 600 && (await readJsonl(metrics)).length < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  p.kill("SIGINT");
  const out = await finish(p);
  assert.equal(out.code, 0, out.stderr);
  const steps = (await readJsonl(metrics)).length;
  assert.ok(steps < 500, "stopped early");
  assert.match(out.stdout, new RegExp(`interrupted after step ${steps}; rerun to resume`));
  const ckpts = (await readJsonl(join(logDir, "checkpoints.jsonl"))) as {
    kind: string;
    step: number;
  }[];
  assert.deepEqual(ckpts.map((c) => [c.kind, c.step]), [["interrupted", steps]]);
});

Deno.test("train script: GEM's key=value words are settings; other words are one-line errors", async () => {
  const home = await Deno.makeTempDir();
  const gem = await finish(train(["env_id=game:Nope-v0", "gamma=0.9"], home));
  assert.equal(gem.code, 2);
  assert.match(gem.stderr, /^error: rollout.env_id: unknown environment "game:Nope-v0"/);
  const word = await finish(train(["train"], home));
  assert.equal(word.code, 2);
  assert.match(word.stderr, /^error: unexpected argument "train"/);
});

for (const method of ["opd", "combine"]) {
  Deno.test(`train script: --method ${method} completes steps with metrics, checkpoints, rollouts and a report`, async () => {
    const home = await Deno.makeTempDir();
    const logDir = join(await Deno.makeTempDir(), "run");
    const out = await finish(train([
      `--method=${method}`,
      // The local model taught to use the hint. No local model learns GuessTheNumber with opd
      // or combine (its localModels, lib/envs/local_models.ts), so this plumbing test trains
      // anyway.
      "--model-name=local/hint",
      "--scoring.worse-teacher-steps=0",
      "--max-steps=2",
      "--batch-size=1",
      "--group-size=2",
      "--max-tokens=40",
      "--lora-rank=4",
      "--eval.episodes=4",
      `--log-path=${logDir}`,
    ], home));
    assert.equal(out.code, 0, out.stderr);
    const rows = (await readJsonl(join(logDir, "metrics.jsonl"))) as Record<string, number>[];
    assert.deepEqual(rows.map((r) => r.step), [1, 2]);
    // GuessTheNumber's feedback is the hindsight hint of every turn that has one.
    assert.ok(rows.every((r) => r["score/hint_accepted_frac"] > 0), JSON.stringify(rows[0]));
    assert.ok(rows.some((r) => r["score/opd_samples"] + r["score/opd+rl_samples"] > 0));
    assert.equal(rows[0]["score/w_opd"], 1);
    const turn = (await readJsonl(join(logDir, "rollouts", "iteration_000001.jsonl")))
      .flatMap((e) => parseRolloutRecord(e).turns)[0];
    assert.ok(turn.evidence.hint, "the hint is persisted with the rollout");
    const ckpts = (await readJsonl(join(logDir, "checkpoints.jsonl"))) as { kind: string }[];
    assert.equal(ckpts.at(-1)?.kind, "final");
    await Deno.stat(join(logDir, "report.html"));
    // The run's config is the nested, resolved one.
    const config = JSON.parse(await Deno.readTextFile(join(logDir, "config.json")));
    assert.equal(config.scoring.method, method);
    assert.equal(config.rollout.groups_per_batch, 1);
    assert.equal(config.optimizer.learning_rate, 1e-3);
    assert.equal(config.logging.log_path, logDir);
    assert.match(
      out.stdout,
      /held-out success: base [01]\.\d\d → trained [01]\.\d\d \(4 episodes\)\n$/,
    );
  });
}
