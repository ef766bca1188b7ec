/**
 * The proxy's open sessions and the ways a request finds one: by id, by the secret token the
 * proxy issued when it opened (only the token's sha256 is kept as a key), by the id of its
 * latest answer (Responses' `previous_response_id`), or by the conversation the request extends
 * ({@link HistoryIndex}). The lookups follow each session's latest turn as it changes; when a
 * session opens, takes a turn or closes is {@link AgentSessions}' decision (sessions.ts).
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Message } from "../renderers/types.ts";
import { HistoryIndex } from "./history_index.ts";
import type { AgentSession } from "./session_types.ts";

/**
 * The open sessions, each findable by id, token, latest answer and conversation.
 *
 * @example
 * const open = new OpenSessions();
 * const s = open.open("alice", Date.now());
 * open.withToken(s.token) === s; // true
 */
export class OpenSessions {
  readonly #byId = new Map<string, AgentSession>();
  /** By the sha256 of the session's token. */
  readonly #byToken = new Map<string, AgentSession>();
  /** By the id of the session's latest answer. */
  readonly #byAnswer = new Map<string, AgentSession>();
  /** By the conversation a request must extend to continue the session. */
  readonly #index = new HistoryIndex();

  /** How many sessions are open. */
  get size(): number {
    return this.#byId.size;
  }

  /** The open sessions, oldest first. */
  values(): IterableIterator<AgentSession> {
    return this.#byId.values();
  }

  /** The open session with this id. */
  get(id: string): AgentSession | undefined {
    return this.#byId.get(id);
  }

  /** The open session the proxy gave this token. */
  withToken(token: string): AgentSession | undefined {
    return this.#byToken.get(hashToken(token));
  }

  /** The open session whose latest answer has this id. */
  withAnswer(responseId: string): AgentSession | undefined {
    return this.#byAnswer.get(responseId);
  }

  /** The filed session with this label whose conversation `messages` extend exactly. */
  extendedBy(messages: Message[], label: string | null): AgentSession | undefined {
    return this.#index.find(messages, label);
  }

  /** Opens a session with a new id and secret token, found by both from now on. */
  open(label: string | null, now: number): AgentSession {
    const token = randomHex(32);
    const session: AgentSession = {
      id: `sess_${randomHex(12)}`,
      token,
      tokenHash: hashToken(token),
      label,
      opened: now,
      lastActivity: now,
      turns: 0,
      last: null,
      pending: false,
      historyBreaks: 0,
      keys: [],
    };
    this.#byId.set(session.id, session);
    this.#byToken.set(session.tokenHash, session);
    return session;
  }

  /** Files the session's latest turn: its conversation and its answer's id find the session. */
  file(session: AgentSession): void {
    this.#index.add(session);
    const answer = session.last?.responseId;
    if (answer) this.#byAnswer.set(answer, session);
  }

  /** Takes the session's latest turn out of the lookups (before it changes). */
  unfile(session: AgentSession): void {
    this.#index.remove(session);
    const answer = session.last?.responseId;
    if (answer && this.#byAnswer.get(answer) === session) this.#byAnswer.delete(answer);
  }

  /** The session is no longer open: nothing finds it. */
  close(session: AgentSession): void {
    this.unfile(session);
    this.#byId.delete(session.id);
    this.#byToken.delete(session.tokenHash);
  }
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
