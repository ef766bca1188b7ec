/**
 * Opt-in credentials for the local server, shaped like the hosted service's JWT exchange
 * (`pjwt_auth_enabled`): clients trade the API key for a short-lived JWT at `auth/token` and
 * send that JWT as `X-API-Key`. It exists so clients (ours and the SDK) can be tested against
 * expiring credentials; by default the local server accepts any key.
 *
 * @module
 */

import type { Context } from "hono";
import { z } from "zod";
import { sameSecret } from "../../http/mod.ts";

/** Options of the local server's auth. */
export const LocalAuthOptionsSchema: z.ZodObject<
  { apiKey: z.ZodString; jwtTtlSeconds: z.ZodDefault<z.ZodNumber> },
  z.core.$strip
> = z.object({
  /** The one API key the server accepts (to exchange for JWTs). */
  apiKey: z.string().min(1),
  /** Lifetime of an issued JWT (default 1 h). */
  jwtTtlSeconds: z.number().positive().default(3600),
});

/** What `startLocalServer({ auth })` takes. */
export type LocalAuthOptions = z.input<typeof LocalAuthOptionsSchema>;

/** Paths that take the API key itself; everything else (but healthz) wants a JWT. */
const API_KEY_PATHS = new Set(["/api/v1/client/config", "/api/v1/auth/token"]);
const OPEN_PATHS = new Set(["/api/v1/healthz"]);

const enc = new TextEncoder();

function b64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
}

function fromB64url(s: string): Uint8Array<ArrayBuffer> {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "=".repeat((4 - b64.length % 4) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** Issues and checks HS256 JWTs signed with a secret drawn when the server starts. */
export class LocalAuth {
  /** The API key clients must send. */
  readonly apiKey: string;
  /** Lifetime of the JWTs it issues, in seconds. */
  readonly jwtTtlSeconds: number;
  /** JWTs issued so far (tests watch refreshes with it). */
  issued = 0;
  readonly #key: Promise<CryptoKey>;

  /** Credential checks with `opts` (the key, the JWT lifetime). */
  constructor(opts: LocalAuthOptions) {
    const o = LocalAuthOptionsSchema.parse(opts);
    this.apiKey = o.apiKey;
    this.jwtTtlSeconds = o.jwtTtlSeconds;
    this.#key = crypto.subtle.importKey(
      "raw",
      crypto.getRandomValues(new Uint8Array(32)),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
  }

  /** A new JWT valid for `jwtTtlSeconds` (exp may be fractional, as RFC 7519 allows). */
  async issue(): Promise<{ jwt: string; exp: number }> {
    const now = Date.now() / 1000;
    const exp = now + this.jwtTtlSeconds;
    const head = b64url(enc.encode(JSON.stringify({ alg: "HS256", typ: "JWT" })));
    const body = b64url(
      enc.encode(
        JSON.stringify({ sub: "local", iat: Math.floor(now), exp, jti: crypto.randomUUID() }),
      ),
    );
    const sig = await crypto.subtle.sign("HMAC", await this.#key, enc.encode(`${head}.${body}`));
    this.issued++;
    return { jwt: `${head}.${body}.${b64url(new Uint8Array(sig))}`, exp };
  }

  /** Why a JWT is refused, or null when it is good. */
  async checkJwt(token: string): Promise<string | null> {
    const parts = token.split(".");
    if (parts.length !== 3) return "invalid credential";
    let ok = false;
    try {
      ok = await crypto.subtle.verify(
        "HMAC",
        await this.#key,
        fromB64url(parts[2]),
        enc.encode(`${parts[0]}.${parts[1]}`),
      );
    } catch {
      ok = false;
    }
    if (!ok) return "invalid JWT (bad signature)";
    const payload = JSON.parse(new TextDecoder().decode(fromB64url(parts[1])));
    if (typeof payload?.exp !== "number" || Date.now() / 1000 >= payload.exp) {
      return "JWT expired: exchange the API key at /api/v1/auth/token again";
    }
    return null;
  }

  #isApiKey(key: string): boolean {
    return sameSecret(key, this.apiKey);
  }

  /** Hono middleware: 401 `{"detail": …}` for a missing, wrong or expired credential. */
  middleware(): (c: Context, next: () => Promise<void>) => Promise<Response | void> {
    return async (c: Context, next: () => Promise<void>) => {
      const path = new URL(c.req.url).pathname;
      if (OPEN_PATHS.has(path)) return await next();
      const key = c.req.header("x-api-key");
      if (!key) return c.json({ detail: "missing X-API-Key header" }, 401);
      if (API_KEY_PATHS.has(path) && this.#isApiKey(key)) return await next();
      if (!key.startsWith("eyJ")) {
        return c.json(
          {
            detail: this.#isApiKey(key)
              ? "this server takes a JWT from POST /api/v1/auth/token as X-API-Key"
              : "invalid API key",
          },
          401,
        );
      }
      const why = await this.checkJwt(key);
      if (why) return c.json({ detail: why }, 401);
      await next();
    };
  }
}
