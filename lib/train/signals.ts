/**
 * Ctrl-C (SIGINT) and SIGTERM as a run's stop request: the first aborts the run's signal (the
 * run stops within seconds, saves a checkpoint of the steps it trained, none if it trained none,
 * and exits as interrupted), a second one quits at once. `timeout`, Docker and systemd stop a
 * process with SIGTERM, so it saves like Ctrl-C.
 *
 * @module
 */

/** The signals a run saves on. */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;

/** A stop request wired to the process's signals, until {@link StopOnSignals.dispose}. */
export interface StopOnSignals {
  /** Aborted at the first signal. */
  signal: AbortSignal;
  /** Stops listening for the signals. */
  dispose(): void;
}

/**
 * Aborts `signal` on the first SIGINT or SIGTERM (calling `onStop` with its name), and exits
 * with 128 + its number on a second one.
 *
 * @example
 * const stop = stopOnSignals((name) => console.error(`${name}: saving a checkpoint`));
 * try { await train(config, { signal: stop.signal }); } finally { stop.dispose(); }
 */
export function stopOnSignals(onStop?: (name: Deno.Signal) => void): StopOnSignals {
  const abort = new AbortController();
  const listeners = STOP_SIGNALS.map((name) => {
    const listener = () => {
      if (abort.signal.aborted) Deno.exit(name === "SIGINT" ? 130 : 143);
      onStop?.(name);
      abort.abort();
    };
    Deno.addSignalListener(name, listener);
    return [name, listener] as const;
  });
  return {
    signal: abort.signal,
    dispose: () => listeners.forEach(([name, l]) => Deno.removeSignalListener(name, l)),
  };
}
