/**
 * Rollout upload (lib/openreward/rollout_upload.ts, lib/tracking/openreward_rollouts.ts) against a loopback server
 * that answers OpenReward's rollouts API as the `openreward` package calls it
 * (`GET /v1/environments/<owner>/<env>`, `POST /v1/rollouts` with `x-api-key`), and a training
 * run on a hosted-style `Org/Env` environment that uploads every episode.
 */

import { z } from "zod";
import { assert } from "../assert.ts";
import { RolloutUploader } from "../../lib/openreward/rollout_upload.ts";
import { openRolloutUploads, recordMessages } from "../../lib/tracking/openreward_rollouts.ts";
import { parseRolloutRecord, type RolloutRecord } from "../../lib/rl/records.ts";
import { loadTrainConfig } from "../../lib/config/mod.ts";
import { RunLog } from "../../lib/trainer/run_log.ts";

const KEY = "or-test-key";

// The package's events (openreward/models.py) after `_strip_none`: no key is null.
const Started = z.object({
  eventId: z.uuid(),
  timestamp: z.number().int(),
  runName: z.string(),
  step: z.number().int().optional(),
  environment: z.string().optional(),
  environment_id: z.string().optional(),
  rolloutName: z.string().optional(),
  split: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  run_info: z.object({ model_name: z.string() }).loose().optional(),
  eventType: z.literal("rollout"),
}).strict();
const Update = z.object({
  eventId: z.uuid(),
  timestamp: z.number().int(),
  rollout_info: z.object({ task_index: z.number().int() }).loose(),
  eventType: z.literal("rollout_update"),
}).strict();
const Message = z.object({
  eventId: z.uuid(),
  timestamp: z.number().int(),
  index: z.number().int(),
  rolloutEventId: z.uuid(),
  environment_id: z.string().optional(),
  type: z.enum([
    "reasoning",
    "tool_call",
    "tool_result",
    "user_message",
    "assistant_message",
    "system_message",
  ]),
  content: z.string().optional(),
  name: z.string().optional(),
  callId: z.string().optional(),
  reward: z.number().optional(),
  isFinished: z.boolean(),
  metadata: z.record(z.string(), z.unknown()),
  eventType: z.literal("message"),
}).strict();
const Body = z.object({ events: z.array(z.union([Started, Update, Message])).min(1) }).strict();

/** OpenReward's rollouts API, as far as the package uses it. */
class RolloutsServer {
  readonly batches: z.infer<typeof Body>["events"][] = [];
  failNext = 0;
  status = 503;
  #server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const env = /^\/v1\/environments\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && env) return Response.json({ id: `env-${env[1]}-${env[2]}` });
    if (req.method !== "POST" || url.pathname !== "/v1/rollouts") {
      return new Response("not found", { status: 404 });
    }
    if (this.failNext > 0) {
      this.failNext--;
      return new Response("down", { status: this.status });
    }
    if (req.headers.get("x-api-key") !== KEY) {
      return Response.json({ detail: "bad key" }, { status: 401 });
    }
    const parsed = Body.safeParse(await req.json());
    if (!parsed.success) return Response.json({ detail: parsed.error.message }, { status: 422 });
    this.batches.push(parsed.data.events);
    return Response.json({ ok: true });
  });

  get url(): string {
    return `http://127.0.0.1:${(this.#server.addr as Deno.NetAddr).port}`;
  }

  /** Every rollout received: its start event and its messages in order. */
  rollouts() {
    const events = this.batches.flat();
    return events.filter((e) => e.eventType === "rollout").map((start) => ({
      start: start as z.infer<typeof Started>,
      update: events.find((e): e is z.infer<typeof Update> =>
        e.eventType === "rollout_update" && e.eventId === start.eventId
      ),
      messages: events.filter((e): e is z.infer<typeof Message> =>
        e.eventType === "message" && e.rolloutEventId === start.eventId
      ),
    }));
  }

  close(): Promise<void> {
    return this.#server.shutdown();
  }
}

const EPISODE: RolloutRecord = parseRolloutRecord({
  schema_version: 2,
  step: 3,
  group_id: "s000003-g000",
  group_kept: true,
  env_id: "Acme/Coin",
  env_seed: 7,
  tags: ["Acme/Coin", "train"],
  episode: 1,
  total_reward: 1,
  success: true,
  stop_reason: "finished",
  turns: [0, 1].map((i) => ({
    observation: i === 0
      ? [{ role: "system", content: "Tools: flip" }, { role: "user", content: "Flip." }]
      : [{ role: "tool", content: "tails", toolCallId: "c0" }],
    action: {
      role: "assistant",
      content: i === 0 ? "" : "again",
      thinking: i === 0 ? "hmm" : undefined,
      toolCalls: [{ name: "flip", arguments: { times: i + 1 }, id: `c${i}` }],
    },
    next_state: i === 0
      ? [{ role: "tool", content: "tails", toolCallId: "c0" }]
      : [{ role: "tool", content: "heads", toolCallId: "c1" }],
    reward: i,
    ob_tokens: 1,
    ac_tokens: 1,
    mean_logprob: -1,
    stop_reason: "stop",
    sampler_version: 2,
    evidence: { errors: [] },
    score: { reward: i, rl_advantage: 0, dispatch: "rl", trained: true },
  })),
});

Deno.test("openreward upload: an episode's messages, tool calls and results, in order, with the turn rewards", () => {
  const m = recordMessages(EPISODE);
  assert.deepEqual(m.map((x) => [x.type, x.content, x.name ?? null, x.callId ?? null]), [
    ["system_message", "Tools: flip", null, null],
    ["user_message", "Flip.", null, null],
    ["reasoning", "hmm", null, null],
    ["tool_call", '{"times":1}', "flip", "c0"],
    ["tool_result", "tails", null, "c0"],
    ["assistant_message", "again", null, null],
    ["tool_call", '{"times":2}', "flip", "c1"],
    ["tool_result", "heads", null, "c1"],
  ]);
  assert.deepEqual(m.map((x) => x.reward ?? null), [null, null, null, null, 0, null, null, 1]);
  assert.deepEqual(m.map((x) => x.isFinished ?? false), [...Array(7).fill(false), true]);
});

Deno.test("openreward upload: start event alone, then rollout_info and the messages; 5xx retried; the package's event shapes", async () => {
  const srv = new RolloutsServer();
  try {
    const up = new RolloutUploader({
      apiKey: KEY,
      apiUrl: srv.url,
      webUrl: "https://openreward.example",
      backoffMs: 5,
      warn: (l) => assert.fail(l),
    });
    srv.failNext = 2;
    const messages = recordMessages(EPISODE);
    up.add({
      runName: "mix",
      rolloutName: "s000003-g000-e1",
      environment: "Acme/Coin",
      split: "train",
      step: 3,
      metadata: { episode: 1 },
      runInfo: { model_name: "local/tiny", peft_rank: 4 },
      rolloutInfo: { task_index: 7, current_step: 3 },
      messages,
    });
    await up.finish(5000);
    assert.deepEqual(up.counts, { sent: 1, failed: 0 });
    assert.equal(srv.batches[0].length, 1, "the start event goes alone, first");
    const [r] = srv.rollouts();
    assert.equal(r.start.runName, "mix");
    assert.equal(r.start.environment_id, "env-Acme-Coin");
    assert.equal(r.start.split, "train");
    assert.equal(r.update?.eventType, "rollout_update");
    assert.deepEqual(r.messages.map((x) => x.index), messages.map((_, i) => i));
    assert.deepEqual(r.messages.map((x) => x.type), messages.map((x) => x.type));
    assert.equal(up.urls[0], `https://openreward.example/rollout/${r.start.eventId}`);
  } finally {
    await srv.close();
  }
});

Deno.test("openreward upload: a rejected key is not retried, one warning; finish says how many were not sent", async () => {
  const srv = new RolloutsServer();
  const warnings: string[] = [];
  try {
    const up = new RolloutUploader({
      apiKey: "wrong",
      apiUrl: srv.url,
      webUrl: "https://openreward.example",
      backoffMs: 5,
      warn: (l) => warnings.push(l),
    });
    const r = {
      runName: "r",
      rolloutName: "x",
      environment: "Acme/Coin",
      split: "train",
      step: 1,
      metadata: {},
      runInfo: { model_name: "m" },
      rolloutInfo: { task_index: 0 },
      messages: recordMessages(EPISODE),
    };
    up.add(r);
    up.add({ ...r, rolloutName: "y" });
    await up.finish(5000);
    assert.deepEqual(up.counts, { sent: 0, failed: 2 });
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.match(
      warnings[0],
      /^warning: OpenReward rollout upload failed \(.*401.*\); training goes on/,
    );
    assert.match(warnings[1], /^warning: OpenReward: 2 rollouts not uploaded \(0 were\)/);
  } finally {
    await srv.close();
  }
});

Deno.test("openreward upload: a run's steps: every episode of an Org/Env environment in the rollout store, none of the others", async () => {
  const srv = new RolloutsServer();
  try {
    const runDir = await Deno.makeTempDir();
    const cfg = await loadTrainConfig({
      file: {
        path: "run.yaml",
        text: `model_name: local/tiny
lora_rank: 4
batch_size: 2
openreward_run_name: coin-run
environments:
  Acme/Coin: { num_rollouts: 2 }
  test:EvenFirstByte-v0: { num_rollouts: 2 }
  local/Coin: { base_url: "http://127.0.0.1:9", num_rollouts: 2 }
`,
      },
    });
    const uploads = openRolloutUploads(cfg, runDir, {
      env: { OPENREWARD_API_KEY: KEY, OPENREWARD_API_URL: srv.url },
      warn: (l) => assert.fail(l),
    })!;
    assert.ok(uploads);
    assert.equal(openRolloutUploads(cfg, runDir, { env: {} }), null, "no key, no upload");
    // The rollout store as the trainer writes it (RunLog.writeRollouts).
    const log = await RunLog.open(runDir);
    const episode = (step: number, env: string, i: number): RolloutRecord => ({
      ...EPISODE,
      step,
      group_id: `s${step}-g0`,
      episode: i,
      env_id: env,
      env_seed: 10 + i,
      tags: [env, "train"],
    });
    for (const step of [1, 2]) {
      await log.writeRollouts(step, [
        episode(step, "Acme/Coin", 0),
        episode(step, "Acme/Coin", 1),
        episode(step, "test:EvenFirstByte-v0", 0),
        episode(step, "local/Coin", 0),
      ]);
      uploads.addStep(step);
    }
    await uploads.finish(5000);
    const up = srv.rollouts();
    assert.deepEqual(
      up.map((r) => [r.start.rolloutName, r.start.environment, r.start.step]).sort(),
      [
        ["s1-g0-e0", "Acme/Coin", 1],
        ["s1-g0-e1", "Acme/Coin", 1],
        ["s2-g0-e0", "Acme/Coin", 2],
        ["s2-g0-e1", "Acme/Coin", 2],
      ],
    );
    for (const r of up) {
      assert.equal(r.start.runName, "coin-run");
      assert.equal(r.start.run_info?.model_name, "local/tiny");
      assert.equal(r.update?.rollout_info.task_index, 10 + Number(r.start.rolloutName!.at(-1)));
      assert.deepEqual(
        r.messages.map((m) => m.content),
        recordMessages(EPISODE).map((m) => m.content),
      );
    }
  } finally {
    await srv.close();
  }
});
