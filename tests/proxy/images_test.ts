/**
 * Images through the proxy: an OpenAI `image_url` data URL in a side turn reaches the Tinker
 * wire as the official SDK's image chunk, where the vision format places it. The requests
 * travel a recording relay in front of the real local backend, which refuses the image in one
 * line (its models take text only); the proxy answers its client a 400 with that line.
 */

import OpenAI from "openai";
import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import { Policy } from "../../lib/proxy/policy.ts";
import { startProxy } from "../../lib/proxy/server.ts";
import { loadQwen3Tokenizer } from "../../lib/tokenizers/qwen3.ts";
import { ModelInputSchema } from "../../lib/protocol/types.ts";
import { withProxy } from "./harness.ts";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const LOOK: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{
  role: "user",
  content: [
    { type: "text", text: "What is this?" },
    { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
  ],
}];

/** A relay to `target` that keeps the JSON body of every sample request it passes on. */
function recordingRelay(
  target: string,
): { url: string; samples: unknown[]; close(): Promise<void> } {
  const samples: unknown[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const body = req.method === "GET" ? undefined : new Uint8Array(await req.arrayBuffer());
    if (body && url.pathname.endsWith("/asample")) {
      samples.push(JSON.parse(new TextDecoder().decode(body)));
    }
    const res = await fetch(new URL(url.pathname + url.search, target), {
      method: req.method,
      headers: req.headers,
      body,
    });
    return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    samples,
    close: () => server.shutdown(),
  };
}

async function refusal(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const e = await p.then(() => null, (e) => e);
  assert.ok(e instanceof OpenAI.APIError, `expected an API error, got ${e}`);
  return e;
}

Deno.test("proxy images: a side turn's image_url reaches the Tinker wire as an image chunk; the local backend refuses it in one line, a 400 for the client", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-proxy-images-" });
  const backend = await startLocalServer({ dataDir });
  const relay = recordingRelay(backend.url);
  const service = await ServiceClient.connect({ baseUrl: relay.url, apiKey: "tml-local" });
  const tokenizer = loadQwen3Tokenizer();
  const proxy = await startProxy({
    policy: new Policy(await service.createSamplingClient({ baseModel: "local/tiny" }), 0),
    renderer: getRenderer("Qwen/Qwen3.5-4B", { tokenizer }),
    modelName: "Qwen/Qwen3.5-4B",
    contextLength: 4096,
    hostname: "127.0.0.1",
    port: 0,
  });
  const client = new OpenAI({ baseURL: proxy.url, apiKey: "none", maxRetries: 0 });
  try {
    const side = await refusal(client.chat.completions.create(
      { model: "Qwen/Qwen3.5-4B", messages: LOOK, max_tokens: 4 },
      { headers: { "X-Turn-Type": "side" } },
    ));
    assert.equal(side.status, 400);
    assert.equal(side.code, "sampler_refused");
    assert.match(
      side.message,
      /prompt\.chunks\[1\] is an image chunk: the local backend's models take text only$/,
    );
    assert.equal(relay.samples.length, 1);
    const { prompt } = relay.samples[0] as { prompt: unknown };
    const { chunks } = ModelInputSchema.parse(prompt);
    assert.deepEqual(chunks.map((c) => c.type), ["encoded_text", "image", "encoded_text"]);
    assert.deepEqual(chunks[1], { type: "image", data: PNG, format: "png" });
    const text = chunks.map((c) => c.type === "encoded_text" ? tokenizer.decode(c.tokens) : "");
    assert.equal(text[0], "<|im_start|>user\nWhat is this?<|vision_start|>");
    assert.ok(text[2].startsWith("<|vision_end|><|im_end|>\n<|im_start|>assistant\n"), text[2]);

    // A main turn is trained, and its training data would hold the text alone: refused
    // before any sampling.
    const main = await refusal(
      client.chat.completions.create({ model: "Qwen/Qwen3.5-4B", messages: LOOK, max_tokens: 4 }),
    );
    assert.equal(main.status, 400);
    assert.equal(main.code, "image_in_main_turn");
    assert.equal(relay.samples.length, 1);
  } finally {
    await proxy.close();
    service.close();
    await relay.close();
    await backend.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("proxy images: a model whose format takes no images answers an image with a 400 naming it", async () => {
  await withProxy(async ({ client }) => {
    const e = await refusal(client.chat.completions.create(
      { model: "local/tiny", messages: LOOK, max_tokens: 4 },
      { headers: { "X-Turn-Type": "side" } },
    ));
    assert.equal(e.status, 400);
    assert.equal(e.code, "image_not_supported");
    assert.match(e.message, /takes no images/);
  });
});
