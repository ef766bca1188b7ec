/**
 * Tool declarations in the prompt, as Qwen3's chat template writes them (`tools=` of
 * `apply_chat_template`): a `# Tools` section with one JSON line per tool inside `<tools>`, and
 * the instruction to answer with `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks,
 * appended to the system message (or as the system message when there is none). The template
 * does this in text, so every ChatML-shaped renderer (Qwen3's, and the local models' ChatML) gets
 * the same convention by rendering the messages this returns.
 *
 * @module
 */

import { pyJson } from "./parse.ts";
import type { Message, Renderer, ToolSpec } from "./types.ts";

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
 * none), for the formats that write declarations themselves ({@link Renderer.declareTools}).
 */
export function toolsOnSystem(messages: Message[], tools: readonly ToolSpec[]): Message[] {
  if (messages[0]?.role === "system") return [{ ...messages[0], tools }, ...messages.slice(1)];
  return [{ role: "system", content: "", tools }, ...messages];
}

/**
 * The messages with the tools declared as the renderer's format declares them (Qwen3's system
 * section when no renderer is given or it has no {@link Renderer.declareTools}); unchanged when
 * there are no tools.
 *
 * @example
 * const prompt = renderer.buildGenerationPrompt(withTools(messages, env.tools ?? [], renderer));
 */
export function withTools(
  messages: Message[],
  tools: readonly ToolSpec[],
  renderer?: Renderer,
): Message[] {
  if (tools.length === 0) return messages;
  if (renderer?.declareTools) return renderer.declareTools(messages, tools);
  const section = toolsSection(tools);
  if (messages[0]?.role === "system") {
    return [
      { ...messages[0], content: `${messages[0].content}\n\n${section}` },
      ...messages.slice(1),
    ];
  }
  return [{ role: "system", content: section }, ...messages];
}
