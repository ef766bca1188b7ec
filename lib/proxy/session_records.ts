/**
 * What a session hands on: each main turn once complete (a {@link CompletedTurn}, for training
 * and `records/turns.jsonl`) and, when it is gone, its {@link SessionEnd} (`records/sessions.jsonl`).
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";
import type { Turn } from "../rl/types.ts";
import type { AgentSession, CompletedTurn, SessionEnd, TurnEnd } from "./session_types.ts";

/**
 * The session's last main turn, completed with its next state and reward (0 when the client
 * sent none: `rewarded` says which).
 */
export function completedTurn(
  session: AgentSession,
  nextState: Message[],
  reward: number | null,
  end: TurnEnd,
): CompletedTurn {
  const last = session.last!;
  const turn: Turn = {
    observation: last.observation,
    observationTokens: last.observationTokens,
    action: last.action,
    actionTokens: last.actionTokens,
    logprobs: last.logprobs,
    reward: reward ?? 0,
    nextState,
    stopReason: last.stopReason,
    samplerVersion: last.samplerVersion,
  };
  return {
    sessionId: session.id,
    index: session.turns - 1,
    turn,
    messages: last.promptMessages,
    rewarded: reward !== null,
    end,
    spans: last.spans ?? null,
    historyBreak: last.historyBreak ?? false,
    truncated: last.truncated ?? 0,
  };
}

/** The record of a session that is gone, at time `now` (ms since the epoch). */
export function sessionEnd(
  session: AgentSession,
  reason: SessionEnd["end"],
  lateReward: boolean,
  now: number,
): SessionEnd {
  return {
    time: new Date(now).toISOString(),
    session_id: session.id,
    label: session.label,
    opened: new Date(session.opened).toISOString(),
    turns: session.turns,
    history_breaks: session.historyBreaks,
    end: reason,
    late_reward: lateReward,
  };
}
