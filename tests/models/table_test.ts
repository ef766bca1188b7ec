import { assert } from "../assert.ts";
import { defaultLearningRate, modelInfo, MODELS } from "../../lib/models/mod.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";

/** What this machine gives each lineup name: a renderer over its tokenizer, or one line why not. */
const UNAVAILABLE: Record<string, RegExp> = {
  "Qwen/Qwen3.5-": /^no renderer for Qwen\/Qwen3\.5-[^:]+: Qwen3\.5's chat template could not/,
  "deepseek-ai/DeepSeek-V3.1":
    /^no tokenizer files for deepseek-ai\/DeepSeek-V3\.1(-Base)? \(none found\): run `deno task models fetch/,
  "moonshotai/Kimi-K2":
    /^no tokenizer files for moonshotai\/Kimi-K2[^ ]* \(Kimi's tokenizer is a tiktoken model/,
};

Deno.test("model table: every lineup name has a renderer and a tokenizer, or one clear line", async () => {
  // An empty cache, so the answer is what a fresh machine (offline) gives.
  const cache = await Deno.makeTempDir();
  Deno.env.set("TINKERBENCH_HF_CACHE", cache);
  Deno.env.set("HF_HOME", cache);
  try {
    for (const m of MODELS) {
      const why = Object.entries(UNAVAILABLE).find(([prefix]) => m.name.startsWith(prefix));
      if (why) {
        const err = (() => {
          try {
            getRenderer(m.name);
          } catch (e) {
            return e as Error;
          }
        })();
        assert.ok(err, `${m.name} should not render here`);
        assert.match(err.message, why[1], m.name);
        assert.ok(!err.message.includes("\n"), m.name);
        continue;
      }
      const r = getRenderer(m.name);
      const conv = [{ role: "user" as const, content: "Hi" }, {
        role: "assistant" as const,
        content: "Hello there.",
      }];
      const ex = r.buildSupervisedExample(conv);
      const prompt = r.buildGenerationPrompt(conv.slice(0, 1));
      assert.deepEqual(ex.tokens.slice(0, prompt.length), prompt, m.name);
      const parsed = r.parseResponse(ex.tokens.slice(prompt.length));
      assert.equal(parsed.ok, true, m.name);
      assert.equal(parsed.message.content, "Hello there.", m.name);
      for (const id of r.stopSequences()) assert.ok(id < r.tokenizer.vocabSize, m.name);
      assert.ok(m.contextLength >= 32768, m.name);
    }
  } finally {
    Deno.env.delete("TINKERBENCH_HF_CACHE");
    Deno.env.delete("HF_HOME");
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("model table: the seeds' default and the cookbook's learning rates", () => {
  const seed = modelInfo("Qwen/Qwen3-4B-Instruct-2507")!;
  assert.equal(seed.renderer, "qwen3_instruct");
  assert.equal(seed.contextLength, 262144);
  assert.equal(defaultLearningRate("Qwen/Qwen3-4B-Instruct-2507"), 1e-3);
  assert.equal(defaultLearningRate("openai/gpt-oss-20b"), 1e-4);
  assert.equal(defaultLearningRate("meta-llama/Llama-3.3-70B-Instruct"), 3e-4);
  assert.throws(() => defaultLearningRate("Qwen/Qwen3-0.6B"), /no calibrated learning rate/);
  assert.equal(new Set(MODELS.map((m) => m.name)).size, MODELS.length);
  assert.ok(MODELS.filter((m) => m.base).every((m) => m.renderer === "role_colon"));
});

Deno.test("getRenderer: --renderer overrides the table; unknown names say what is known", () => {
  const r = getRenderer("meta-llama/Llama-3.1-8B", { renderer: "llama3" });
  assert.equal(r.constructor.name, "Llama3Renderer");
  assert.throws(
    () => getRenderer("Qwen/Qwen3-8B", { renderer: "qwen9" }),
    /^Error: unknown renderer "qwen9": known are qwen3, .*role_colon/,
  );
  assert.throws(() => getRenderer("acme/unknown"), /not in the model table.*--renderer NAME/);
});
