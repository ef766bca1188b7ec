import { assert } from "../assert.ts";
import { startViewerServer } from "../../lib/viewer/mod.ts";
import { fixtureRun, writeStep } from "./fixture.ts";

Deno.test("viewer server: the page, its assets, and the steps after N as they land", async () => {
  const dir = await fixtureRun(1);
  const server = await startViewerServer({ dirs: [dir], port: 0 });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await (await fetch(server.url)).text();
    assert.match(page, /<script src="assets\/viewer\.js">/);
    assert.match(page, /"live":true/);
    for (const asset of ["assets/plotly.min.js", "assets/viewer.js", "assets/tinkerbench.js"]) {
      const res = await fetch(server.url + asset);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /javascript/);
      await res.body?.cancel();
    }
    const first = await (await fetch(`${server.url}data.json?after=1`)).json();
    assert.equal(first.runs[0].episodes.length, 0);
    await writeStep(dir, 2);
    const next = await (await fetch(`${server.url}data.json?after=1`)).json();
    assert.equal(next.runs[0].steps, 2);
    assert.deepEqual(next.runs[0].episodes.map((e: { step: number }) => e.step), [2, 2, 2, 2]);
    const bad = await fetch(`${server.url}data.json?after=x`);
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /after/);
  } finally {
    await server.close();
  }
});

Deno.test("viewer server: a taken port is one line naming the flag (lib/http)", async () => {
  const dir = await fixtureRun(1);
  const server = await startViewerServer({ dirs: [dir], port: 0 });
  try {
    const err = await startViewerServer({
      dirs: [dir],
      port: server.port,
      portFlag: "--viewer-port",
    })
      .then(() => null, (e: Error) => e);
    assert.equal(err?.name, "PortInUseError");
    assert.match(err!.message, /already in use: .* pick another port with --viewer-port$/);
  } finally {
    await server.close();
  }
});
