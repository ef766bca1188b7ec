/**
 * OpenReward's `system_prompt_template`: a system prompt with `{tools}` standing for the tools,
 * one JSON line each (`{{` and `}}` are literal braces, as in Python's `str.format`). Without a
 * template the rollout declares tools as its renderer does (`Renderer.declareTools`).
 *
 * @module
 */

import { pyJson } from "../renderers/parse.ts";
import type { Message, ToolSpec } from "../renderers/types.ts";

/**
 * The `declareTools` of a rollout for a template: the rendered template becomes the system
 * message (before an environment's own system message, if it has one).
 *
 * @example
 * const declare = templateDeclaration("You are an agent.\n<tools>\n{tools}\n</tools>");
 * runEpisode(env, opening, sampler, { maxTokensPerTurn: 512, toolUse: { declareTools: declare } });
 */
export function templateDeclaration(
  template: string,
): (opening: Message[], tools: readonly ToolSpec[]) => Message[] {
  return (opening, tools) => {
    if (tools.length === 0) return opening;
    const lines = tools.map((t) =>
      pyJson({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })
    ).join("\n");
    const system = template.replace(/\{\{|\}\}|\{tools\}/g, (m) => m === "{tools}" ? lines : m[0]);
    if (opening[0]?.role === "system") {
      return [
        { ...opening[0], content: `${system}\n\n${opening[0].content}` },
        ...opening.slice(1),
      ];
    }
    return [{ role: "system", content: system }, ...opening];
  };
}
