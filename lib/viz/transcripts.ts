/**
 * Readable transcripts of episodes: each turn's observation, the action text the env got, and
 * the reward, as Markdown, so a notebook shows what the policy actually did next to the
 * numbers.
 *
 * @module
 */

import type { Episode } from "../rollout/mod.ts";
import type { EpisodeBatch } from "./frames.ts";
import { actionText, observationText } from "../rl/text.ts";

/**
 * Markdown transcripts of episodes (a flat list is group 0): a heading per episode with its
 * total reward and stop reason, then per turn the user message, the assistant's action and its
 * reward. `maxEpisodes` bounds the output.
 */
export function transcriptMarkdown(
  episodes: EpisodeBatch,
  { maxEpisodes = Infinity }: { maxEpisodes?: number } = {},
): string {
  const groups = episodes.length > 0 && Array.isArray(episodes[0])
    ? episodes as Episode[][]
    : [episodes as Episode[]];
  const out: string[] = [];
  let shown = 0;
  groups.forEach((g, group) =>
    g.forEach((e, episode) => {
      if (shown++ >= maxEpisodes) return;
      out.push(
        `#### group ${group} · episode ${episode}: total reward ${fmt(e.totalReward)} ` +
          `(${e.turns.length} turns, ${e.stopReason})`,
      );
      if (e.error) out.push(`error: ${e.error}`);
      e.turns.forEach((t, i) => {
        out.push(`**turn ${i} · user**`, fence(observationText(t)));
        out.push(`**assistant** (reward ${fmt(t.reward)})`, fence(actionText(t)));
      });
    })
  );
  return out.join("\n\n");
}

function fence(text: string): string {
  return "~~~~text\n" + (text === "" ? "(empty)" : text.replace(/~~~~/g, "~ ~ ~ ~")) + "\n~~~~";
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(3);
}
