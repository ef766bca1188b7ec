/**
 * Sessions of the proxy: which conversation a request belongs to, and when each main turn is
 * complete. As in the OpenClaw seed, a main turn t is complete when main turn t+1 of its session
 * arrives (its newest messages are turn t's next state) or when the session ends (no next state).
 * Beyond the seed:
 *
 * - **Prefix matching.** A request without a session id joins the open session whose
 *   conversation it extends (the previous request's messages, then the answer the proxy gave),
 *   so agents that send no headers are still captured; otherwise it opens a new session.
 * - **OpenClaw's trailing context.** OpenClaw ends every request with an internal context
 *   message that the next request does not replay. A request extends a session also when the
 *   last one or two non-assistant messages of the previous request are missing before the
 *   answer; the session then knows that its requests end with such messages, and they are left
 *   out of the next state (the next state is the new user message).
 * - **Idle flush.** A session idle for `idleMs` ends (OpenClaw never says it is done).
 *
 * Side turns are served but change nothing here. The store keeps no tokens of the past, only
 * each session's last main turn.
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";
import type { Turn, TurnStopReason } from "../rl/types.ts";
import { extension, MAX_DROPPED, prefixHashes, sameMessage } from "./matching.ts";

/** How a main turn got its end. */
export type TurnEnd = "next_state" | "done" | "idle" | "closed";

/** A main turn whose next state is known (or whose session ended). */
export interface CompletedTurn {
  sessionId: string;
  /** The turn's index among its session's main turns. */
  index: number;
  turn: Turn;
  /** The request's messages (tools declared in the system message): what the policy answered. */
  messages: Message[];
  /** Whether the client sent a reward for this turn. */
  rewarded: boolean;
  end: TurnEnd;
}

/** A main turn as served, waiting for its next state. */
export interface ServedTurn {
  /** The request's messages, as normalised (used to match the next request). */
  requestMessages: Message[];
  /** The same with the tools declared in the system message (the prompt's messages). */
  promptMessages: Message[];
  observation: Message[];
  observationTokens: number[];
  action: Message;
  actionTokens: number[];
  logprobs: number[];
  stopReason: TurnStopReason;
  samplerVersion: number;
}

/** What a main request found when it arrived. */
export interface SessionMatch {
  sessionId: string;
  /** The messages this request added since the session's previous main turn. */
  observation: Message[];
  /** The index the turn will have once served. */
  index: number;
  /** True when the session was found by prefix match (no id given). */
  matched: boolean;
}

/** A committed turn, to take back if its answer is not delivered. */
export interface Commit {
  readonly session: AgentSession;
  readonly served: ServedTurn;
  readonly before: Pick<AgentSession, "last" | "turns" | "pending">;
}

/** One agent session as the proxy tracks it: its turns, the pending one, its last activity. */
export interface AgentSession {
  id: string;
  lastActivity: number;
  turns: number;
  last: ServedTurn | null;
  /** Whether the last turn still waits for its next state. */
  pending: boolean;
  /** Trailing messages of each request that the next one does not replay (learned). */
  dropsTrailing: number;
  keys: string[];
}

/** Options of {@link AgentSessions}. */
export interface AgentSessionsOptions {
  /** A session idle this long ends; null: never. */
  idleMs: number | null;
  /** Called with every completed main turn. */
  onComplete(turn: CompletedTurn): void;
  /** The clock (tests). */
  now?: () => number;
}

/**
 * The proxy's sessions.
 *
 * @example
 * const store = new AgentSessions({ idleMs: 600_000, onComplete: (t) => queue.push(t) });
 * const match = store.begin({ sessionId: null, reward: null }, messages);
 * // … sample …
 * store.commit(match, served, { done: false });
 */
export class AgentSessions {
  readonly #sessions = new Map<string, AgentSession>();
  /** History hash → sessions whose conversation (previous request + answer) hashes so. */
  readonly #index = new Map<string, Set<AgentSession>>();
  readonly #opts: AgentSessionsOptions;
  readonly #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #anonymous = 0;

  constructor(opts: AgentSessionsOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    if (opts.idleMs !== null) {
      const timer = setInterval(
        () => this.flushIdle(),
        Math.max(10, Math.min(opts.idleMs / 2, 1_000)),
      );
      Deno.unrefTimer(timer);
      this.#timer = timer;
    }
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Main turns waiting for their next state. */
  get pending(): number {
    let n = 0;
    for (const s of this.#sessions.values()) if (s.pending) n++;
    return n;
  }

  /**
   * A main request arrives: finds (or opens) its session, and completes the session's previous
   * turn with this request's new messages as its next state and `reward` as its reward.
   */
  begin(
    meta: { sessionId: string | null; reward: number | null },
    messages: Message[],
  ): SessionMatch {
    let session = meta.sessionId === null ? undefined : this.#sessions.get(meta.sessionId);
    let matched = false;
    if (!session && meta.sessionId === null) {
      session = this.#findByPrefix(messages);
      matched = session !== undefined;
    }
    session ??= this.#open(meta.sessionId);
    session.lastActivity = this.#now();

    let observation = messages;
    const last = session.last;
    if (last) {
      const ext = extension(last, messages);
      if (ext) {
        observation = messages.slice(ext.prefix);
        session.dropsTrailing = ext.dropped;
      } else {
        // Not a continuation (an edited or regenerated history): the new part starts where
        // the request leaves the previous one.
        let k = 0;
        while (k < messages.length && k < last.requestMessages.length) {
          if (!sameMessage(messages[k], last.requestMessages[k])) break;
          k++;
        }
        observation = messages.slice(k);
      }
      if (session.pending) {
        const drop = ext ? ext.dropped : 0;
        const next = observation.length > drop
          ? observation.slice(0, observation.length - drop)
          : observation.length
          ? observation
          : messages.slice(-1);
        this.#complete(session, next, meta.reward, "next_state");
      }
    }
    return { sessionId: session.id, observation, index: session.turns, matched };
  }

  /**
   * The main turn of `match` was served: it waits for its next state (or, with `done`, is
   * completed at once and the session ends).
   */
  commit(match: SessionMatch, served: ServedTurn, { done }: { done: boolean }): Commit {
    let session = this.#sessions.get(match.sessionId);
    if (!session) session = this.#open(match.sessionId); // it ended while this turn was sampled
    const before = { last: session.last, turns: session.turns, pending: session.pending };
    this.#unindex(session);
    session.last = served;
    session.turns = match.index + 1;
    session.pending = true;
    session.lastActivity = this.#now();
    if (done) this.end(session.id, { reward: null });
    else this.#reindex(session);
    return { session, served, before };
  }

  /**
   * Takes back a committed turn whose answer never reached the client (it went away): the
   * session is as before the turn, as long as nothing happened to it since.
   */
  retract(commit: Commit): void {
    const { session, served, before } = commit;
    if (session.last !== served || !session.pending) return;
    this.#unindex(session);
    session.last = before.last;
    session.turns = before.turns;
    session.pending = before.pending;
    if (this.#sessions.get(session.id) === session) this.#reindex(session);
  }

  /** Marks activity of a session (side turns keep it alive). */
  touch(sessionId: string | null): void {
    const s = sessionId === null ? undefined : this.#sessions.get(sessionId);
    if (s) s.lastActivity = this.#now();
  }

  /** The session a request without an id would join (for labelling side turns), or null. */
  peek(messages: Message[]): string | null {
    return this.#findByPrefix(messages)?.id ?? null;
  }

  /**
   * Ends a session: with `messages` (the conversation as the client would send it next) the
   * pending turn gets their new part as its next state, otherwise none; `reward` is its reward.
   * Returns false when there is no such session.
   */
  end(
    sessionId: string,
    { messages, reward, reason = "done" }: {
      messages?: Message[];
      reward: number | null;
      reason?: TurnEnd;
    },
  ): boolean {
    const session = this.#sessions.get(sessionId);
    if (!session) return false;
    if (session.pending) {
      let next: Message[] = [];
      if (messages && session.last) {
        const ext = extension(session.last, messages);
        if (ext) next = messages.slice(ext.prefix);
      }
      this.#complete(session, next, reward, next.length ? "next_state" : reason);
    }
    this.#unindex(session);
    this.#sessions.delete(sessionId);
    return true;
  }

  /** Ends every session idle for longer than the idle limit. */
  flushIdle(): void {
    if (this.#opts.idleMs === null) return;
    const cutoff = this.#now() - this.#opts.idleMs;
    for (const s of [...this.#sessions.values()]) {
      if (s.lastActivity <= cutoff) this.end(s.id, { reward: null, reason: "idle" });
    }
  }

  /** Ends every session (their pending turns complete without a next state) and stops the timer. */
  close(): void {
    clearInterval(this.#timer);
    for (const id of [...this.#sessions.keys()]) this.end(id, { reward: null, reason: "closed" });
  }

  #open(id: string | null): AgentSession {
    const session: AgentSession = {
      id: id ?? `anon-${++this.#anonymous}-${crypto.randomUUID().slice(0, 8)}`,
      lastActivity: this.#now(),
      turns: 0,
      last: null,
      pending: false,
      dropsTrailing: 0,
      keys: [],
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  #complete(
    session: AgentSession,
    nextState: Message[],
    reward: number | null,
    end: TurnEnd,
  ): void {
    const last = session.last!;
    session.pending = false;
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
    this.#opts.onComplete({
      sessionId: session.id,
      index: session.turns - 1,
      turn,
      messages: last.promptMessages,
      rewarded: reward !== null,
      end,
    });
  }

  #findByPrefix(messages: Message[]): AgentSession | undefined {
    const hashes = prefixHashes(messages);
    for (let k = messages.length; k >= 1; k--) {
      const candidates = this.#index.get(hashes[k]);
      if (!candidates) continue;
      for (const s of candidates) {
        const ext = s.last ? extension(s.last, messages) : null;
        if (ext && ext.prefix === k) return s;
      }
    }
    return undefined;
  }

  #reindex(session: AgentSession): void {
    const last = session.last;
    if (!last) return;
    const n = last.requestMessages.length;
    for (let d = 0; d <= Math.min(MAX_DROPPED, n - 1); d++) {
      if (d > 0 && last.requestMessages[n - d].role === "assistant") break;
      const history = [...last.requestMessages.slice(0, n - d), last.action];
      const key = prefixHashes(history)[history.length];
      let set = this.#index.get(key);
      if (!set) this.#index.set(key, set = new Set());
      set.add(session);
      session.keys.push(key);
    }
  }

  #unindex(session: AgentSession): void {
    for (const key of session.keys) {
      const set = this.#index.get(key);
      set?.delete(session);
      if (set?.size === 0) this.#index.delete(key);
    }
    session.keys = [];
  }
}
