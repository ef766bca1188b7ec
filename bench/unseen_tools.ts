/**
 * Does a local tool model call a tool it has never seen? 64 made-up tools (`generateUnseenToolTask`
 * from seed 2,000,000, a range no pretraining transcript draws from), declared as a rollout
 * declares them, each asked for once; one reply each, greedy and at temperature 1 (seeded). Per
 * reply, in increasing strictness: it parses as a call; it names a declared tool; it names the
 * asked tool; it names the asked tool with exactly the asked argument names (issue 43's bar: at
 * least 48 of 64 greedy); it is the asked call, values included. Five replies of each setting are
 * kept as text, so the figures can be read against what the model wrote. A third setting declares
 * only the asked tool (greedy): the copy without the choice among tools. Last, the copying itself:
 * 24 held-out transcripts of each recall kind (`recall:repeat`, `recall:names`, `recall:tools`,
 * `recall:records`), each reply given the conversation before it, greedy, counted exact and by
 * the share of tokens before the first error.
 *
 * Run: `deno task bench unseen_tools` (writes bench/results/unseen_tools.json; a few minutes).
 *
 * @module
 */

import { connectTinker } from "../lib/local/connect.ts";
import {
  generateUnseenToolTask,
  sameCall,
  sameNameAndArgumentNames,
} from "../lib/pretrain/unseen_tools.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../lib/tokenizers/mod.ts";
import { ModelInput } from "../lib/tinker/types.ts";
import type { SamplingClient } from "../lib/tinker/mod.ts";
import { playRecallTranscript, RECALL_IDS } from "../lib/pretrain/recall_transcripts.ts";
import { Rng } from "../lib/util/random.ts";
import { readSafetensors } from "../lib/local/safetensors.ts";

/** The bench's sizes (bench/smoke.ts shrinks them). */
export const UNSEEN_TOOLS_BENCH = {
  model: "local/tools",
  tasks: 64,
  firstSeed: 2_000_000,
  maxTokens: 96,
  /** Each setting's temperature, and whether every tool is declared or only the asked one. */
  settings: [
    { temperature: 0, declared: "all" },
    { temperature: 1, declared: "all" },
    { temperature: 0, declared: "asked_only" },
  ] as { temperature: number; declared: "all" | "asked_only" }[],
  /** Held-out transcripts of each recall kind (seeds from 9,000,000), answered greedily. */
  recallLists: 24,
  recallKinds: RECALL_IDS,
};

/** The counts of one setting, over `tasks` replies. */
export interface UnseenToolsCounts {
  temperature: number;
  /** Every tool of the task declared, or only the asked one (the call without a choice). */
  declared: "all" | "asked_only";
  tasks: number;
  parsed: number;
  declared_name: number;
  asked_name: number;
  asked_name_and_argument_names: number;
  /**
   * Tasks whose request names every asked argument (`… with count_file 'alpha'`), and of them
   * those with the asked name and argument names. The others' argument names are only in the
   * declaration (`Use the store tool with 'yes'.`).
   */
  arguments_named_in_request: number;
  asked_name_and_argument_names_named_in_request: number;
  /**
   * Tasks whose asked name or argument names have a `_`-piece the tokenizer spells in several
   * tokens (`lhxxj`, `zbf`: made-up letters), and of them those with the asked name and argument
   * names: such a copy is several tokens long, where a word's is one.
   */
  names_spelled_in_pieces: number;
  asked_name_and_argument_names_spelled_in_pieces: number;
  asked_call: number;
  examples: { prompt: string; reply: string }[];
}

/** Runs the bench on the local backend; the record for bench/results/unseen_tools.json. */
export async function benchUnseenTools(log: (m: string) => void): Promise<Record<string, unknown>> {
  const b = UNSEEN_TOOLS_BENCH;
  const tinker = await connectTinker({ dataDir: await Deno.makeTempDir() });
  const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer(b.model));
  const stop = [...renderer.stopSequences(), ...renderer.tokenizer.encode("</tool_call>")];
  const rows: UnseenToolsCounts[] = [];
  const recall: RecallCounts[] = [];
  try {
    const sampler = await tinker.service.createSamplingClient({ baseModel: b.model });
    for (const { temperature, declared } of b.settings) {
      const row: UnseenToolsCounts = {
        temperature,
        declared,
        tasks: b.tasks,
        parsed: 0,
        declared_name: 0,
        asked_name: 0,
        asked_name_and_argument_names: 0,
        arguments_named_in_request: 0,
        asked_name_and_argument_names_named_in_request: 0,
        names_spelled_in_pieces: 0,
        asked_name_and_argument_names_spelled_in_pieces: 0,
        asked_call: 0,
        examples: [],
      };
      for (let i = 0; i < b.tasks; i++) {
        const task = generateUnseenToolTask(b.firstSeed + i);
        const want = task.calls[0];
        const tools = declared === "all"
          ? task.tools
          : task.tools.filter((t) => t.name === want.name);
        const messages = renderer.declareTools([{ role: "user", content: task.prompt }], tools);
        const res = await sampler.sample({
          prompt: ModelInput.fromInts(renderer.buildGenerationPrompt(messages)),
          numSamples: 1,
          samplingParams: { maxTokens: b.maxTokens, temperature, seed: 1000 + i, stop },
        }).result();
        const tokens = res.sequences[0].tokens;
        const call = renderer.parseResponse(tokens).message.toolCalls?.[0];
        const args = call?.arguments as Record<string, unknown> | undefined;
        const ok = call !== undefined && typeof call.name === "string" &&
          args !== null && typeof args === "object" && !Array.isArray(args);
        if (ok) row.parsed++;
        if (ok && task.tools.some((t) => t.name === call.name)) row.declared_name++;
        const keys = Object.keys(want.arguments as Record<string, unknown>);
        // A whole word of the request (`note_word 'ok'` does not name `word`).
        const named = keys.every((k) => new RegExp(`(^|[ ,:])${k} `).test(task.prompt));
        if (named) row.arguments_named_in_request++;
        const spelled = [want.name, ...keys].some((n) =>
          n.split("_").some((piece) => renderer.tokenizer.encode(piece).length > 1)
        );
        if (spelled) row.names_spelled_in_pieces++;
        if (ok && call.name === want.name) {
          row.asked_name++;
          if (sameNameAndArgumentNames(call, want)) {
            row.asked_name_and_argument_names++;
            if (named) row.asked_name_and_argument_names_named_in_request++;
            if (spelled) row.asked_name_and_argument_names_spelled_in_pieces++;
          }
        }
        if (ok && sameCall(call, want)) row.asked_call++;
        if (row.examples.length < 5) {
          row.examples.push({ prompt: task.prompt, reply: renderer.tokenizer.decode(tokens) });
        }
      }
      log(
        `unseen_tools ${b.model} T=${temperature}, ${declared} declared: parsed ${row.parsed}, declared name ` +
          `${row.declared_name}, asked name ${row.asked_name}, + argument names ` +
          `${row.asked_name_and_argument_names} (${row.asked_name_and_argument_names_named_in_request} ` +
          `of the ${row.arguments_named_in_request} whose request names them, ` +
          `${row.asked_name_and_argument_names_spelled_in_pieces} of the ` +
          `${row.names_spelled_in_pieces} with names spelled in pieces), asked call ` +
          `${row.asked_call} (of ${b.tasks})`,
      );
      rows.push(row);
    }
    for (const kind of b.recallKinds) {
      const r = await recallCounts(sampler, renderer, kind, b.recallLists);
      log(
        `unseen_tools ${b.model} ${kind}: ${r.exact} of ${r.replies} replies exact, ` +
          `${r.prefix_tokens_pct.toFixed(1)} % of tokens before the first error`,
      );
      recall.push(r);
    }
  } finally {
    await tinker.close();
  }
  // Which weights were asked: the pretraining run's own record in the shipped file's header.
  const file = new URL(`../models/${b.model.replace("/", "_")}.safetensors`, import.meta.url);
  const { metadata } = await readSafetensors(file.pathname);
  return {
    benchmark: "unseen_tools",
    date: new Date().toISOString(),
    model: b.model,
    weights: metadata,
    load_average_end: Deno.loadavg(),
    rows,
    recall,
  };
}

/** How well the model answers one recall kind: the copying that naming a declared tool needs. */
export interface RecallCounts {
  kind: string;
  /** Transcripts asked (seeds 9,000,000 on). */
  lists: number;
  /** Their replies (a recall:tools or recall:records transcript asks one to three questions). */
  replies: number;
  /** Replies written exactly. */
  exact: number;
  /** Share of the replies' tokens written before each reply's first wrong token. */
  prefix_tokens_pct: number;
}

/**
 * Greedy replies to `lists` held-out transcripts of one recall kind, each reply given the
 * conversation before it (the transcript's own earlier replies), against the transcript's.
 */
async function recallCounts(
  sampler: SamplingClient,
  renderer: ChatMLRenderer<Tokenizer>,
  kind: string,
  lists: number,
): Promise<RecallCounts> {
  let replies = 0, exact = 0, right = 0, all = 0;
  for (let i = 0; i < lists; i++) {
    const seed = 9_000_000 + i;
    const t = playRecallTranscript(kind, seed, new Rng(seed), { renderer });
    for (let m = 0; m < t.messages.length; m++) {
      if (t.messages[m].role !== "assistant") continue;
      const want = renderer.tokenizer.encode(t.messages[m].content);
      const res = await sampler.sample({
        prompt: ModelInput.fromInts(renderer.buildGenerationPrompt(t.messages.slice(0, m))),
        numSamples: 1,
        samplingParams: {
          maxTokens: want.length + 2,
          temperature: 0,
          seed: i,
          stop: renderer.stopSequences(),
        },
      }).result();
      const got = res.sequences[0].tokens;
      let k = 0;
      while (k < want.length && got[k] === want[k]) k++;
      replies++;
      right += k;
      all += want.length;
      if (k === want.length) exact++;
    }
  }
  return { kind, lists, replies, exact, prefix_tokens_pct: all ? (100 * right) / all : 0 };
}
