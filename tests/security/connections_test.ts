/**
 * Slow and idle connections against every server process: headers sent slowly are cut after
 * the header timeout (408), idle keep-alive connections after the idle timeout, and one
 * connection past the cap is a 429; the server still answers afterwards. The limits are
 * lowered through the environment (TINKERBENCH_HTTP_*) so the test takes seconds.
 */

import { assert } from "../assert.ts";
import { openConnections, readUntilClosed, send, withProcess } from "./harness.ts";

const LIMITS = {
  TINKERBENCH_HTTP_HEADER_TIMEOUT_MS: "1000",
  TINKERBENCH_HTTP_IDLE_TIMEOUT_MS: "1500",
  TINKERBENCH_HTTP_MAX_CONNECTIONS: "12",
  TINKER_API_KEY: "",
};

/** Each server as a user starts it, and a path it answers 200 on. */
const SERVERS: Array<
  { name: string; script: string; args: (dir: string) => string[]; health: string }
> = [
  {
    name: "local backend (deno task serve)",
    script: "serve",
    args: (dir) => ["--port", "0", "--data-dir", dir],
    health: "/api/v1/healthz",
  },
  {
    name: "run API (deno task runs)",
    script: "runs",
    args: (dir) => ["--port", "0", "--data-dir", dir, "--no-auth"],
    health: "/health",
  },
  {
    name: "ORS server (deno task envs serve)",
    script: "envs",
    args: () => ["serve", "--port", "0", "--env", "guessthenumber-v0-easy"],
    health: "/health",
  },
  {
    name: "proxy (deno task proxy)",
    script: "proxy",
    args: (dir) => [
      "--proxy-host",
      "127.0.0.1",
      "--proxy-port",
      "0",
      "--model-name",
      "local/tiny",
      "--record-dir",
      dir,
    ],
    health: "/healthz",
  },
];

for (const server of SERVERS) {
  Deno.test(`security/connections: ${server.name} cuts slow headers (408) and idle connections, and caps connections (429)`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "tb-sec-conn-" });
    await withProcess(server.script, server.args(dir), async (p) => {
      const url = new URL(p.listening).origin;
      // Slow headers: a header line every 300 ms, never the blank line that ends them.
      const slow = await openConnections(
        url,
        5,
        `GET ${server.health} HTTP/1.1\r\nHost: 127.0.0.1\r\n`,
      );
      const drip = setInterval(() => {
        for (const c of slow) c.write(new TextEncoder().encode("X-Slow: 1\r\n")).catch(() => {});
      }, 300);
      // The 408 names the limit that cut it: the lowered one, not the 10 s default. (No wall-clock
      // bound: under load the cut comes late, and that is not what is tested.)
      const answers = await Promise.all(slow.map((c) => readUntilClosed(c, 30_000)));
      clearInterval(drip);
      for (const a of answers) {
        assert.ok(a !== null, "a slow-headers connection was still open after 30 s");
        assert.match(a, /^HTTP\/1\.1 408 /);
        assert.match(a, /request headers not complete within 1000 ms/);
      }

      // Idle: one whole request, its answer, then silence.
      const [idle] = await openConnections(
        url,
        1,
        `GET ${server.health} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
      );
      const t1 = performance.now();
      const idleAnswer = await readUntilClosed(idle, 30_000);
      assert.ok(idleAnswer !== null, "an idle connection was still open after 30 s");
      assert.match(idleAnswer, /^HTTP\/1\.1 200 /);
      assert.ok(performance.now() - t1 >= 1000, "closed before it was idle");

      // The cap: 12 silent connections are held, the 13th is refused at once.
      const held = await openConnections(url, 12);
      const [extra] = await openConnections(url, 1);
      // Held past the cap, it would get no answer and be closed when idle (1.5 s here).
      const refused = await readUntilClosed(extra, 30_000);
      assert.ok(refused !== null, "the connection past the cap was held");
      assert.match(refused, /^HTTP\/1\.1 429 /);
      assert.match(refused, /too many connections \(at most 12 at once\)/);
      for (const c of held) c.close();

      // And it still serves.
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await send(url + server.health)).status, 200);
    }, { env: LIMITS, dirs: [dir] });
  });
}
