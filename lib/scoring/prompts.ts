/**
 * The judges' prompts, as OpenClaw's scorers build them (`build_prm_eval_prompt`,
 * `build_hint_judge_messages`): a system message that defines the task and the output format,
 * and a user message with the assistant's output and the next state with its role. Worded
 * here; the structure, the roles' meaning and the output formats follow the reference.
 *
 * @module
 */

import type { JudgeMessage } from "./rules.ts";

/** A scored turn: what the assistant said and the next state that followed it. */
export interface JudgedTurn {
  /** The assistant's response text at turn t. */
  response: string;
  /** The message that followed: a user reply, a tool result, or an environment's feedback. */
  nextState: string;
  /** The next state's role: `user` (a reply, or an environment's feedback) or `tool`. */
  nextStateRole: "user" | "tool";
}

const ROLES = `The next state is the message that came right after the assistant's output:
- role "user": a reply from the user (or the environment's feedback on the action).
- role "tool": the return value of a tool the assistant called. It exists because the assistant
  called the tool; a clean, non-error tool result is evidence of progress.`;

/** PRM judge messages: vote `\boxed{1}`, `\boxed{-1}` or `\boxed{0}` on one turn. */
export function prmJudgeMessages(turn: JudgedTurn): JudgeMessage[] {
  const system =
    `You are a process reward model (PRM) evaluating an AI assistant. Decide whether the
assistant's output at this step successfully fulfilled the user's intent, using the next state as
evidence.

${ROLES}

Scoring:
- \\boxed{1}: the task moved forward. The user moves on or says thanks, the environment confirms,
  or a tool returns a clean result.
- \\boxed{-1}: the user asks to redo or retry, asks for a correction or a change ("no, I meant
  ..."), rephrases the same request, or the environment reports an error caused by the action.
  A change request IS negative feedback, not a neutral new instruction.
- \\boxed{0}: the evidence is ambiguous or irrelevant.

Reason step by step, then end with exactly one final \\boxed{} holding 1, -1 or 0.`;
  const user = `## Assistant output
${turn.response}

## Next state [role: ${turn.nextStateRole}]
${turn.nextState}

First classify the next state as (a) positive progression, (b) a correction, redo or change
request, or (c) ambiguous. Then give your score as \\boxed{1}, \\boxed{-1} or \\boxed{0}.`;
  return [{ role: "system", content: system }, { role: "user", content: user }];
}

/** Hint judge messages: `\boxed{1}` with a hint in `[HINT_START]…[HINT_END]`, or `\boxed{-1}`. */
export function hintJudgeMessages(turn: JudgedTurn): JudgeMessage[] {
  const system = `You are a process reward model used for hindsight hint extraction. You see (1) the
assistant's response at turn t and (2) the next state at turn t+1, with its role.

${ROLES}
Do not treat a tool result as information the assistant should already have known.

Goal: decide whether the next state reveals hindsight that could have improved the turn-t response.

Output format, strictly:
- Exactly one final decision: \\boxed{1} (useful hindsight) or \\boxed{-1} (none).
- Only with \\boxed{1}: a concise, information-dense, concrete and actionable hint of 1-3
  sentences between [HINT_START] and [HINT_END].
- With \\boxed{-1}: no hint block.`;
  const user = `## Assistant response (turn t)
${turn.response}

## Next state (turn t+1) [role: ${turn.nextStateRole}]
${turn.nextState}

Give your decision, and the hint if the decision is \\boxed{1}.`;
  return [{ role: "system", content: system }, { role: "user", content: user }];
}
