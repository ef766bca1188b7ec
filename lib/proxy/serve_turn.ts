/**
 * The core every API's route calls: one request, up to its answer. The model is checked, the
 * session found, the prompt rendered and sampled, and the main turn committed to its session
 * before the answer leaves (so that the client's next request always finds it); the route shapes
 * the answer and calls `delivered` or `lost` (the turn is then taken back).
 *
 * @module
 */

import type { TurnStopReason } from "../rl/types.ts";
import { finishReason, type SampledChoice, usageOf } from "./completion.ts";
import { ProxyError } from "./errors.ts";
import { renderPrompt, sampleChoices } from "./generate.ts";
import { stoppingError } from "./policy.ts";
import type { ProxyOptions, ProxyStats } from "./options.ts";
import type { SessionMatch } from "./session_types.ts";
import type { AgentSessions } from "./sessions.ts";
import type { TurnAnswer, TurnRequest } from "./turn.ts";

/** What {@link turnServer} serves with: the proxy's sessions, counters and model names. */
export interface TurnServerState {
  sessions: AgentSessions;
  stats: ProxyStats;
  /** The names a request may ask for. */
  models: Set<string>;
  /** The model name clients use. */
  served: string;
}

/**
 * The function that serves one request of any of the three APIs (see the module's doc).
 *
 * @example
 * const serveTurn = turnServer(options, { sessions, stats, models, served });
 * const answer = await serveTurn({ req, meta, model: req.body.model });
 */
export function turnServer(
  o: ProxyOptions,
  { sessions, stats, models, served }: TurnServerState,
): (t: TurnRequest) => Promise<TurnAnswer> {
  return async (t) => {
    const tArrived = performance.now();
    stats.requests++;
    if (t.model !== undefined && !models.has(t.model)) {
      throw new ProxyError(
        404,
        `The model ${JSON.stringify(t.model)} does not exist here; this proxy serves ` +
          JSON.stringify(served),
        { param: "model", code: "model_not_found" },
      );
    }
    const { req, meta } = t;
    // A main turn finds its session first: its new messages are the previous turn's next state,
    // whatever happens to this request's own sampling.
    const match: SessionMatch | null = meta.turnType === "main"
      ? sessions.begin(meta, req.messages)
      : null;
    let prompt;
    try {
      prompt = renderPrompt(o.renderer, req, {
        contextLength: o.contextLength,
        defaultMaxTokens: o.defaultMaxTokens ?? 2048,
        previous: match?.previous,
        main: match !== null,
        keepHead: o.truncateKeepHead ?? null,
      });
    } catch (e) {
      if (match) sessions.abandon(match);
      throw e;
    }
    // A continuation whose tokens could not continue the previous turn's is a break too.
    if (match?.previous && !prompt.bridged) sessions.noteBreak(match);
    if (match?.historyBreak) stats.historyBreaks++;
    if (match?.unclaimedReward) stats.rewardsWithoutTurn++;
    const sessionId = match?.sessionId ?? sessions.peek(meta, req.messages);
    sessions.touch(sessionId);

    let version: number, choices: SampledChoice[], samplerMs: number;
    try {
      const acquired = await o.policy.acquire((o.pauseTimeoutS ?? 300) * 1000);
      version = acquired.version;
      const t0 = performance.now();
      choices = await sampleChoices(acquired.sampler, o.renderer, prompt, req, o.contextLength);
      samplerMs = performance.now() - t0;
    } catch (e) {
      if (match) sessions.abandon(match);
      // Stopping, the backend drops the samples queued: the client is told why.
      throw o.policy.stopping ? stoppingError() : e;
    }
    const usage = usageOf(prompt.tokens.length, choices);
    const first = choices[0];

    // The turn joins its session before the answer leaves, so that the client's next request
    // always finds it; if the answer is never delivered, the turn is taken back.
    const commit = match
      ? sessions.commit(match, {
        requestMessages: req.messages,
        promptMessages: prompt.messages,
        observation: match.index === 0 ? prompt.messages : match.observation,
        observationTokens: prompt.tokens,
        action: first.message,
        actionTokens: first.tokens,
        logprobs: first.logprobs,
        stopReason: first.stopReason as TurnStopReason,
        samplerVersion: version,
        responseId: t.responseId,
        spans: prompt.spans,
        truncated: prompt.truncated,
        historyBreak: match.historyBreak,
      }, { done: meta.done })
      : null;
    if (!match && meta.done && sessionId) sessions.end(sessionId, { reward: null });
    return {
      choices,
      usage,
      sessionId,
      model: t.model ?? served,
      headers: {
        ...sessionHeaders(sessionId, match),
        // Never silent: a cut prompt says so in its answer too.
        ...(prompt.truncated ? { "x-prompt-truncated-tokens": String(prompt.truncated) } : {}),
      },
      timing: () =>
        `sampler;dur=${samplerMs.toFixed(2)}, proxy;dur=${
          (performance.now() - tArrived).toFixed(2)
        }`,
      delivered: () => {
        if (match) stats.mainTurns++;
        else stats.sideTurns++;
        o.onServed?.({
          time: new Date().toISOString(),
          sessionId,
          turnType: meta.turnType,
          index: match?.index ?? null,
          samplerVersion: version,
          messages: req.messages,
          choice: first,
          finishReason: finishReason(first),
          usage,
          samplerMs,
          truncated: prompt.truncated,
        });
      },
      lost: () => {
        stats.disconnected++;
        if (commit) sessions.retract(commit);
      },
    };
  };
}

/**
 * The session headers of an answer: its id, and to the request that opened the session its
 * token (the one secret that continues it; requests that joined otherwise never see it).
 */
export function sessionHeaders(
  sessionId: string | null,
  match: SessionMatch | null,
): Record<string, string> {
  const h: Record<string, string> = sessionId ? { "x-session-id": sessionId } : {};
  if (match?.token) h["x-session-token"] = match.token;
  return h;
}
