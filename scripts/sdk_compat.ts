/**
 * `deno task compat:sdk [model]`: starts the local backend in-process on a free port and runs the
 * official Tinker Python SDK (0.25.0) against it (`tests/compat/sdk_flow.py`). The flow prints one
 * `PASS`/`FAIL`/`SKIP` line per step; this task exits with the flow's exit code.
 *
 * The SDK is not on this machine by default and PyPI is unreachable: see tests/compat/README.md
 * for the setup, then point `TINKER_SDK_PYTHONPATH` at the SDK's `src` folder and its
 * dependencies. `PYTHON` picks the interpreter (default `python3`, which needs pydantic 2).
 */

import { startLocalServer } from "../lib/local/server/mod.ts";
import { helpText, wantsHelp } from "../lib/cli/args.ts";
import { startRecorder } from "../lib/http/mod.ts";
import { requestShape, type Shape } from "../lib/protocol/mod.ts";

const CLI = {
  run: "deno task compat:sdk",
  about: "Runs the official Tinker Python SDK's flow (tests/compat/sdk_flow.py) against the " +
    "local backend started in-process, one PASS/FAIL/SKIP line per step; exits non-zero on a " +
    "failure.",
  usage: `usage: TINKER_SDK_PYTHONPATH=SDK_SRC:DEPS deno task compat:sdk [model] [--record FILE]
  model: default $SDK_FLOW_MODEL or local/tiny; PYTHON picks the interpreter (default python3).
  --record FILE writes the shape of every request the SDK sent (keys, kinds of values, type
  tags) to FILE, as tests/compat/fixtures/sdk_requests.json holds them.
  Set up the SDK as tests/compat/README.md says.`,
};
if (wantsHelp(Deno.args)) {
  console.log(helpText(CLI));
  Deno.exit(0);
}

const SETUP_HINT = "set TINKER_SDK_PYTHONPATH to the Tinker SDK's src folder and its " +
  "dependencies, as tests/compat/README.md says";

const pythonPath = Deno.env.get("TINKER_SDK_PYTHONPATH");
if (!pythonPath) {
  console.error(`error: TINKER_SDK_PYTHONPATH is not set: ${SETUP_HINT}`);
  Deno.exit(2);
}
const python = Deno.env.get("PYTHON") ?? "python3";
const recordAt = Deno.args.indexOf("--record");
const recordFile = recordAt < 0 ? null : Deno.args[recordAt + 1];
if (recordFile === undefined) {
  console.error(`error: --record needs a file\n(see ${CLI.run} --help)`);
  Deno.exit(2);
}
const positional = Deno.args.filter((_, i) =>
  recordAt < 0 || (i !== recordAt && i !== recordAt + 1)
);
const model = positional[0] ?? Deno.env.get("SDK_FLOW_MODEL") ?? "local/tiny";
const flow = new URL("../tests/compat/sdk_flow.py", import.meta.url).pathname;

// Fail fast, before loading the engine, if the SDK cannot be imported with this path.
const probe = await new Deno.Command(python, {
  args: ["-c", "import tinker; print(tinker.__version__)"],
  env: { PYTHONPATH: pythonPath },
  stdout: "piped",
  stderr: "piped",
}).output().catch((e) => {
  console.error(`error: cannot run ${python}: ${e.message}`);
  Deno.exit(2);
});
if (!probe.success) {
  const why = new TextDecoder().decode(probe.stderr).trim().split("\n").at(-1);
  console.error(
    `error: \`${python} -c "import tinker"\` failed with PYTHONPATH=${pythonPath} (${why}): ` +
      SETUP_HINT,
  );
  Deno.exit(2);
}
const sdkVersion = new TextDecoder().decode(probe.stdout).trim();

const dataDir = await Deno.makeTempDir({ prefix: "tinkerbench-compat-" });
const server = await startLocalServer({ dataDir });
// Every distinct request shape per route, in the order first seen.
const shapes = new Map<string, Shape[]>();
const recorder = recordFile === null ? null : await startRecorder(server.url, async (req) => {
  const { route, body } = await requestShape(req);
  const seen = shapes.get(route) ?? [];
  if (!seen.some((s) => JSON.stringify(s) === JSON.stringify(body))) seen.push(body);
  shapes.set(route, seen);
});
let code = 1;
try {
  console.log(
    `local backend on ${server.url}; Tinker SDK ${sdkVersion}; running the flow on ${model}`,
  );
  const child = new Deno.Command(python, {
    args: [flow, model],
    env: {
      PYTHONPATH: pythonPath,
      TINKER_BASE_URL: recorder?.url ?? server.url,
      TINKER_API_KEY: "tml-local",
      TINKER_TELEMETRY: "0",
      PYTHONUNBUFFERED: "1",
    },
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  code = (await child.status).code;
  if (recordFile !== null) {
    const requests = Object.fromEntries([...shapes].sort(([a], [b]) => a.localeCompare(b)));
    await Deno.writeTextFile(
      recordFile,
      JSON.stringify({ sdk_version: sdkVersion, model, requests }, null, 2) + "\n",
    );
    console.log(`recorded ${shapes.size} routes' request shapes in ${recordFile}`);
  }
} finally {
  await recorder?.close();
  await server.close();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
Deno.exit(code);
