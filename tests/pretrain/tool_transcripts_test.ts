import { assert } from "../assert.ts";
import { Rng } from "../../lib/util/random.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { loadToolsTokenizer } from "../../lib/tokenizers/games.ts";
import type { Tokenizer } from "../../lib/tokenizers/types.ts";
import { runEpisode } from "../../lib/rollout/mod.ts";
import type { Sampler } from "../../lib/rollout/episode.ts";
import type { SampleResponse } from "../../lib/protocol/mod.ts";
import {
  isToolEnvId,
  makeToolEnv,
  playToolTranscript,
} from "../../lib/pretrain/tool_transcripts.ts";
import {
  TOOLS_PRETRAIN_MIX,
  transcriptExample,
  TranscriptStream,
} from "../../lib/pretrain/transcripts.ts";
import { boxedAsCall } from "../../lib/pretrain/tool_players.ts";
import { MISTAKE_KINDS, mistakeOf } from "../../lib/pretrain/tool_mistakes.ts";
import { formatToolCalls, parseAssistantText } from "../../lib/renderers/parse.ts";
import {
  generateUnseenToolTask,
  sameCall,
  sameNameAndArgumentNames,
  UNSEEN_TOOLS_ID,
  UnseenToolsEnv,
} from "../../lib/pretrain/unseen_tools.ts";

const renderer = new ChatMLRenderer<Tokenizer>(loadToolsTokenizer());
const TOOL_IDS = TOOLS_PRETRAIN_MIX.map((e) => e.envId).filter(isToolEnvId);

/** A sampler that replays given assistant messages, honouring stop token ids as a server does. */
function replay(texts: string[]): Sampler {
  let i = 0;
  return {
    sample(args) {
      const stop = (args.samplingParams?.stop ?? []) as number[];
      let tokens = renderer.tokenizer.encode(texts[i++]);
      const at = tokens.findIndex((t) => stop.includes(t));
      if (at >= 0) tokens = tokens.slice(0, at + 1);
      return Promise.resolve({
        sequences: [{ tokens, logprobs: tokens.map(() => -1), stop_reason: "stop" }],
      } as unknown as SampleResponse);
    },
  };
}

Deno.test("tool transcripts: token for token what a rollout of the same moves renders, tools declared (every tool environment)", async () => {
  for (const envId of TOOL_IDS) {
    const t = await playToolTranscript(envId, 3, new Rng(17), { renderer });
    const moves = t.messages.filter((m) => m.role === "assistant");
    const texts = moves.map((m) =>
      `${m.content}${formatToolCalls(m.content, m.toolCalls ?? [])}<|im_end|>`
    );
    const env = makeToolEnv(envId);
    const { messages } = await env.reset(3);
    const ep = await runEpisode(env, messages, replay(texts), {
      maxTokensPerTurn: 1024,
      maxTurns: moves.length,
      renderer,
      temperature: 1,
    });
    assert.equal(ep.turns.length, moves.length, envId);
    const last = ep.turns.at(-1)!;
    const rollout = [...last.observationTokens, ...last.actionTokens];
    const ex = transcriptExample(t, renderer);
    // The transcript ends with the message's <|im_end|>, which the rollout adds when it stops at
    // </tool_call>; everything before it is identical.
    assert.deepEqual(rollout, ex.tokens.slice(0, rollout.length), envId);
    assert.ok(ex.tokens.length - rollout.length <= 1, envId);
    assert.equal(ep.invalidToolCalls ?? 0, 0, envId);
    assert.equal(ep.failedToolCalls ?? 0, 0, envId);
  }
});

Deno.test("tool transcripts with mistakes: token for token a rollout of the same turns, mistakes answered as the rollout answers them and weighted 0", async () => {
  let parseErrors = 0, repeats = 0, mistakes = 0;
  for (const envId of ["tool:GuessTheNumber-v0-easy", "tool:WhoDunIt-v0-easy", UNSEEN_TOOLS_ID]) {
    for (let seed = 0; seed < 6; seed++) {
      const t = await playToolTranscript(envId, seed, new Rng(seed + 40), {
        renderer,
        mistakeShare: 0.4,
      });
      const turns = t.messages.filter((m) => m.role === "assistant");
      const texts = turns.map((m) =>
        `${m.content}${formatToolCalls(m.content, m.toolCalls ?? [])}<|im_end|>`
      );
      const env = makeToolEnv(envId);
      const { messages } = await env.reset(seed);
      const ep = await runEpisode(env, messages, replay(texts), {
        maxTokensPerTurn: 1024,
        maxTurns: turns.length,
        renderer,
        temperature: 1,
      });
      assert.equal(ep.turns.length, turns.length, `${envId} ${seed}`);
      const last = ep.turns.at(-1)!;
      const rollout = [...last.observationTokens, ...last.actionTokens];
      const ex = transcriptExample(t, renderer);
      assert.deepEqual(rollout, ex.tokens.slice(0, rollout.length), `${envId} ${seed}`);
      // Each mistake's tokens weigh 0; each move's body and <|im_end|> weigh 1.
      t.messages.forEach((m, i) => {
        if (m.role !== "assistant") return;
        const from = renderer.buildSupervisedExample(t.messages.slice(0, i)).tokens.length;
        const to = renderer.buildSupervisedExample(t.messages.slice(0, i + 1)).tokens.length;
        const trained = ex.weights.slice(from, to).reduce((a, w) => a + w, 0);
        if (t.mistakes?.includes(i)) assert.equal(trained, 0, `${envId} ${seed} message ${i}`);
        else assert.ok(trained > 0, `${envId} ${seed} message ${i}`);
      });
      // It ends with a trained move, never with a mistake (an episode the environment ended on
      // a mistake before any move is played again without mistakes: unseen tools, seed 3).
      assert.ok(!t.mistakes?.includes(t.messages.length - 1), `${envId} ${seed}`);
      assert.equal(t.messages.at(-1)!.role, "assistant");
      mistakes += t.mistakes?.length ?? 0;
      parseErrors += ep.invalidToolCalls ?? 0;
      repeats += t.messages.filter((m) => m.content.startsWith("You already guessed")).length;
    }
  }
  assert.ok(
    mistakes >= 10 && parseErrors > 0 && repeats > 0,
    `${mistakes} ${parseErrors} ${repeats}`,
  );
});

Deno.test("tool mistakes: malformed calls fail to parse, a call left out parses as text", () => {
  const move = {
    role: "assistant" as const,
    content: "Above 0, below 11.",
    toolCalls: [{ name: "guess", arguments: { number: 5 } }],
  };
  for (const kind of MISTAKE_KINDS) {
    const wrong = mistakeOf(move, kind);
    assert.equal(wrong.toolCalls, undefined, kind);
    const parsed = parseAssistantText(wrong.content, true);
    assert.equal(parsed.message.toolCalls?.length ?? 0, 0, kind);
    const malformed = kind !== "no_call";
    assert.equal(parsed.error !== undefined, malformed, `${kind}: ${parsed.error}`);
  }
  assert.equal(
    mistakeOf(move, "unclosed_json").content,
    'Above 0, below 11.\n<tool_call>\n{"name": "guess", "arguments": {"number": 5}\n</tool_call>',
  );
});

Deno.test("tool transcripts: every move is a valid call the environment runs, within the context", async () => {
  const ts = await new TranscriptStream(5, TOOLS_PRETRAIN_MIX, { renderer, bisectShare: 0.3 })
    .next(150);
  const seen = new Set(ts.map((t) => t.envId));
  assert.ok(seen.has(UNSEEN_TOOLS_ID) && seen.has("tool:WhoDunIt-v0-easy"));
  for (const t of ts.filter((t) => isToolEnvId(t.envId))) {
    assert.ok(transcriptExample(t, renderer).tokens.length <= 1025);
    assert.equal(t.messages[0].role, "system");
    assert.match(t.messages[0].content, /^# Tools/);
    for (const m of t.messages.filter((m) => m.role === "assistant")) {
      assert.equal(m.toolCalls?.length, 1, JSON.stringify(m));
    }
    for (const r of t.reasons) {
      assert.ok(!["tool_error", "no_tool_call"].includes(r), `${t.envId}: ${r}`);
    }
  }
});

Deno.test("tool players: boxed moves become the games' tool calls", () => {
  assert.deepEqual(boxedAsCall("GuessTheNumber", "Above 3, below 11. \\boxed{7}"), {
    role: "assistant",
    content: "Above 3, below 11.",
    toolCalls: [{ name: "guess", arguments: { number: 7 } }],
  });
  assert.deepEqual(boxedAsCall("TowerofHanoi", "\\boxed{A C}").toolCalls, [
    { name: "move", arguments: { from: "A", to: "C" } },
  ]);
  assert.deepEqual(boxedAsCall("Minesweeper", "\\boxed{flag 2 3}").toolCalls, [
    { name: "flag", arguments: { row: 2, col: 3 } },
  ]);
  assert.deepEqual(boxedAsCall("Mastermind", "\\boxed{1 4 2}").toolCalls, [
    { name: "guess", arguments: { code: [1, 4, 2] } },
  ]);
});

Deno.test("unseen tools: seeded tasks name their values, and only the asked call earns the reward", () => {
  assert.deepEqual(generateUnseenToolTask(9), generateUnseenToolTask(9));
  const names = new Set<string>();
  for (let seed = 0; seed < 200; seed++) {
    const task = generateUnseenToolTask(seed);
    for (const c of task.calls) {
      names.add(c.name);
      assert.ok(task.tools.some((t) => t.name === c.name));
      for (const v of Object.values(c.arguments as Record<string, unknown>)) {
        if (typeof v !== "boolean") assert.ok(task.prompt.includes(String(v)), task.prompt);
      }
    }
  }
  assert.ok(names.size > 100, `only ${names.size} distinct tool names`);
  const env = new UnseenToolsEnv();
  env.reset(4);
  const want = env.task!.calls[0];
  const right = env.step({ role: "assistant", content: "", toolCalls: [want] });
  assert.equal(right.reward, 1 / env.task!.calls.length);
  env.reset(4);
  const wrong = env.step({
    role: "assistant",
    content: "",
    toolCalls: [{ name: "nope", arguments: {} }],
  });
  assert.equal(wrong.reward, 0);
  assert.equal(wrong.failedToolCalls, 1);
  assert.ok(sameCall({ name: "a", arguments: { x: 1 } }, { name: "a", arguments: { x: 1 } }));
  assert.ok(!sameCall({ name: "a", arguments: { x: 2 } }, { name: "a", arguments: { x: 1 } }));
  const asked = { name: "a", arguments: { x: 1, y: "b" } };
  assert.ok(sameNameAndArgumentNames({ name: "a", arguments: { y: "c", x: 2 } }, asked));
  assert.ok(!sameNameAndArgumentNames({ name: "a", arguments: { x: 1 } }, asked));
  assert.ok(!sameNameAndArgumentNames({ name: "a", arguments: { x: 1, z: "b" } }, asked));
  assert.ok(!sameNameAndArgumentNames({ name: "b", arguments: { x: 1, y: "b" } }, asked));
  assert.ok(!sameNameAndArgumentNames({ name: "a", arguments: [1, "b"] }, asked));
});
