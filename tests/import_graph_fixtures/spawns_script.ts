/**
 * A fixture of tests/architecture_test.ts: a module that names a script by a path string,
 * as lib/runs/process.ts once spawned scripts/train.ts; the import graph must see the edge.
 *
 * @module
 */

/** The script this module would spawn. */
export const SCRIPT = new URL("../../scripts/train.ts", import.meta.url);
