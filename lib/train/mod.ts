/**
 * The top of the library: {@link train}, one RL run from its config (environments, a mix or the
 * proxy's sessions), and {@link stopOnSignals}, Ctrl-C and SIGTERM as a stop that saves.
 *
 * @module
 */

export * from "./train.ts";
export * from "./signals.ts";
export * from "./args.ts";
