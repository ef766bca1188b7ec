/**
 * The API key `wandb login` saves: a `machine <host> login user password <key>` entry in
 * `~/.netrc` (or the file `NETRC` names), the same file curl and git read.
 *
 * @module
 */

import { join } from "node:path";

/**
 * The password of `host`'s entry in netrc `text` (tokens split on whitespace; `default`
 * matches any host; `#` starts a comment), or null when there is none.
 *
 * @example
 * netrcPassword("machine api.wandb.ai\n  login user\n  password abc", "api.wandb.ai"); // "abc"
 */
export function netrcPassword(text: string, host: string): string | null {
  const tokens = text.split("\n").map((l) => l.replace(/(^|\s)#.*$/, "")).join(" ")
    .split(/\s+/).filter(Boolean);
  let current: string | null = null;
  let fallback: string | null = null;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t === "machine") current = tokens[++i] ?? null;
    else if (t === "default") current = "";
    else if (t === "password") {
      const value = tokens[++i] ?? null;
      if (current === host) return value;
      if (current === "") fallback ??= value;
    } else if (t === "login" || t === "account") i++;
  }
  return fallback;
}

/**
 * The netrc file's text: `NETRC`, else `$HOME/.netrc`; null when it does not exist.
 */
export function readNetrc(env: Record<string, string | undefined>): string | null {
  const path = env.NETRC ?? (env.HOME ? join(env.HOME, ".netrc") : null);
  if (!path) return null;
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) return null;
    throw e;
  }
}
