/**
 * Finding a session by its conversation (`proxy.session_binding: history`): each open session is
 * indexed by the hash of the conversation a request must extend to continue it (its previous
 * request, possibly less OpenClaw's trailing context, then the proxy's answer), so that a request
 * finds its session in one hash lookup per prefix length.
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";
import { extension, MAX_DROPPED, prefixHashes } from "./matching.ts";
import type { AgentSession } from "./session_types.ts";

/** Open sessions by conversation hash. */
export class HistoryIndex {
  /** History hash → sessions whose conversation (previous request + answer) hashes so. */
  readonly #index = new Map<string, Set<AgentSession>>();

  /** The indexed session with this label whose conversation `messages` extend exactly. */
  find(messages: Message[], label: string | null): AgentSession | undefined {
    const hashes = prefixHashes(messages);
    for (let k = messages.length; k >= 1; k--) {
      const candidates = this.#index.get(hashes[k]);
      if (!candidates) continue;
      for (const s of candidates) {
        if (s.label !== label) continue;
        const ext = s.last ? extension(s.last, messages) : null;
        if (ext && ext.prefix === k) return s;
      }
    }
    return undefined;
  }

  /** Indexes a session under its last turn's conversation (with each droppable tail left out). */
  add(session: AgentSession): void {
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

  /** Takes a session out of the index (its keys are kept on it). */
  remove(session: AgentSession): void {
    for (const key of session.keys) {
      const set = this.#index.get(key);
      set?.delete(session);
      if (set?.size === 0) this.#index.delete(key);
    }
    session.keys = [];
  }
}
