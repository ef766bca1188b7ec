/**
 * Client sessions of the local backend: what each owns (training models, sampling sessions)
 * and when it was last seen, so that a session whose client went away can be expired.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";

/** One client session. */
export interface ClientSession {
  id: string;
  tags: string[];
  userMetadata: Record<string, string>;
  /** When a request last named the session (ms since the epoch). */
  lastSeen: number;
  /** Ids of its training models. */
  models: Set<string>;
  /** Ids of its sampling sessions. */
  samplingSessions: Set<string>;
}

/**
 * The open sessions. Looking a session up by a request keeps it alive.
 *
 * @example
 * const sessions = new ClientSessions();
 * const s = sessions.create([], {});
 * sessions.get(s.id).models.add(`${s.id}:train:0`);
 */
export class ClientSessions {
  readonly #sessions = new Map<string, ClientSession>();

  /** Opens a session. */
  create(tags: string[], userMetadata: Record<string, string>): ClientSession {
    const session: ClientSession = {
      id: crypto.randomUUID(),
      tags,
      userMetadata,
      lastSeen: Date.now(),
      models: new Set(),
      samplingSessions: new Set(),
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The session `id`, marked as seen; an unknown id is a 404. */
  get(id: string): ClientSession {
    const s = this.touch(id);
    if (!s) {
      throw new UserInputError(
        `unknown session_id ${JSON.stringify(id)}; create a session first`,
        404,
      );
    }
    return s;
  }

  /** Marks the session `id` as seen, if it is still open. */
  touch(id: string): ClientSession | undefined {
    const s = this.#sessions.get(id);
    if (s) s.lastSeen = Date.now();
    return s;
  }

  /** The session `id` without marking it as seen (for bookkeeping, not requests). */
  peek(id: string): ClientSession | undefined {
    return this.#sessions.get(id);
  }

  /** Ids of the open sessions, oldest first. */
  ids(): string[] {
    return [...this.#sessions.keys()];
  }

  /** Closes and returns the sessions not seen since `cutoff` (ms since the epoch). */
  expire(cutoff: number): ClientSession[] {
    const stale = [...this.#sessions.values()].filter((s) => s.lastSeen < cutoff);
    for (const s of stale) this.#sessions.delete(s.id);
    return stale;
  }
}
