/**
 * Errors of the ORS client, one class per thing a caller handles differently; each message is
 * one line that names the environment.
 *
 * @module
 */

/** A failed ORS request (the server's `detail` in the message). */
export class OrsError extends Error {
  override name = "OrsError";
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}

/**
 * HTTP 429: the environment is at capacity, still after backing off. A training run cannot go on
 * without its environment, so this is meant to stop it with the message.
 */
export class OrsCapacityError extends OrsError {
  override name = "OrsCapacityError";
}

/** HTTP 404 for an environment (or hosted deployment) that does not exist. */
export class OrsNotFoundError extends OrsError {
  override name = "OrsNotFoundError";
}

/** The session is gone: HTTP 410, or its keep-alive pings failed. */
export class OrsSessionLostError extends OrsError {
  override name = "OrsSessionLostError";
}
