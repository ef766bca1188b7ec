/**
 * The library functions the run viewer's page calls, bundled for the browser by
 * {@link browserLibSource} (./bundle.ts) into the assets folder as `tinkerbench.js`: the page
 * explains why a group or step trained nothing, and re-scores a group, with the library's own
 * code. Loading the bundle sets `globalThis.tinkerbench`.
 *
 * @module
 */

import { explainGroup, explainStep } from "../advantages/untrained.ts";
import { AdvantageModeSchema } from "../advantages/pipeline.ts";
import { RewardReductionSchema } from "../advantages/shaping.ts";
import { whatIf } from "../scoring/rescore.ts";

/** What the page finds at `globalThis.tinkerbench`. */
export const browserLib = {
  explainGroup,
  explainStep,
  whatIf,
  advantageModes: AdvantageModeSchema.options,
  rewardReductions: RewardReductionSchema.options,
};

(globalThis as { tinkerbench?: typeof browserLib }).tinkerbench = browserLib;
