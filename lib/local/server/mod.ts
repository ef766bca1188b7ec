/**
 * The embedded local backend's HTTP server: {@link startLocalServer} serves the Tinker protocol
 * over a `LocalBackend` on this machine.
 *
 * @example
 * const server = await startLocalServer({ dataDir: await Deno.makeTempDir() });
 * // … point a ServiceClient at server.url …
 * await server.close();
 *
 * @module
 */

export {
  defaultDataDir,
  type LocalServer,
  type LocalServerOptions,
  startLocalServer,
} from "./serve.ts";
export { type AppOptions, CLIENT_CONFIG, createApp } from "./app.ts";
