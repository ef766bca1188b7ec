/**
 * Errors of the local backend that are the caller's fault. The server turns them into a 4xx
 * (or a future failing with category "user") with the message as is, so messages must say
 * what was wrong and what is allowed, in the wire's own field names.
 *
 * @module
 */

import { HttpError } from "../http/errors.ts";

/**
 * Bad input from the client: wrong tensor lengths, token ids out of range, unknown keys, an
 * unknown model. `status` is the HTTP status the server answers with.
 *
 * @example
 * throw new UserInputError("data[0].loss_fn_inputs.weights has 3 elements, expected 4");
 */
export class UserInputError extends HttpError {
  override name = "UserInputError";
  constructor(message: string, override readonly status: 400 | 404 | 409 | 413 | 415 | 422 = 400) {
    super(status, message);
  }
}
