/**
 * Run by `openai_test.ts` in a process of its own, with pi-ai (OpenClaw's client) from that
 * test's own install (`installTestDeps("pi-ai")`, tests/deps.ts): pi-ai and the 80 packages it
 * brings (every provider's SDK) are not the project's dependencies. Streams each request with
 * pi-ai's `stream` against the model given and prints the assembled results as JSON.
 *
 * usage: deno run -A --config CONFIG pi_ai_stream.ts MODEL_JSON REQUESTS_JSON
 * where REQUESTS_JSON is `[{ context, options }, ...]`, as `stream(model, context, options)`.
 */

/** The part of pi-ai this script calls. */
interface PiAi {
  stream(model: unknown, context: unknown, options: unknown): { result(): Promise<unknown> };
}

// A specifier in a variable: the project's type check does not resolve a package it lacks.
const SPECIFIER = "@mariozechner/pi-ai";
const { stream } = (await import(SPECIFIER)) as PiAi;

const [modelJson, requestsJson] = Deno.args;
const model = JSON.parse(modelJson);
const results = [];
for (const { context, options } of JSON.parse(requestsJson)) {
  results.push(await stream(model, context, options).result());
}
console.log(JSON.stringify(results));
Deno.exit(0);
