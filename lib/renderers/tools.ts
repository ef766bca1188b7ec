/**
 * Tool declarations in the prompt, as Qwen3's chat template writes them (`tools=` of
 * `apply_chat_template`): a `# Tools` section with one JSON line per tool inside `<tools>`, and
 * the instruction to answer with `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks,
 * appended to the system message (or as the system message when there is none). The template
 * does this in text, so every ChatML-shaped renderer (Qwen3's, and the local models' ChatML) gets
 * the same convention. Each renderer's `declareTools` is the one way to declare tools; the
 * helpers here are what they are built from.
 *
 * @module
 */

import { pyJson } from "./parse.ts";
import type { Message, ToolSpec } from "./types.ts";

const HEADER = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
  "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const FOOTER = "\n</tools>\n\nFor each function call, return a json object with function name " +
  "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n" +
  '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';

/** Tool specs as OpenAI's `tools` entries, the shape chat templates read. */
export function openAiTools(tools: readonly ToolSpec[]): object[] {
  return tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

/** The `# Tools` section for a list of tools, as Qwen3's template writes it. */
export function toolsSection(tools: readonly ToolSpec[]): string {
  return HEADER + openAiTools(tools).map((t) => "\n" + pyJson(t)).join("") + FOOTER;
}

/**
 * The messages with the tools on the leading system message (an empty one added when there is
 * none), for the formats that write declarations where the format puts them.
 */
export function toolsOnSystem(messages: Message[], tools: readonly ToolSpec[]): Message[] {
  if (tools.length === 0) return messages;
  if (messages[0]?.role === "system") return [{ ...messages[0], tools }, ...messages.slice(1)];
  return [{ role: "system", content: "", tools }, ...messages];
}

/**
 * The messages with a tools section written into the leading system message: `section` of the
 * system prompt (its text, "" when there is none) gives the whole new system text. Unchanged
 * when there are no tools.
 */
export function toolsInSystemText(
  messages: Message[],
  tools: readonly ToolSpec[],
  section: (tools: readonly ToolSpec[], systemPrompt: string) => string,
): Message[] {
  if (tools.length === 0) return messages;
  const has = messages[0]?.role === "system";
  const content = section(tools, has ? messages[0].content : "");
  return has
    ? [{ ...messages[0], content }, ...messages.slice(1)]
    : [{ role: "system", content }, ...messages];
}

/**
 * Qwen3's declaration: the system prompt, a blank line, then the `# Tools` section (the
 * section alone when there is no system prompt). The ChatML-shaped formats share it.
 *
 * @example
 * renderer.declareTools(messages, tools); // a Qwen3 or ChatML renderer calls this
 */
export function qwen3DeclareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
  return toolsInSystemText(
    messages,
    tools,
    (t, system) => (system ? `${system}\n\n` : "") + toolsSection(t),
  );
}
