/**
 * Sessions of the proxy: which conversation a request belongs to, who may write into it, and
 * when each main turn is complete. As in the OpenClaw seed, a main turn t is complete when main
 * turn t+1 of its session arrives (its newest messages are turn t's next state) or when the
 * session ends (no next state). Beyond the seed:
 *
 * - **Ids and tokens issued by the proxy.** A request that opens a session gets the session's id
 *   (`sess_…`) and a secret token back (`X-Session-Id`, `X-Session-Token` on its answer). The
 *   client's own session name (`X-Session-Id` in the request, OpenClaw's, Codex's and Claude
 *   Code's session headers) is only a label: it is recorded, never trusted.
 * - **Binding.** A request continues a session when it presents the session's token. With
 *   `binding: "history"` (for agents that cannot send a header back: Codex, Claude Code,
 *   OpenClaw) a request without a token also continues the open session that has its label (or,
 *   unlabelled, no label) and whose conversation it extends exactly (the previous request,
 *   possibly less OpenClaw's trailing context, then the proxy's answer). Anything else opens a
 *   new session: no request can add turns, next states or rewards to a session it does not hold.
 * - **OpenClaw's trailing context.** OpenClaw ends every request with an internal context
 *   message that the next request does not replay. A request extends a session also when the
 *   last one or two non-assistant messages of the previous request are missing before the
 *   answer; they are left out of the next state (the next state is the new user message).
 * - **History breaks.** A token holder whose history does not extend its session's (an edited
 *   or regenerated conversation) still continues it; the break is counted per session.
 * - **Idle end, late rewards.** A session idle for `idleMs` ends (OpenClaw never says it is
 *   done). A session that ends with its last turn unrewarded (idle, or `X-Session-Done`) keeps
 *   that turn for `lateRewardMs`, so that `POST /v1/sessions/{id}/done` can still reward it.
 *   Every session leaves one {@link SessionEnd} when it is gone.
 * - **A cap.** Each open session holds its last turn (about 100 KB) until it ends; at
 *   `maxSessions` open sessions a request that would open one more is a 429 (OpenAI's
 *   `rate_limit_exceeded`, Anthropic's `rate_limit_error`) and opens nothing.
 *
 * Side turns are served but change nothing here. The store keeps no tokens of the past, only
 * each session's last main turn. How a request finds an open session (by id, token, latest
 * answer or conversation) is ./open_sessions.ts.
 *
 * @module
 */

import { sameSecret } from "../http/auth.ts";
import type { Message } from "../renderers/types.ts";
import { noSessionToReward, sessionNotFound, sessionsFull } from "./errors.ts";
import { continuation, extension } from "./matching.ts";
import { OpenSessions } from "./open_sessions.ts";
import { completedTurn, sessionEnd } from "./session_records.ts";
import type {
  AgentSession,
  AgentSessionsOptions,
  Commit,
  ServedTurn,
  SessionClaim,
  SessionMatch,
  TurnEnd,
} from "./session_types.ts";

/** An ended session whose last turn still waits for a late reward. */
interface Held {
  session: AgentSession;
  reason: "done" | "idle";
  until: number;
}

/**
 * The proxy's sessions.
 *
 * @example
 * const store = new AgentSessions({ idleMs: 600_000, onComplete: (t) => queue.push(t) });
 * const match = store.begin({ token: null, label: null, reward: null }, messages);
 * // … sample …
 * store.commit(match, served, { done: false });
 */
export class AgentSessions {
  readonly #sessions = new OpenSessions();
  readonly #held = new Map<string, Held>();
  readonly #opts: AgentSessionsOptions;
  readonly #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(opts: AgentSessionsOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    const periods = [opts.idleMs, opts.lateRewardMs || null].filter((x) => x !== null);
    if (periods.length) {
      const timer = setInterval(
        () => this.flushIdle(),
        Math.max(10, Math.min(Math.min(...periods) / 2, 1_000)),
      );
      Deno.unrefTimer(timer);
      this.#timer = timer;
    }
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Main turns waiting for their next state (or, their session ended, a late reward). */
  get pending(): number {
    let n = this.#held.size;
    for (const s of this.#sessions.values()) if (s.pending) n++;
    return n;
  }

  /** History breaks of the open sessions so far. */
  get historyBreaks(): number {
    let n = 0;
    for (const s of this.#sessions.values()) n += s.historyBreaks;
    return n;
  }

  /**
   * A main request arrives: finds its session (by token, or with `history` binding by label and
   * conversation) or opens one, and completes the session's previous turn with this request's
   * new messages as its next state and `claim.reward` as its reward. A token that names no open
   * session is a 404; a reward on a request that opens a session (there is no turn to reward)
   * is a 400 under `token` binding, and under `history` binding rewards nothing
   * (`unclaimedReward`: an agent CLI's only reward setting is a static header, sent on every
   * request, its session's first included); a request that would open a session beyond
   * `maxSessions` is a 429.
   */
  begin(claim: SessionClaim, messages: Message[]): SessionMatch {
    let session: AgentSession | undefined;
    let how: SessionMatch["how"] = "opened";
    if (claim.token !== null) {
      session = this.#sessions.withToken(claim.token);
      if (!session) throw sessionNotFound();
      how = "token";
    } else if ((this.#opts.binding ?? "token") === "history") {
      session = this.#sessions.extendedBy(messages, claim.label);
      if (session) how = "history";
    }
    if (!session) {
      if (claim.reward !== null && (this.#opts.binding ?? "token") === "token") {
        throw noSessionToReward();
      }
      this.#checkRoom();
      session = this.#sessions.open(claim.label, this.#now());
    }
    session.lastActivity = this.#now();

    let observation = messages;
    let historyBreak = false;
    const last = session.last;
    const cont = last ? continuation(last, messages) : null;
    if (cont) {
      observation = cont.observation;
      if (!cont.ext) {
        historyBreak = true;
        session.historyBreaks++;
      }
      if (session.pending) this.#complete(session, cont.nextState, claim.reward, "next_state");
    }
    return {
      sessionId: session.id,
      token: how === "opened" ? session.token : null,
      observation,
      index: session.turns,
      how,
      historyBreak,
      previous: cont?.ext ? last : null,
      unclaimedReward: how === "opened" && claim.reward !== null,
    };
  }

  /**
   * The main turn of `match` was served: it waits for its next state (or, with `done`, the
   * session ends).
   */
  commit(match: SessionMatch, served: ServedTurn, { done }: { done: boolean }): Commit {
    const session = this.#sessions.get(match.sessionId);
    if (!session) {
      // It ended while this turn was sampled (idle, /done): the turn has no session to wait in.
      const orphan = this.#sessions.open(null, this.#now());
      orphan.last = served;
      orphan.turns = 1;
      orphan.pending = true;
      this.end(orphan.id, { reward: null, reason: "closed" });
      return { session: orphan, served, before: { last: null, turns: 0, pending: false } };
    }
    const before = { last: session.last, turns: session.turns, pending: session.pending };
    this.#sessions.unfile(session);
    session.last = served;
    session.turns = match.index + 1;
    session.pending = true;
    session.lastActivity = this.#now();
    if (done) this.end(session.id, { reward: null });
    else this.#sessions.file(session);
    return { session, served, before };
  }

  /**
   * Takes back a committed turn whose answer never reached the client (it went away): the
   * session is as before the turn, as long as nothing happened to it since.
   */
  retract(commit: Commit): void {
    const { session, served, before } = commit;
    if (session.last !== served || !session.pending) return;
    this.#sessions.unfile(session);
    session.last = before.last;
    session.turns = before.turns;
    session.pending = before.pending;
    if (this.#sessions.get(session.id) === session) this.#sessions.file(session);
  }

  /**
   * The session whose latest answer has this id, as a request naming it continues it: the
   * session's token (the answer's id is as secret: only the one who asked got it) and the
   * conversation so far (that request's messages, then the answer). Null when no open session's
   * latest answer has it.
   */
  fromResponse(responseId: string): { token: string; conversation: Message[] } | null {
    const s = this.#sessions.withAnswer(responseId);
    if (!s?.last) return null;
    return { token: s.token, conversation: [...s.last.requestMessages, s.last.action] };
  }

  /**
   * A request that opened its session failed before its turn was served (a prompt over the
   * context, a sampler error): the session goes as though it never was (its client never got
   * its token). Sessions with turns are left alone.
   */
  abandon(match: SessionMatch): void {
    const s = this.#sessions.get(match.sessionId);
    if (match.how !== "opened" || !s || s.turns > 0) return;
    this.#sessions.close(s);
  }

  /**
   * Counts a history break found after {@link begin}: the request's messages continued the
   * session, but its prompt's tokens could not continue the previous turn's.
   */
  noteBreak(match: SessionMatch): void {
    if (match.historyBreak) return;
    match.historyBreak = true;
    const s = this.#sessions.get(match.sessionId);
    if (s) s.historyBreaks++;
  }

  /** Marks activity of a session (side turns keep it alive). */
  touch(sessionId: string | null): void {
    const s = sessionId === null ? undefined : this.#sessions.get(sessionId);
    if (s) s.lastActivity = this.#now();
  }

  /**
   * The session a side request belongs to (for labelling it), or null: its token's, or with
   * `history` binding the one its conversation extends.
   */
  peek(claim: Pick<SessionClaim, "token" | "label">, messages: Message[]): string | null {
    if (claim.token !== null) return this.#sessions.withToken(claim.token)?.id ?? null;
    if ((this.#opts.binding ?? "token") !== "history") return null;
    return this.#sessions.extendedBy(messages, claim.label)?.id ?? null;
  }

  /**
   * `POST /v1/sessions/{id}/done` from the session's holder: ends the session (or, ended with
   * its last turn unrewarded less than `lateRewardMs` ago, gives that turn its late reward).
   * With `messages` (the conversation as the client would send it next) the pending turn gets
   * their new part as its next state. False when the id is unknown or the token is not the
   * session's: the two are not told apart, so ids cannot be probed.
   */
  done(
    sessionId: string,
    token: string,
    { messages, reward }: { messages?: Message[]; reward: number | null },
  ): boolean {
    const open = this.#sessions.get(sessionId);
    const held = open ? undefined : this.#held.get(sessionId);
    const session = open ?? held?.session;
    // Compared even when there is no such session, so that both answers take the same time.
    const ok = sameSecret(token, session?.token ?? "\u0000no session");
    if (!session || !ok) return false;
    if (open) return this.end(sessionId, { messages, reward });
    this.#held.delete(sessionId);
    this.#finish(session, nextFrom(session, messages), reward, held!.reason, true);
    return true;
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
      reason?: "done" | "idle" | "closed";
    },
  ): boolean {
    const session = this.#sessions.get(sessionId);
    if (!session) return false;
    this.#sessions.close(session);
    const next = nextFrom(session, messages);
    const late = this.#opts.lateRewardMs ?? 0;
    if (
      session.pending && reward === null && next.length === 0 && reason !== "closed" && late > 0
    ) {
      this.#held.set(session.id, { session, reason, until: this.#now() + late });
      return true;
    }
    this.#finish(session, next, reward, reason, false);
    return true;
  }

  /** Ends every session idle for longer than the idle limit, and releases expired held turns. */
  flushIdle(): void {
    const now = this.#now();
    if (this.#opts.idleMs !== null) {
      const cutoff = now - this.#opts.idleMs;
      for (const s of [...this.#sessions.values()]) {
        if (s.lastActivity <= cutoff) this.end(s.id, { reward: null, reason: "idle" });
      }
    }
    for (const [id, h] of [...this.#held]) {
      if (h.until <= now) {
        this.#held.delete(id);
        this.#finish(h.session, [], null, h.reason, false);
      }
    }
  }

  /**
   * Ends every session (their pending turns complete without a next state), releases held
   * turns, and stops the timer.
   */
  close(): void {
    clearInterval(this.#timer);
    for (const s of [...this.#sessions.values()]) {
      this.end(s.id, { reward: null, reason: "closed" });
    }
    for (const [id, h] of [...this.#held]) {
      this.#held.delete(id);
      this.#finish(h.session, [], null, h.reason, false);
    }
  }

  /** Throws the 429 when the open sessions are at the cap (after ending the idle ones). */
  #checkRoom(): void {
    const max = this.#opts.maxSessions ?? null;
    if (max === null || this.#sessions.size < max) return;
    // The timer may not have run yet: sessions past their idle limit do not count.
    this.flushIdle();
    if (this.#sessions.size < max) return;
    throw sessionsFull(this.#sessions.size);
  }

  /** The session is gone: its pending turn completes, and it leaves its record. */
  #finish(
    session: AgentSession,
    next: Message[],
    reward: number | null,
    reason: "done" | "idle" | "closed",
    lateReward: boolean,
  ): void {
    if (session.pending) {
      this.#complete(session, next, reward, next.length ? "next_state" : reason);
    }
    this.#opts.onEnd?.(sessionEnd(session, reason, lateReward, this.#now()));
  }

  #complete(session: AgentSession, nextState: Message[], reward: number | null, end: TurnEnd) {
    session.pending = false;
    this.#opts.onComplete(completedTurn(session, nextState, reward, end));
  }
}

/** The next state `messages` give a session's pending turn (their part past its conversation). */
function nextFrom(session: AgentSession, messages: Message[] | undefined): Message[] {
  if (!messages || !session.last || !session.pending) return [];
  const ext = extension(session.last, messages);
  return ext ? messages.slice(ext.prefix) : [];
}
