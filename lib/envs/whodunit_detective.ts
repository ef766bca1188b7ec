/**
 * A scripted detective for WhoDunIt, a baseline policy (and the tests' and benchmark's proof that
 * cases are solvable through the tools): one tool call per turn (every list, every exhibit),
 * then the answer left after crossing out every item a fact mentions. It reads only what the
 * tools answered (the tool turns of its ChatML prompt), as a policy would.
 *
 * @module
 */

import { formatToolCalls } from "../renderers/parse.ts";

const LISTS = [
  "list_suspects",
  "list_weapons",
  "list_locations",
  "list_motives",
  "list_clues",
  "list_statements",
  "list_exhibits",
];

/** The tool answers in a ChatML prompt, in order. */
function toolAnswers(prompt: string): string[] {
  // Tool results are `<tool_response>` blocks, as Qwen3's template writes them (and ChatML too).
  return [...prompt.matchAll(/<tool_response>\n([\s\S]*?)\n<\/tool_response>/g)].map((m) => m[1]);
}

/**
 * The detective's next reply (ChatML, ending its message) given its prompt so far.
 *
 * @example
 * const episode = await runEpisode(env, opening, scriptedPolicy(detective), { maxTokensPerTurn: 400 });
 */
export function detective(prompt: string): string {
  const lists = LISTS.filter((t) => t !== "list_motives" || prompt.includes('"list_motives"'));
  const answers = toolAnswers(prompt);
  const reply = (name: string, args: unknown) =>
    `${formatToolCalls("", [{ name, arguments: args }])}<|im_end|>`;
  if (answers.length < lists.length) return reply(lists[answers.length], {});
  const got = Object.fromEntries(lists.map((t, i) => [t, answers[i].split("\n")]));
  const exhibits = got.list_exhibits.map((l) => l.split(":")[0]).filter((id) => /^E\d+$/.test(id));
  const seen = answers.length - lists.length;
  if (seen < exhibits.length) return reply("view_exhibit", { exhibit_id: exhibits[seen] });
  const facts = [...got.list_clues, ...got.list_statements, ...answers.slice(lists.length)].join(
    "\n",
  );
  const mentioned = (item: string) =>
    new RegExp(`\\b${item.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`, "i").test(facts);
  const left = (items: string[]) => items.find((x) => !mentioned(x)) ?? items[0];
  const answer: Record<string, string> = {
    suspect: left(got.list_suspects.map((l) => l.split(",")[0])),
    weapon: left(got.list_weapons),
    location: left(got.list_locations),
  };
  if (got.list_motives) answer.motive = left(got.list_motives);
  return reply("submit_answer", answer);
}
