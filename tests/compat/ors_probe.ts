/**
 * The probe tool environment (echo, slow, boom, secrets, finish) as `probe-compat`, for the
 * reference Python client's check: `deno task envs serve --env-module tests/compat/ors_probe.ts`.
 */

import { registerToolEnvironment } from "../../lib/envs/registry.ts";
import { probeEnvironment } from "../openreward/fixtures.ts";

registerToolEnvironment("compat:Probe-v0", { ...probeEnvironment(), name: "probe-compat" });
