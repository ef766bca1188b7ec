/**
 * Frames of a what-if re-scoring (lib/scoring/rescore.ts): one row per action token of a
 * group, with the advantage it was trained with and the one the new settings give, so a
 * notebook shows which tokens carry the gradient before and after.
 *
 * @module
 */

import pl from "nodejs-polars";
import type { WhatIfResult } from "../scoring/rescore.ts";

/**
 * `before` and `after`: one row per action token of the group (`episode`, `turn`, `position`, its
 * `text` when given, `advantage`, `trained`), the run's advantages and the what-if's. An
 * untrained turn's tokens have advantage 0 and `trained` false.
 *
 * @example
 * const { before, after } = whatIfFrames(whatIf(records, "s000001-g000", settings));
 */
export function whatIfFrames(
  result: WhatIfResult,
  texts: (episode: number, turn: number) => string[] | null = () => null,
): { before: pl.DataFrame; after: pl.DataFrame } {
  const frame = (which: "before" | "after") => {
    const rows = result.episodes.flatMap((e) =>
      e[which].flatMap((adv, turn) => {
        const n = e.actionTokens[turn];
        const text = texts(e.episode, turn);
        return Array.from({ length: n }, (_, token) => ({
          episode: e.episode,
          turn,
          position: token,
          text: text?.[token] ?? "",
          advantage: adv?.[token] ?? 0,
          trained: adv !== null,
        }));
      })
    );
    return pl.DataFrame(
      rows.length ? rows : {
        episode: [],
        turn: [],
        position: [],
        text: [],
        advantage: [],
        trained: [],
      },
    );
  };
  return { before: frame("before"), after: frame("after") };
}
