/**
 * The what-if of a recorded group from a run directory, for notebooks: the step's records read
 * as the viewer reads them, re-scored by lib/scoring/rescore.ts under the run's settings with
 * `change` applied, as before/after Polars frames (lib/viz/whatif.ts).
 *
 * @module
 */

import { basename } from "node:path";
import type { MethodSettings } from "../scoring/compose.ts";
import { type RecordedEpisode, whatIf, type WhatIfResult } from "../scoring/rescore.ts";
import type { AdvantageConfig } from "../advantages/pipeline.ts";
import { whatIfFrames } from "../viz/whatif.ts";
import type { DataFrame } from "../viz/frames.ts";
import { readEpisodes, type ViewerEpisode } from "./data.ts";
import { runSettings } from "./settings.ts";
import { getTokenizer } from "../tokenizers/mod.ts";
import { runPath } from "../rundir/mod.ts";

/** A change of a run's scoring settings: any field, and any advantage setting. */
export type SettingsChange = Partial<Omit<MethodSettings, "advantages">> & {
  advantages?: Partial<AdvantageConfig>;
};

/** What {@link whatIfRun} gives: the frames, the settings used and the full result. */
export interface WhatIfRun {
  /** Per-token advantages as trained. */
  before: DataFrame;
  /** Per-token advantages as re-scored. */
  after: DataFrame;
  /** The settings re-scored with. */
  settings: MethodSettings;
  /** The full result, per group. */
  result: WhatIfResult;
}

/**
 * Re-scores group `groupId` of the run in `dir` with its settings changed by `change`.
 *
 * @example
 * const { before, after, result } = await whatIfRun(".tinkerbench/runs/rl-demo", "s000001-g002", {
 *   advantages: { mode: "group_zscore" },
 * });
 * console.log(result.weightBefore, result.weightAfter);
 */
export async function whatIfRun(
  dir: string,
  groupId: string,
  change: SettingsChange = {},
): Promise<WhatIfRun> {
  const config = JSON.parse(await Deno.readTextFile(runPath(dir, "config")));
  const run = runSettings(config);
  if (!run) throw new Error(`${runPath(dir, "config")} is not a training config`);
  const step = /^s(\d+)-g\d+$/.exec(groupId);
  const range = step ? { after: Number(step[1]) - 1, upTo: Number(step[1]) } : {};
  let tokenizer = null;
  try {
    tokenizer = getTokenizer(config.policy?.tokenizer ?? config.policy?.model);
  } catch { /* tokens shown as ids */ }
  const episodes = await readEpisodes(dir, range, { tokenizer });
  const mine = episodes.find((e) => e.group_id === groupId);
  if (!mine) throw new Error(`no group ${groupId} in ${basename(dir)}'s rollouts`);
  const records = episodes.filter((e) => e.step === mine.step) as unknown as RecordedEpisode[];
  const settings: MethodSettings = {
    ...run.scoring,
    ...change,
    advantages: { ...run.scoring.advantages, ...change.advantages },
  };
  const result = whatIf(records, groupId, settings);
  const texts = (episode: number, turn: number) => {
    const e = episodes.find((x: ViewerEpisode) =>
      x.step === mine.step && x.group_id === groupId && x.episode === episode
    ) as RecordedEpisode | undefined;
    return e?.turns[turn]?.tokens?.text ?? null;
  };
  return { ...whatIfFrames(result, texts), settings, result };
}
