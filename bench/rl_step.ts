/**
 * What one RL step does to `local/tools` on `tool:GuessTheNumber-v0-easy`: 16 episodes (4 groups
 * of 4) from the base, group-centred advantages, one `importance_sampling` step with Adam; the mean
 * log-prob of the trained tokens with a positive and with a negative advantage, and of 24 format
 * player transcripts' moves, before and after the step; and malformed calls per episode over 64 new
 * episodes with the base and with the stepped weights (the same seeds). Three settings: every
 * advantage at lr 1e-3, only positive ones at lr 1e-3, every advantage at lr 1e-4. It measured why
 * RL on the tool game made malformed calls more frequent (models/README.md, "RL on the tool
 * GuessTheNumber").
 *
 * Run: `deno task bench rl_step` (writes bench/results/rl_step.json; about 6 minutes).
 *
 * @module
 */

import { computeAdvantages } from "../lib/advantages/mod.ts";
import { episodeTurnTokens, trajectoryToDatums } from "../lib/datums/mod.ts";
import { make } from "../lib/envs/registry.ts";
import type { MessageEnv } from "../lib/envs/types.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { playToolTranscript } from "../lib/pretrain/tool_transcripts.ts";
import { exampleDatum, transcriptExample } from "../lib/pretrain/transcripts.ts";
import type { Datum } from "../lib/protocol/mod.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import { getTokenizer, type Tokenizer } from "../lib/tokenizers/mod.ts";
import type { Episode } from "../lib/rl/types.ts";
import { runEpisode, type Sampler } from "../lib/rollout/mod.ts";
import type { TrainingClient } from "../lib/tinker/mod.ts";
import { TensorData } from "../lib/tinker/types.ts";
import { Rng } from "../lib/util/random.ts";

const MODEL = "local/tools";
const ENV = "tool:GuessTheNumber-v0-easy";
/** `local/tools`' chat format (its renderer), as pretraining writes its transcripts. */
const renderer = new ChatMLRenderer<Tokenizer>(getTokenizer(MODEL));
/** Transcripts whose log-probs are probed, and episodes played per policy (`--smoke`: fewer). */
export const RL_STEP_PROBE = {
  transcripts: 24,
  playEpisodes: 64,
  /** Episodes of the trained step, in groups of 4. */
  stepEpisodes: 16,
  maxTokensPerTurn: 96,
  maxTotalTokens: 1024,
};
/** The settings compared (`--smoke` keeps the first, see bench/smoke.ts). */
export const RL_STEP_SETTINGS = [
  { name: "every advantage, lr 1e-3", lr: 1e-3, positiveOnly: false },
  { name: "positive advantages only, lr 1e-3", lr: 1e-3, positiveOnly: true },
  { name: "every advantage, lr 1e-4", lr: 1e-4, positiveOnly: false },
];

/** Mean log-prob, under the training client's weights, of the tokens `pick` selects. */
async function meanLogprob(
  training: TrainingClient,
  data: Datum[],
  pick: (d: Datum, t: number) => boolean,
): Promise<number | null> {
  if (data.length === 0) return null; // nothing to measure (every advantage was 0)
  // A forward pass with cross_entropy gives per-token log-probs; RL datums get unit weights.
  const ce = data.map((d) => ({
    model_input: d.model_input,
    loss_fn_inputs: {
      target_tokens: d.loss_fn_inputs.target_tokens,
      weights: d.loss_fn_inputs.weights ??
        TensorData.fromArray(d.loss_fn_inputs.target_tokens.data.map(() => 1)),
    },
  }));
  const out = await training.forward(ce, "cross_entropy").result();
  let sum = 0, n = 0;
  data.forEach((d, i) => {
    out.loss_fn_outputs[i].logprobs.data.forEach((lp: number, t: number) => {
      if (pick(d, t)) [sum, n] = [sum + lp, n + 1];
    });
  });
  return n ? sum / n : null;
}

/** `n` episodes, four per task from seed `from` on, each with its own sampler seed. */
function play(sampler: Sampler, n: number, from: number): Promise<Episode[]> {
  return Promise.all(Array.from({ length: n }, async (_, i) => {
    const env = make(ENV) as MessageEnv;
    const { messages } = await env.reset(from + Math.floor(i / 4));
    return await runEpisode(env, messages, sampler, {
      maxTokensPerTurn: RL_STEP_PROBE.maxTokensPerTurn,
      maxTotalTokens: RL_STEP_PROBE.maxTotalTokens,
      renderer,
      temperature: 1,
      seed: from * 7 + i,
    });
  }));
}

function playStats(eps: Episode[]) {
  return {
    episodes: eps.length,
    success: eps.filter((e) => e.totalReward >= 1).length / eps.length,
    invalid_tool_calls_per_episode: eps.reduce((a, e) => a + (e.invalidToolCalls ?? 0), 0) /
      eps.length,
  };
}

/** Runs the three settings from fresh adapters; the record for the JSON. */
export async function benchRlStep(log: (m: string) => void): Promise<Record<string, unknown>> {
  const probe: Datum[] = [];
  for (let i = 0; i < RL_STEP_PROBE.transcripts; i++) {
    const t = await playToolTranscript(ENV, 900_000 + i, new Rng(i + 7), {
      renderer,
      bisectShare: 0.3,
    });
    probe.push(exampleDatum(transcriptExample(t, renderer)));
  }
  const trainedWeight = (d: Datum, t: number) => d.loss_fn_inputs.weights.data[t] > 0;
  const sign = (s: number) => (d: Datum, t: number) =>
    Math.sign(d.loss_fn_inputs.advantages.data[t]) === s;
  const tinker = await connectTinker({ dataDir: await Deno.makeTempDir() });
  const rows = [];
  try {
    for (const s of RL_STEP_SETTINGS) {
      log(`rl_step: ${s.name}`);
      const training = await tinker.service.createLoraTrainingClient({
        baseModel: MODEL,
        rank: 32,
        seed: 0,
      });
      const base = await training.saveWeightsAndGetSamplingClient().result();
      const eps = await play(base, RL_STEP_PROBE.stepEpisodes, 31);
      const groups = Array.from(
        { length: Math.ceil(eps.length / 4) },
        (_, g) => eps.slice(4 * g, 4 * g + 4),
      );
      const { advantages } = computeAdvantages(
        groups.map((g) => g.map((e) => ({ turnRewards: [e.totalReward] }))),
        { mode: "group_centered" },
      );
      const datums = groups.flatMap((g, gi) =>
        g.flatMap((e, ei) => {
          const a = advantages[gi][ei][0];
          const used = s.positiveOnly ? Math.max(a, 0) : a;
          return used === 0 ? [] : trajectoryToDatums(episodeTurnTokens(e, used));
        })
      );
      const measure = async () => ({
        probe_moves: await meanLogprob(training, probe, trainedWeight),
        positive_advantage_tokens: await meanLogprob(training, datums, sign(1)),
        negative_advantage_tokens: await meanLogprob(training, datums, sign(-1)),
      });
      const before = await measure();
      // Groups whose episodes all scored alike give no datums: then there is no step to take.
      if (datums.length > 0) {
        await training.forwardBackward(datums, "importance_sampling").result();
        await training.optimStep({ learning_rate: s.lr, weight_decay: 0 }).result();
      }
      const after = await measure();
      const stepped = await training.saveWeightsAndGetSamplingClient().result();
      rows.push({
        setting: s.name,
        datums: datums.length,
        mean_logprob: { before, after },
        play_base: playStats(await play(base, RL_STEP_PROBE.playEpisodes, 500)),
        play_after_step: playStats(await play(stepped, RL_STEP_PROBE.playEpisodes, 500)),
      });
      log(`rl_step: ${JSON.stringify(rows.at(-1))}`);
    }
  } finally {
    await tinker.close();
  }
  return { benchmark: "rl_step", date: new Date().toISOString(), model: MODEL, env: ENV, rows };
}
