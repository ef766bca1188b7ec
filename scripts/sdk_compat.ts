/**
 * `deno task compat:sdk`: starts the local backend in-process and runs the official Tinker
 * Python SDK against it (`tests/compat/sdk_flow.py`). The SDK is not on this machine by default
 * and PyPI may be unreachable: see tests/compat/README.md for the setup, then point
 * `TINKER_SDK_PYTHONPATH` at the SDK's `src` folder and its dependencies.
 */

import { startLocalServer } from "../lib/local/server/mod.ts";

const pythonPath = Deno.env.get("TINKER_SDK_PYTHONPATH");
if (!pythonPath) {
  console.error(
    "error: TINKER_SDK_PYTHONPATH is not set.\n" +
      "Set it to the Tinker SDK's src folder and its dependencies, e.g.\n" +
      "  TINKER_SDK_PYTHONPATH=/work/sdk/tinker-0.25.0/src:/work/sdk/pydeps deno task compat:sdk\n" +
      "See tests/compat/README.md.",
  );
  Deno.exit(2);
}
const model = Deno.args[0] ?? "local/tiny";
const dataDir = await Deno.makeTempDir({ prefix: "tinkerbench-compat-" });
const server = await startLocalServer({ dataDir });
console.log(`local backend on ${server.url}; running the Tinker SDK flow on ${model}`);
const child = new Deno.Command(Deno.env.get("PYTHON") ?? "python3", {
  args: [new URL("../tests/compat/sdk_flow.py", import.meta.url).pathname, model],
  env: {
    PYTHONPATH: pythonPath,
    TINKER_BASE_URL: server.url,
    TINKER_API_KEY: "tml-local",
    TINKER_TELEMETRY: "0",
  },
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
const { code } = await child.status;
await server.close();
await Deno.remove(dataDir, { recursive: true });
Deno.exit(code);
