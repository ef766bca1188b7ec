/**
 * The notebooks' shared setup: the model (the trainer's default, `DEFAULT_MODEL`, unless
 * `TINKERBENCH_MODEL` says otherwise), its renderer, the local backend in-process (or the Tinker
 * cloud with `TINKER_API_KEY`), a LoRA training client with its sampler, GRPO groups of
 * GuessTheNumber played with that sampler, and the run viewer embedded in a cell's output.
 *
 * @module
 */

import { DEFAULT_MODEL } from "../lib/config/schema.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { getRenderer } from "../lib/renderers/mod.ts";
import { make } from "../lib/envs/mod.ts";
import { collectGroups, type Sampler, stepSeeds } from "../lib/rollout/mod.ts";
import type { Renderer } from "../lib/renderers/mod.ts";
import { type Episode, isSolved, rolloutRecords, type ScoredGroup } from "../lib/rl/mod.ts";
import { episodesViewerData, viewerEmbedHtml } from "../lib/viewer/mod.ts";

/** The model the notebooks sample from: the trainer's default unless `TINKERBENCH_MODEL` is set. */
export const MODEL = Deno.env.get("TINKERBENCH_MODEL") ?? DEFAULT_MODEL;
/** The environment the notebooks play. */
export const ENV_ID = "game:GuessTheNumber-v0-easy";
/** The model's chat format (and its tokenizer). */
export const renderer = getRenderer(MODEL);
/** The model's tokenizer. */
export const tokenizer = renderer.tokenizer;

/** Opens the backend, a LoRA training client on {@link MODEL} and a sampler of its weights. */
export async function openNotebook() {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-notebook-" });
  const tinker = await connectTinker({ dataDir });
  const training = await tinker.service.createLoraTrainingClient({
    baseModel: MODEL,
    rank: 8,
    seed: 0,
  });
  const sampler = await training.saveWeightsAndGetSamplingClient();
  console.log(`backend: ${tinker.backend} (${tinker.url}), model ${MODEL}`);
  return {
    tinker,
    training,
    sampler,
    /** Closes the backend and removes its temporary data. */
    async close() {
      await tinker.close();
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

/**
 * Groups `groups` (indexes) of training step `step` of a run seeded `seed`, as the trainer plays
 * them: the same env seeds and sampler seeds (`stepSeeds`) and the same runner
 * (`collectGroups`), so a notebook shows the episodes `deno task train` would play with this
 * sampler. Defaults: GuessTheNumber-easy, 4 episodes a group, 40 tokens a turn, temperature 1.
 */
export async function playGroups(
  sampler: Sampler,
  groups: number[],
  o: {
    groupSize?: number;
    seed?: number;
    step?: number;
    envId?: string;
    renderer?: Renderer;
    maxTokensPerTurn?: number;
    temperature?: number;
  } = {},
): Promise<Episode[][]> {
  const seeds = stepSeeds(o.seed ?? 0, o.step ?? 1);
  const envId = o.envId ?? ENV_ID;
  const played = await collectGroups(
    groups.map((g) => ({ makeEnv: () => make(envId), envSeed: seeds.envSeed(g), seedIndex: g })),
    sampler,
    {
      groupSize: o.groupSize ?? 4,
      maxConcurrency: 32,
      maxTokensPerTurn: o.maxTokensPerTurn ?? 40,
      temperature: o.temperature ?? 1,
      seed: seeds.samplerSeed,
      renderer: o.renderer ?? renderer,
      failures: { onError: "drop_episode" },
    },
  );
  return played.groups.map((g) => g.episodes);
}

/**
 * Shows groups of episodes in the run viewer (transcripts, the group view, filters), each
 * sampled token coloured by `advantages[group][episode][turn]` when given (else uncoloured:
 * nothing was scored).
 */
export async function showEpisodes(
  groups: Episode[][],
  { advantages, title = "episodes" }: { advantages?: number[][][]; title?: string } = {},
): Promise<void> {
  if (!("jupyter" in Deno)) {
    throw new Error("showEpisodes runs only inside the Deno Jupyter kernel");
  }
  const scored: ScoredGroup[] = groups.map((episodes, g) => ({
    group: { id: `g${g}`, envId: ENV_ID, envSeed: g, tags: [], episodes },
    kept: true,
    episodes: episodes.map((episode, e) => ({
      episode,
      turns: episode.turns.map((turn, t) => {
        const a = advantages?.[g]?.[e]?.[t];
        return {
          turn,
          evidence: { errors: [] },
          score: {
            rlReward: turn.reward,
            rlAdvantage: a ?? 0,
            dispatch: null,
            trained: a !== undefined,
          },
          advantages: a === undefined ? null : turn.actionTokens.map(() => a),
        };
      }),
    })),
  }));
  await showScoredGroups(scored, { title });
}

/**
 * Shows scored groups (as `composeAdvantages` returns them) in the run viewer: transcripts,
 * judge votes and hints, and each sampled token coloured by its advantage or, for OPD, by
 * teacher − student log-prob.
 */
export async function showScoredGroups(
  scored: ScoredGroup[],
  { title = "episodes", method = null }: { title?: string; method?: string | null } = {},
): Promise<void> {
  if (!("jupyter" in Deno)) {
    throw new Error("showScoredGroups runs only inside the Deno Jupyter kernel");
  }
  const records = rolloutRecords(0, scored, (e) => isSolved(e.totalReward));
  const data = episodesViewerData(title, records, tokenizer, { model: MODEL, method });
  await Deno.jupyter.display({
    "text/html": viewerEmbedHtml(data),
    "text/plain": `${records.length} episodes in the run viewer (open the notebook in a browser)`,
  }, { raw: true });
  // As lib/viz/jupyter.ts's helpers: let the output go out before the cell finishes.
  await new Promise((r) => setTimeout(r, 100));
}
