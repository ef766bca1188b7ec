/** A configuration mistake, in one line naming the source and key it concerns. */
export class ConfigError extends Error {
  /** The error's name, for logs. */
  override name = "ConfigError";
}
